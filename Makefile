# Two entry points: `make run` and `make test`. Both create .venv and install on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Where `make run` keeps the example knowledge base (created from kb_template/ if missing,
# with its indexes, so that the first question is answered in seconds).
KB     ?= example-kb

.PHONY: install run test lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@test -d "$(KB)/.git" || { $(BIN)/kbmem init "$(KB)" && $(BIN)/kbmem --kb "$(KB)" reindex; }
	$(BIN)/kbmem --kb "$(KB)" chat

test: $(STAMP)
	$(BIN)/ruff check kbmem tui tests
	$(BIN)/ruff format --check kbmem tui tests
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check --fix kbmem tui tests
	$(BIN)/ruff format kbmem tui tests

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# Two entry points: `make run` for users and `make test` for developers. Both create .venv and
# install on first use: `make run` the runtime dependencies only (all wheels on x86_64 Linux
# with Python 3.11-3.13: hnswlib comes as qhnswlib), `make test` the development extras on
# top (a separate stamp, so `make test` after `make run` installs only the extras).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
# Where `make run` keeps the example knowledge base (created from the packaged example if
# missing, with its indexes, so that the first question is answered in seconds).
KB     ?= example-kb

.PHONY: install install-dev run test lint typecheck clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	# The CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e .
	touch $(RUN_STAMP)

$(DEV_STAMP): $(RUN_STAMP)
	# Test tools, the type checker and the local LLM server (llama-cpp-python compiles).
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

install: $(RUN_STAMP)

install-dev: $(DEV_STAMP)

# The first run builds the example's indexes (a minute on two cores), with a progress bar.
run: $(RUN_STAMP)
	@test -d "$(KB)/.git" || { $(BIN)/kbmem init "$(KB)" && $(BIN)/kbmem --kb "$(KB)" reindex; }
	$(BIN)/kbmem --kb "$(KB)" chat

test: $(DEV_STAMP)
	$(BIN)/ruff check kbmem tui tests
	$(BIN)/ruff format --check kbmem tui tests
	$(BIN)/mypy
	$(BIN)/python -m pytest

typecheck: $(DEV_STAMP)
	$(BIN)/mypy

lint: $(DEV_STAMP)
	$(BIN)/ruff check --fix kbmem tui tests
	$(BIN)/ruff format kbmem tui tests

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache

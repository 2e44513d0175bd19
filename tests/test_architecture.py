"""The architecture contract: kbmem's layers import one way (store ← memorize ← index ←
research ← agent ← interfaces ← bench ← cli, over the foundation modules), and the core never
imports the terminal UI. The contract itself lives in pyproject.toml ([tool.importlinter]) and
is checked here with import-linter, on the real tree and on a copy broken on purpose."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
]


def lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    # Run in ``cwd`` with it first on the path, so the tree found there is the one analysed.
    return subprocess.run(
        [*LINT, "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(cwd), "PATH": "/usr/bin:/bin"},
    )


def test_the_layers_and_the_ui_boundary_hold() -> None:
    done = lint(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 2 kept, 0 broken." in done.stdout


def test_a_store_module_importing_the_researcher_breaks_the_contract(tmp_path: Path) -> None:
    for name in ("kbmem", "pyproject.toml"):
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, tmp_path / name)
    shutil.copytree(
        ROOT / "tui", tmp_path / "kbmem_tui", ignore=shutil.ignore_patterns("__pycache__")
    )
    pages = tmp_path / "kbmem" / "store" / "pages.py"
    pages.write_text(pages.read_text() + "\nfrom kbmem.research import toolkit  # noqa\n")
    done = lint(tmp_path)
    assert done.returncode != 0
    assert "kbmem.store.pages -> kbmem.research.toolkit" in done.stdout


def test_every_package_folder_is_installed() -> None:
    """pyproject lists its packages (two live outside kbmem/): a new folder must be added."""
    listed = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    )
    found = {
        ".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "kbmem").rglob("__init__.py")
    } | {
        "kbmem_tui" + "".join("." + part for part in p.parent.relative_to(ROOT / "tui").parts)
        for p in (ROOT / "tui").rglob("__init__.py")
    }
    assert found | {"kbmem.kb_template"} == listed

"""The headless core never imports Textual: ``kbmem`` and every one of its submodules import in
a fresh interpreter without pulling ``textual`` in; ``kbmem_tui`` (the tui/ folder) is the only
UI package."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Every module file under kbmem/ (namespace packages included; __main__ modules run a
# program when imported, so they are left out).
PROBE = """
import importlib, json, pathlib, sys
root = pathlib.Path("kbmem")
names = sorted(
    ".".join(path.with_suffix("").parts).removesuffix(".__init__")
    for path in root.rglob("*.py")
    if path.name != "__main__.py"
)
for name in names:
    importlib.import_module(name)
print(json.dumps({
    "modules": names,
    "ui": sorted(m for m in sys.modules if m.split(".")[0] in ("textual", "kbmem_tui")),
}))
"""


def test_core_imports_no_textual() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # The probe really walked the core, agent and benchmarks included ...
    assert {
        "kbmem.store.repository",
        "kbmem.research.researcher",
        "kbmem.agent.session",
        "kbmem.bench.tui",
        "kbmem.cli",
    } <= set(result["modules"])
    # ... and none of it brought in Textual or the TUI package.
    assert result["ui"] == []


def test_core_source_never_imports_the_ui() -> None:
    """No core module imports Textual at all; only the CLI may open the TUI, and only from
    inside a function (``kbmem chat``), never when the module is imported."""
    problems = []
    for path in sorted((ROOT / "kbmem").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_level = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                where = f"{path.relative_to(ROOT)}:{node.lineno}"
                if top == "textual":
                    problems.append(f"{where} imports {name}")
                elif top == "kbmem_tui" and (id(node) in module_level or path.parent.name != "cli"):
                    problems.append(f"{where} imports {name} outside a CLI command")
    assert problems == []

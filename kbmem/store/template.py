"""Where the example knowledge base (the repository's ``kb_template/``) is found.

An installed wheel carries it as package data, ``kbmem/kb_template``, read through
:mod:`importlib.resources`. An editable install from a source checkout has no copy inside the
package, so the checkout's own ``kb_template/`` beside ``kbmem/`` is used. Anything else is an
error that names what is missing: a knowledge base is never created from a partial template.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from kbmem.errors import StorageError

#: What a template must hold for ``kbmem init`` to create a usable knowledge base.
REQUIRED = ("kbmem.yaml", ".gitignore")


def template_dir() -> Path:
    """The example knowledge base's folder; :class:`StorageError` when none is complete."""
    packaged = Path(str(importlib.resources.files("kbmem") / "kb_template"))
    checkout = Path(__file__).resolve().parents[2] / "kb_template"
    for candidate in (packaged, checkout):
        if candidate.is_dir():
            check_template(candidate)
            return candidate
    raise StorageError(
        f"the example knowledge base is not installed: neither {packaged} nor {checkout} "
        "exists (reinstall kbmem, or pass a template folder)"
    )


def check_template(folder: Path) -> None:
    """Refuse a template that lacks the files a knowledge base needs."""
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    if missing:
        raise StorageError(
            f"the example knowledge base at {folder} is incomplete: missing {', '.join(missing)}"
        )

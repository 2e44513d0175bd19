"""The wheel as a user gets it: built from the source, installed (not editable) into a fresh
virtual environment, and run from another folder. It must carry the example knowledge base
(``kbmem init`` used to commit an empty tree from an installed wheel) and install no generic
top-level ``tui`` package.

Installing the dependencies into the fresh environment would take minutes, so it borrows the
site-packages of the environment running the tests, after its own: that folder is on
PYTHONPATH, where ``.pth`` files (and so an editable install's finder or path entry) are not
read, and the fresh environment's site-packages is put before it. The test checks that the
``kbmem`` which ran is the installed one."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import yaml
from helpers.kbgit import git

ROOT = Path(__file__).resolve().parent.parent
# What the wheel is built from (copied, so the build leaves nothing in the working tree).
SOURCES = ("pyproject.toml", "README.md", "kbmem", "tui", "kb_template")
PIP = (sys.executable, "-m", "pip", "--quiet")
QUESTION = "Which company was the first pilot customer for Ferrylog?"

pytestmark = pytest.mark.slow


def build_wheel(workdir: Path) -> Path:
    source = workdir / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=ignore)
        else:
            shutil.copy2(path, source / name)
    out = workdir / "dist"
    done = subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("kbmem-*.whl")
    return wheel


def make_venv(folder: Path, wheel: Path) -> tuple[Path, dict[str, str]]:
    """A fresh environment holding the wheel alone; its bin folder and the environment to run
    its commands with."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    done = subprocess.run(
        [*PIP, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    own = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dependencies = sysconfig.get_path("purelib")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "KBMEM_"))}
    env["PYTHONPATH"] = os.pathsep.join([own, dependencies])
    env["PATH"] = os.pathsep.join([str(folder / "bin"), env.get("PATH", "")])
    return folder / "bin", env


def test_the_wheel_carries_the_example_and_answers_from_another_folder(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path)
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("tui/")], "a generic top-level tui package"
    assert "kbmem_tui/app.py" in names
    assert "kbmem/kb_template/.gitignore" in names
    assert "kbmem/kb_template/kbmem.yaml" in names
    template = ROOT / "kb_template"
    shipped = sorted(p.relative_to(template).as_posix() for p in template.rglob("*") if p.is_file())
    assert [n for n in shipped if f"kbmem/kb_template/{n}" not in names] == []

    bin_dir, env = make_venv(tmp_path / "venv", wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def kbmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "kbmem"), *args],
            cwd=elsewhere,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    where = subprocess.run(
        [str(bin_dir / "python"), "-c", "import kbmem, kbmem_tui; print(kbmem.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(tmp_path / "venv"), where.stdout

    done = kbmem("init", "team-kb")
    assert done.returncode == 0, done.stderr
    assert "created knowledge base" in done.stdout
    kb = elsewhere / "team-kb"
    committed = git(kb, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert "kbmem.yaml" in committed and ".gitignore" in committed
    assert yaml.safe_load((kb / "kbmem.yaml").read_text())["research"]["engine"] == "offline"
    assert git(kb, "status", "--porcelain") == ""
    pages = kbmem("--kb", "team-kb", "pages")
    assert pages.returncode == 0, pages.stderr
    page_ids = [line.split("\t")[0] for line in pages.stdout.splitlines()]
    assert "2026-01-05-ferrylog-kickoff/1" in page_ids
    assert len(page_ids) >= 10

    asked = kbmem("--kb", "team-kb", "ask", "--json", QUESTION)
    assert asked.returncode == 0, asked.stderr
    briefing = json.loads(asked.stdout)
    cited = [e["pageId"] for e in briefing["evidence"]]
    assert "2026-01-05-ferrylog-kickoff/1" in cited, cited
    assert "Skerrick Island Ferries" in json.dumps(briefing)

    # Without its example, an installed kbmem refuses, names what is missing and creates
    # nothing (it used to print "created knowledge base" over an empty commit).
    (packaged,) = (tmp_path / "venv").glob("lib/python*/site-packages/kbmem/kb_template")
    shutil.rmtree(packaged)
    refused = kbmem("init", "second-kb")
    assert refused.returncode != 0
    assert "kb_template" in refused.stderr and "not installed" in refused.stderr
    assert "created" not in refused.stdout
    assert not (elsewhere / "second-kb").exists()

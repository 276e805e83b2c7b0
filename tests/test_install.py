"""Installing from a checkout as the README says: the man page and completions stay installed.

The README's first command installs safe-run (`pip install .`) and its second installs it again,
editable, for the tests (`pip install -e '.[test]'`). pip removes the first install's files when
it makes the second, and setuptools leaves data files out of editable installs by itself, so
setup.py adds them. These tests make both installs in a fresh virtual environment from a copy of
the project, and look for `man safe-run` and the completions under its `share/`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = [
    "share/man/man1/safe-run.1",
    "share/bash-completion/completions/safe-run",
    "share/zsh/site-functions/_safe-run",
    "share/fish/vendor_completions.d/safe-run.fish",
]


def project_copy(tmp_path: Path) -> Path:
    """The files a build reads, away from the checkout (a build writes build/ and *.egg-info)."""
    copy = tmp_path / "project"
    copy.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, copy / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("src", "scripts", "completions", "man"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    return copy


def pip(venv: Path, *args: str, cwd: Path) -> None:
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )
    if proc.returncode != 0:
        pytest.skip(f"pip could not build the project here (no package index?):\n{proc.stderr[-2000:]}")


@pytest.mark.slow
@pytest.mark.long
def test_the_readme_installs_in_order_leave_the_man_page_and_completions(tmp_path: Path) -> None:
    project = project_copy(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip(venv, ".", cwd=project)
    assert [p for p in SHARED if not (venv / p).is_file()] == [], "pip install . installs them"
    pip(venv, "-e", ".", cwd=project)
    assert [p for p in SHARED if not (venv / p).is_file()] == [], "and the editable install after it keeps them"
    man = shutil.which("man")
    if man is not None:
        found = subprocess.run([man, "-w", "safe-run"], env={"MANPATH": str(venv / "share" / "man"),
                               "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
        assert found.stdout.strip() == str(venv / "share" / "man" / "man1" / "safe-run.1")

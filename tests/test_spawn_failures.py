"""A shell that cannot be started is one precise line, and the forked child ran none of safe-run.

Between fork and exec the child only makes system calls; a failed step reaches the parent as
"cannot enter DIR: ..." or "cannot run SHELL: ...", and the run ends as an `error` with status
125 and nothing left behind.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SafeRun
from safe_run.engine.spawn import describe_failure

FAILURE = 125

# Loads every module of safe-run while still root (the interpreter may live where the user cannot
# read, such as /root/.pyenv), then becomes the user and runs the CLI as the user would.
AS_USER = """
import importlib, importlib.readers, os, pkgutil, sys
import safe_run
for module in pkgutil.walk_packages(safe_run.__path__, "safe_run."):
    if module.name != "safe_run.__main__":
        importlib.import_module(module.name)
uid = int(sys.argv[1])
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
from safe_run.cli.main import main
main(sys.argv[2:])
"""


def test_the_child_report_reads_as_one_line() -> None:
    assert describe_failure(b"chdir 13", "/bin/bash", "/srv/x") == "cannot enter /srv/x: permission denied"
    assert describe_failure(b"exec 8", "/bin/bash", "/srv/x") == "cannot run /bin/bash: exec format error"
    assert describe_failure(b"setup 0", "/bin/bash", "/srv/x") == (
        "cannot start /bin/bash: the terminal could not be set up"
    )
    assert describe_failure(b"garbled", "/bin/bash", "/") == "cannot start /bin/bash: the terminal could not be set up"


def test_a_shell_that_cannot_be_executed_is_named(safe_run: SafeRun, tmp_path: Path) -> None:
    shell = tmp_path / "garbage-shell"
    shell.write_bytes(b"\x7fELF not really")
    shell.chmod(0o755)
    outcome = safe_run("--shell", str(shell), "--format", "json", "--", "echo hi")
    result = outcome.json
    message = f"cannot run {shell}: exec format error"
    assert (result["status"], result["message"], outcome.returncode) == ("error", message, FAILURE)
    assert outcome.stderr == f"safe-run: {message}\n"
    assert safe_run.leftovers() == []


def unused_uid() -> int:
    """A uid no account has: a non-root identity that needs no user to be created or removed."""
    for uid in range(64000, 65000):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    pytest.skip("no unused uid between 64000 and 65000")


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def gone(uid: int, within: float) -> bool:
    """Whether every process of `uid` ends within the bound (a session's holder exits after answering)."""
    deadline = time.monotonic() + within
    while processes_of(uid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def user_place() -> Iterator[tuple[int, Path]]:
    """A uid and a directory it can use (HOME and TMPDIR inside), removed afterwards.

    Root can enter any directory, so a denied chdir needs a non-root caller: safe-run runs as a
    uid that no account has, set with setuid after start-up, which changes nothing on the machine.
    """
    if os.geteuid() != 0:
        pytest.skip("needs root to run safe-run as another uid")
    uid = unused_uid()
    base = Path(tempfile.mkdtemp(prefix="sr-denied-", dir="/tmp"))
    try:
        base.chmod(0o755)
        for name in ("home", "tmp"):
            (base / name).mkdir()
            os.chown(base / name, uid, uid)
        yield uid, base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("mode", [(), ("--yield-after", "5")], ids=["foreground", "session"])
@pytest.mark.slow
def test_a_directory_that_cannot_be_entered_is_named(user_place: tuple[int, Path], mode: tuple[str, ...]) -> None:
    uid, base = user_place
    closed = base / "closed"
    closed.mkdir(mode=0o744)  # readable, not searchable: the case from a real report
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(base / "home"), "TMPDIR": str(base / "tmp"),
           "LANG": "C.UTF-8", "TERM": "dumb"}
    proc = subprocess.run(
        [sys.executable, "-c", AS_USER, str(uid), "--shell", shutil.which("bash") or "/bin/bash",
         "--format", "json", *mode, "--cwd", str(closed), "--", "echo hi"],
        stdin=subprocess.DEVNULL, capture_output=True, env=env, cwd=base, timeout=60,
    )
    message = f"cannot enter {closed}: permission denied"
    result = json.loads(proc.stdout)
    assert (result["status"], result["message"], proc.returncode) == ("error", message, FAILURE)
    assert proc.stderr.decode() == f"safe-run: {message}\n"
    assert list((base / "tmp").iterdir()) == []
    assert gone(uid, within=5.0), "a process of the run was left"

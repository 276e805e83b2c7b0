"""The private directory of a safe-run that was killed is removed by the next run, and only that.

Liveness is an flock each run holds on its directory for the run's life: the kernel drops it when
the process dies, so a directory whose lock can be taken belongs to nobody alive.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import SafeRun
from safe_run.engine.workdir import HeldDirectory, sweep_leftovers

BOUND_S = 20.0


def private_dirs(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir() if p.name.startswith("safe-run-"))


def wait_for(predicate: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {BOUND_S} s"
        time.sleep(0.02)


def start(safe_run: SafeRun, command: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "safe_run", "--format", "json", "--timeout", str(BOUND_S), "--", command],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=safe_run.environment(),
    )


def test_the_next_run_sweeps_what_a_killed_run_left(safe_run: SafeRun) -> None:
    started = safe_run.tmpdir / "started"
    killed = start(safe_run, f"touch {started}; sleep {BOUND_S}")
    try:
        wait_for(started.exists, "the command started")
        assert len(private_dirs(safe_run.tmpdir)) == 1
    finally:
        os.kill(killed.pid, signal.SIGKILL)
        killed.communicate(timeout=BOUND_S)
    assert len(private_dirs(safe_run.tmpdir)) == 1, "SIGKILL leaves the directory behind"

    outcome = safe_run("--format", "json", "--", "echo next")
    assert outcome.json["output"] == "next\n"
    assert private_dirs(safe_run.tmpdir) == []


def test_a_live_run_keeps_its_directory_while_others_run(safe_run: SafeRun) -> None:
    started, go = safe_run.tmpdir / "started", safe_run.tmpdir / "go"
    first = start(safe_run, f"touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; echo first done")
    try:
        wait_for(started.exists, "the first command started")
        held = private_dirs(safe_run.tmpdir)
        assert safe_run("--format", "json", "--", "echo second").json["output"] == "second\n"
        assert private_dirs(safe_run.tmpdir) == held
        go.touch()
        stdout, _ = first.communicate(timeout=BOUND_S * 2)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert b'"output": "first done\\n"' in stdout
    assert private_dirs(safe_run.tmpdir) == []


def test_only_unlocked_directories_of_ours_are_swept(tmp_path: Path) -> None:
    dead = tmp_path / "safe-run-dead0000"
    dead.mkdir()
    (dead / "command").write_text("echo hi")
    alive = tmp_path / "safe-run-alive000"
    alive.mkdir()
    other_names = [tmp_path / "safe-run-notoursbecauselong", tmp_path / "safe-run", tmp_path / "my-safe-run-abcdefgh",
                   tmp_path / "safe-run-12345678"]  # the last: the sessions of a user whose uid has eight digits
    for path in other_names:
        path.mkdir()
    target = tmp_path / "target"
    target.mkdir()
    link = tmp_path / "safe-run-link0000"
    link.symlink_to(target)
    held = os.open(alive, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        sweep_leftovers(tmp_path)
    finally:
        os.close(held)
    assert not dead.exists()
    assert alive.exists() and target.exists() and link.is_symlink()
    assert all(path.exists() for path in other_names)


def test_a_directory_of_another_user_is_left_alone(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another uid")
    foreign = tmp_path / "safe-run-foreign0"
    foreign.mkdir()
    os.chown(foreign, 64999, 64999)
    sweep_leftovers(tmp_path)
    assert foreign.exists()


def test_a_run_directory_is_locked_for_its_life(tmp_path: Path) -> None:
    held = HeldDirectory.make(tmp_path)
    try:
        probe = os.open(held.path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(probe)
        sweep_leftovers(tmp_path)
        assert held.path.exists()
    finally:
        held.remove()
    assert list(tmp_path.iterdir()) == []
    held.remove()  # once gone, it stays gone

"""The fork server: holders forked from one imported copy of safe-run, real shells behind them, and
a new interpreter in its place when it is gone."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SafeRun, alive
from safe_run import calls
from safe_run.session.forkserver import ForkServer


@pytest.fixture
def api_env(safe_run: SafeRun, monkeypatch: pytest.MonkeyPatch) -> SafeRun:
    for name, value in safe_run.environment({"SHELL": "/bin/bash"}).items():
        monkeypatch.setenv(name, value)
    return safe_run


@pytest.fixture
def forks(api_env: SafeRun) -> Iterator[ForkServer]:
    server = ForkServer().open()
    try:
        yield server
    finally:
        server.close()


def fork_server_pid(server: ForkServer) -> int:
    process = server._process  # the one thing only the test needs to know: which process to kill
    assert process is not None
    return process.pid


def dead(pid: int) -> bool:
    """Whether the process has ended (a zombie has: only its exit status is left)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_session_and_a_named_shell_start_from_it(forks: ForkServer) -> None:
    result = calls.run(calls.request("echo forked; exit 3"), 30.0, launcher=forks)
    assert (result.status.value, result.exit_code, result.output) == ("completed", 3, "forked\n")
    first = calls.run_in_shell("fs", calls.request("cd /; X=kept"), None, launcher=forks)
    later = calls.run_in_shell("fs", calls.request("echo $PWD $X"), None, launcher=forks)
    try:
        assert first.status.value == "completed" and later.output == "/ kept\n"
    finally:
        calls.close_shell("fs")


def test_without_it_a_new_interpreter_starts_the_holder(forks: ForkServer) -> None:
    pid = fork_server_pid(forks)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not dead(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    result = calls.run(calls.request("echo still"), 30.0, launcher=forks)
    assert (result.status.value, result.output) == ("completed", "still\n")


def test_it_ends_when_its_caller_lets_it_go(api_env: SafeRun) -> None:
    server = ForkServer().open()
    pid = fork_server_pid(server)
    server.close()
    assert not alive(pid)

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
    result = calls.run_in_session(calls.request("echo forked; exit 3"), 30.0, forks)
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
    result = calls.run_in_session(calls.request("echo still"), 30.0, forks)
    assert (result.status.value, result.output) == ("completed", "still\n")


def test_it_ends_when_its_caller_lets_it_go(api_env: SafeRun) -> None:
    server = ForkServer().open()
    pid = fork_server_pid(server)
    server.close()
    assert not alive(pid)


def test_a_holder_takes_the_variables_and_directory_its_caller_has_when_it_asks(
    forks: ForkServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """The fork server was started with the caller's variables and directory of that moment; a
    holder it starts later, forked ahead or not, has those the caller has when it asks."""
    time.sleep(0.5)  # a holder is forked ahead by now, its shell started from the old ones
    monkeypatch.setenv("SET_LATER", "yes")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the holder forked ahead, then one forked as asked or ahead again
        result = calls.run_in_session(calls.request("echo ${SET_LATER-unset} $PWD"), 30.0, forks)
        assert (result.status.value, result.output) == ("completed", f"yes {tmp_path}\n")


def test_a_shell_asked_for_a_moment_after_the_server_started_is_ready_with_its_rc(
    forks: ForkServer, api_env: SafeRun,
) -> None:
    """The holder forked ahead has the shell a plain request needs started, rc files loaded:
    loaded before the request was made."""
    (api_env.home / ".bashrc").write_text("loaded_at=$(date +%s.%N)\nrc_fn() { echo fn; }\n")
    forks.close()
    server = ForkServer().open()  # started once the rc is there
    try:
        deadline = time.monotonic() + 20
        while not kept_shell_of(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # its rc loaded
        made = time.time()
        result = calls.run_in_shell("ahead", calls.request("echo $loaded_at; rc_fn"), None, launcher=server)
        lines = result.output.splitlines()
        assert float(lines[0]) < made and lines[1:] == ["fn"], result
    finally:
        calls.close_shell("ahead")
        server.close()


def kept_shell_of(server: ForkServer) -> list[int]:
    """The shell of the holder the fork server forked ahead."""
    return [shell for ahead in children(fork_server_pid(server)) for shell in children(ahead)]


def children(pid: int) -> list[int]:
    try:
        return [int(word) for word in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def test_the_shell_kept_for_the_next_request_starts_where_the_last_came_from(
    forks: ForkServer, api_env: SafeRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """A library caller or an MCP client that moved (its directory, its variables) is served by a
    shell started ahead where it is now, rc loaded, from its second request on."""
    (api_env.home / ".bashrc").write_text("loaded_at=$(date +%s.%N)\nloaded_in=$PWD\n")
    monkeypatch.setenv("SET_LATER", "yes")
    monkeypatch.chdir(tmp_path)
    first = calls.run_in_session(calls.request("echo $SET_LATER"), 30.0, forks)
    assert (first.status.value, first.output) == ("completed", "yes\n")
    time.sleep(1.0)  # the next holder is forked ahead, its shell started and its rc loaded
    made = time.time()
    result = calls.run_in_session(calls.request("echo $loaded_at $loaded_in $SET_LATER"), 30.0, forks)
    loaded_at, loaded_in, variable = result.output.split()
    assert float(loaded_at) < made and (loaded_in, variable) == (str(tmp_path), "yes"), result


def test_a_holder_takes_the_umask_its_caller_has_when_it_asks(forks: ForkServer) -> None:
    """As with its variables and directory: the umask of the moment, not the fork server's, and a
    shell kept ahead with another umask is not the one that runs the command."""
    time.sleep(0.5)  # a holder is forked ahead by now, its shell started with the old umask
    old = os.umask(0o027)
    try:
        for _ in range(2):  # the holder forked ahead, then one whose shell started with the new umask
            result = calls.run_in_session(calls.request("umask"), 30.0, forks)
            assert (result.status.value, result.output) == ("completed", "0027\n")
    finally:
        os.umask(old)

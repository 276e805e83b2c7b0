"""The fork server: holders forked from one imported copy of safe-run, real shells behind them, and
a new interpreter in its place when it is gone."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Collection, Iterator
from pathlib import Path

import pytest

from conftest import SafeRun, alive, children_of, cmdline, shells_of_holder_ahead
from safe_run import calls
from safe_run.session.forkserver import JOB_BYTES, ForkServer


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


def killed(pid: int) -> None:
    """SIGKILL to the process, and until it has ended (bounded)."""
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not dead(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_without_it_a_new_interpreter_starts_the_holder(forks: ForkServer) -> None:
    killed(fork_server_pid(forks))
    result = calls.run_in_session(calls.request("echo still"), 30.0, forks)
    assert (result.status.value, result.output) == ("completed", "still\n")


def test_once_it_died_no_holder_it_forked_ahead_takes_its_requests(forks: ForkServer) -> None:
    """The holder waiting ahead (here kept stopped, as a busy machine may keep it) holds none of
    the server's connection to its caller: once the server is gone, a start goes to a new
    interpreter at once, rather than into a connection that nobody reads."""
    pid = fork_server_pid(forks)
    kept_shell_ready(forks)
    # The holder and its keeper's worker, both still titled as the fork server that forked them.
    waiting = [process for ahead in children_of(pid) for process in (ahead, *children_of(ahead))
               if cmdline(process).startswith(b"safe-run")]
    shells = kept_shell_of(forks)
    for process in waiting:
        os.kill(process, signal.SIGSTOP)
    try:
        killed(pid)
        result = calls.run_in_session(calls.request("echo still"), 30.0, forks)
        assert (result.status.value, result.output) == ("completed", "still\n")
    finally:
        for process in [*waiting, *shells]:
            try:
                os.kill(process, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_a_caller_whose_variables_do_not_fit_in_one_message_is_served_all_the_same(
    forks: ForkServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job goes to the fork server in one message; one too large for it goes to a new
    interpreter in a file, with every variable, and the fork server serves the next one."""
    size = JOB_BYTES // 3 + 1  # in three variables: exec takes none of 128 KB or more
    for name in ("BIG1", "BIG2", "BIG3"):
        monkeypatch.setenv(name, "b" * size)
    result = calls.run_in_session(calls.request("echo ${#BIG1} ${#BIG3}"), 30.0, forks)
    assert (result.status.value, result.output) == ("completed", f"{size} {size}\n")
    for name in ("BIG1", "BIG2", "BIG3"):
        monkeypatch.delenv(name)
    pid = fork_server_pid(forks)
    result = calls.run_in_session(calls.request("echo ${BIG1-gone}"), 30.0, forks)
    assert (result.status.value, result.output) == ("completed", "gone\n")
    assert fork_server_pid(forks) == pid and alive(pid)


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
    kept_shell_ready(forks)  # a holder forked ahead, its shell started from the old ones
    monkeypatch.setenv("SET_LATER", "yes")
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the holder forked ahead, then one forked as asked or ahead again
        result = calls.run_in_session(calls.request("echo ${SET_LATER-unset} $PWD"), 30.0, forks)
        assert (result.status.value, result.output) == ("completed", f"yes {tmp_path}\n")


def test_a_shell_asked_for_a_moment_after_the_server_started_is_ready_with_its_rc(
    forks: ForkServer, api_env: SafeRun,
) -> None:
    """The holder forked ahead has the shell a plain request needs started, rc files loaded:
    loaded before the request was made. On a busy machine a request may rightly be served by a
    holder of its own, with a shell started for it (its rc loaded after the request): the request
    is made again, five times at most."""
    loaded = api_env.home / "loaded"
    (api_env.home / ".bashrc").write_text(f"loaded_at=$(date +%s.%N)\nrc_fn() {{ echo fn; }}\necho $$ >> {loaded}\n")
    forks.close()
    server = ForkServer().open()  # started once the rc is there
    served: list[int] = []  # closed, though their holders may not have ended yet
    try:
        for _ in range(5):
            kept = kept_shell_ready(server, loaded, besides=served)
            made = time.time()
            result = calls.run_in_shell("ahead", calls.request("echo $$ $loaded_at; rc_fn"), None, launcher=server)
            shell, loaded_at, *rest = result.output.split()
            assert rest == ["fn"], result
            if int(shell) in kept:
                assert float(loaded_at) < made, result
                return
            assert float(loaded_at) > made, f"a shell of its own, with its rc loaded before the request: {result}"
            calls.close_shell("ahead")
            served.append(int(shell))
        raise AssertionError("no request of five took the shell kept for it")
    finally:
        calls.close_if_open(lambda: calls.close_shell("ahead"))
        server.close()


def kept_shell_ready(server: ForkServer, rc_marker: Path | None = None, besides: Collection[int] = ()) -> list[int]:
    """Until the holder the fork server forked ahead has its shell started (other than `besides`)
    and, with `rc_marker`, that shell's rc has run to its end (it writes its pid there last); the
    shells kept.

    Every shell found must have its rc run, not any one: the fork server's children include the
    holders of earlier requests, which served but were not named in `besides`, and a holder closing
    a shell kept ahead for nothing; one of those having loaded its rc says nothing of the shell
    the next request takes."""
    deadline = time.monotonic() + 20
    while True:
        shells = [shell for shell in kept_shell_of(server) if shell not in besides]
        written = rc_marker.read_text().split() if rc_marker is not None and rc_marker.exists() else []
        if shells and (rc_marker is None or all(str(shell) in written for shell in shells)):
            return shells
        assert time.monotonic() < deadline, "no shell was kept for the next request"
        time.sleep(0.02)


def kept_shell_of(server: ForkServer) -> list[int]:
    """The shell of the holder the fork server forked ahead."""
    return [shell for ahead in children_of(fork_server_pid(server)) for shell in shells_of_holder_ahead(ahead)]


def test_the_shell_kept_for_the_next_request_starts_where_the_last_came_from(
    forks: ForkServer, api_env: SafeRun, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """A library caller or an MCP client that moved (its directory, its variables) is served by a
    shell started ahead where it is now, rc loaded, from its second request on."""
    loaded = api_env.home / "loaded"
    (api_env.home / ".bashrc").write_text(f"loaded_at=$(date +%s.%N)\nloaded_in=$PWD\necho $$ >> {loaded}\n")
    monkeypatch.setenv("SET_LATER", "yes")
    monkeypatch.chdir(tmp_path)
    first = calls.run_in_session(calls.request("echo $$; echo $SET_LATER"), 30.0, forks)
    assert (first.status.value, first.output.split()[1:]) == ("completed", ["yes"])
    served = [int(first.output.split()[0])]
    for _ in range(5):  # a request served by a shell of its own (see the test above) is made again
        kept = kept_shell_ready(forks, loaded, besides=served)  # the next one, rc loaded
        made = time.time()
        result = calls.run_in_session(calls.request("echo $$ $loaded_at $loaded_in $SET_LATER"), 30.0, forks)
        shell, loaded_at, loaded_in, variable = result.output.split()
        assert (loaded_in, variable) == (str(tmp_path), "yes"), result
        if int(shell) in kept:
            assert float(loaded_at) < made, result
            return
        assert float(loaded_at) > made, f"a shell of its own, with its rc loaded before the request: {result}"
        served.append(int(shell))
    raise AssertionError("no request of five took the shell kept for it")


def test_a_holder_takes_the_umask_its_caller_has_when_it_asks(forks: ForkServer) -> None:
    """As with its variables and directory: the umask of the moment, not the fork server's, and a
    shell kept ahead with another umask is not the one that runs the command."""
    kept_shell_ready(forks)  # a holder forked ahead, its shell started with the old umask
    old = os.umask(0o027)
    try:
        for _ in range(2):  # the holder forked ahead, then one whose shell started with the new umask
            result = calls.run_in_session(calls.request("umask"), 30.0, forks)
            assert (result.status.value, result.output) == ("completed", "0027\n")
    finally:
        os.umask(old)

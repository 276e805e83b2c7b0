"""A hundred runs at once through each front end: every answer right, nothing left running.

Each run goes through a session (a holder of its own) in the test's own, fresh session store, so
the starts, sweeps and ends of a hundred holders meet in one store. What is left afterwards is
counted by the store path in each process's environment: every holder and shell of the test
carries it. These start hundreds of processes on a shared machine, so they are slow tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import SafeRun, alive, children_of

pytestmark = pytest.mark.slow

RUNS = 100
BOUND_S = 120.0
# Holders exit once their caller has the final answer; this long is allowed for the last of them.
SETTLE_S = 20.0
FORK_SERVER = "safe-run fork server"


def processes_of(runtime: Path) -> list[str]:
    """The processes of the test's runs: those whose environment names its store, and the holders
    of its sessions (a holder's title takes the place of its environment, so it is known by it)."""
    needle = f"XDG_RUNTIME_DIR={runtime}\0".encode()
    sessions = {entry.name for entry in (runtime / "safe-run").glob("*")}
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            with open(f"/proc/{entry}/environ", "rb") as handle:
                environment = handle.read()
        except OSError:
            continue  # gone meanwhile, or not ours to read
        words = command.split()
        if needle in environment or (words[:2] == ["safe-run", "holder"] and words[2:3] and words[2] in sessions):
            found.append(f"{entry}: {command}")
    return found


def left_running(runtime: Path, ready: bool = False) -> list[str]:
    """What is still running of the test's runs once they have all had time to end; `ready`:
    but for what a fork server keeps ready for the next request (a holder forked ahead, and the
    shell it started), which serves no run yet."""
    deadline = time.monotonic() + SETTLE_S
    while (found := [line for line in processes_of(runtime) if not (ready and kept_ready(line))]) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def kept_ready(line: str) -> bool:
    """Whether the process of `line` ("PID: command") is a fork server's holder forked ahead, or
    that holder's shell. Such a holder has the fork server's title until it is handed a run, and
    is the fork server's child."""
    pid = int(line.partition(":")[0])
    return any(forked_ahead(candidate) for candidate in (pid, parent(pid)))


def forked_ahead(pid: int) -> bool:
    return title(pid).startswith(FORK_SERVER) and title(parent(pid)).startswith(FORK_SERVER)


def title(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def wrong_answers(answers: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """(status, output, expected output) of every answer that is not that run's own completion."""
    return [answer for answer in answers if answer[:2] != ("completed", answer[2])]


def at_once(run: Callable[[int], tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    with ThreadPoolExecutor(RUNS) as pool:
        return list(pool.map(run, range(RUNS)))


@pytest.mark.long
def test_a_hundred_command_lines_at_once(safe_run: SafeRun) -> None:
    env = safe_run.environment({"SHELL": "/bin/bash"})

    def one(index: int) -> tuple[str, str, str]:
        done = subprocess.run(
            [sys.executable, "-m", "safe_run", "--format", "json", "--yield-after", "60", "--", f"echo n{index}"],
            env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=BOUND_S,
        )
        answer = json.loads(done.stdout)
        return answer["status"], answer["output"] or answer["message"], f"n{index}\n"

    assert wrong_answers(at_once(one)) == []
    assert left_running(safe_run.runtime) == []
    assert safe_run.leftovers() == []


def test_a_hundred_library_calls_at_once(safe_run: SafeRun, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in safe_run.environment({"SHELL": "/bin/bash"}).items():
        monkeypatch.setenv(name, value)
    import safe_run as api

    def one(index: int) -> tuple[str, str, str]:
        result = api.run(f"echo n{index}", yield_after=60)
        return result.status.value, result.output or result.message or "", f"n{index}\n"

    assert wrong_answers(at_once(one)) == []
    assert left_running(safe_run.runtime, ready=True) == []  # the fork server keeps a shell for the next call


def test_a_hundred_fresh_mcp_runs_at_once(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    import anyio

    from test_mcp_http import HttpServer
    from test_mcp import Server

    served = HttpServer(Server(tmp_path))
    served.start()
    answers: list[tuple[str, str, str]] = []

    async def one(session: object, index: int) -> None:
        from mcp import ClientSession

        assert isinstance(session, ClientSession)
        result = await session.call_tool("run", {"command": f"echo n{index}", "fresh": True})
        answer = result.structured_content or {}
        answers.append((answer.get("status", "error"), answer.get("output") or str(result.content), f"n{index}\n"))

    async def clients() -> None:
        async with served.client() as session:
            async with anyio.create_task_group() as group:
                for index in range(RUNS):
                    group.start_soon(one, session, index)

    try:
        anyio.run(clients)
    finally:
        assert served.proc is not None
        started = children_of(served.proc.pid)  # its fork server, and the shell of the connection
        assert served.stop() == 128 + signal.SIGTERM
    assert len(answers) == RUNS and wrong_answers(answers) == []
    assert left_running(served.server.runtime) == []
    assert [pid for pid in started if alive(pid)] == []


@pytest.mark.long
def test_fifty_connections_ended_at_once_leave_no_shell(tmp_path: Path) -> None:
    """Each connection's own shell is closed when its client ends it (DELETE), all at once, while
    the server goes on serving."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    import anyio

    from test_mcp_http import HttpServer
    from test_mcp import Server

    served = HttpServer(Server(tmp_path))
    served.start()
    answers: list[tuple[str, str, str]] = []

    async def one(index: int) -> None:
        async with served.client() as session:
            result = await session.call_tool("run", {"command": f"echo n{index}"})
            answer = result.structured_content or {}
            answers.append((answer.get("status", "error"), answer.get("output") or str(result.content), f"n{index}\n"))

    async def clients() -> None:
        async with anyio.create_task_group() as group:
            for index in range(50):
                group.start_soon(one, index)

    try:
        anyio.run(clients)
        assert len(answers) == 50 and wrong_answers(answers) == []
        serving = [line for line in left_running(served.server.runtime, ready=True) if "holder" in line or "bash" in line]
        assert serving == [], "every connection's shell was closed with its connection"
    finally:
        assert served.proc is not None
        started = children_of(served.proc.pid)
        served.stop()
    assert left_running(served.server.runtime) == []
    assert [pid for pid in started if alive(pid)] == []

"""`safe-run mcp` driven by the MCP SDK's own client over stdio, as an agent's host drives it.

Each test starts `python -m safe_run mcp` with its own HOME, TMPDIR and XDG_RUNTIME_DIR. Waits
for processes are bounded loops on real state (a pid file, a process gone), never fixed sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")

import anyio  # noqa: E402
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

import fastcli  # noqa: E402
from conftest import alive as there, shell_path, writer_once_read, zombie  # noqa: E402

BOUND_S = 30.0


class Server:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.runtime = root / "run"
        self.tmpdir = root / "tmp"
        (self.home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
        self.runtime.mkdir(mode=0o700)
        self.tmpdir.mkdir()

    def params(self, *options: str) -> StdioServerParameters:
        env = {
            "PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home), "TMPDIR": str(self.tmpdir),
            "XDG_RUNTIME_DIR": str(self.runtime), "LANG": "C.UTF-8", "SHELL": shell_path("bash"),
            "SAFE_RUN_WARM": "0",  # the command-line calls these tests make each run in their own process
        }
        env.update(fastcli.program_env("mcp"))
        command, *words = fastcli.program()
        return StdioServerParameters(command=command, args=[*words, "mcp", *options], env=env, cwd=str(self.root))

    @asynccontextmanager
    async def client(self, *options: str) -> AsyncIterator[ClientSession]:
        with anyio.fail_after(BOUND_S * 2):
            async with stdio_client(self.params(*options)) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session


@pytest.fixture
def server(tmp_path: Path) -> Server:
    return Server(tmp_path)


def drive(test: Callable[[], Awaitable[None]]) -> None:
    anyio.run(test)


async def call(session: ClientSession, tool: str, arguments: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments, **kwargs)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def wait_for(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not check():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        await anyio.sleep(0.05)


def alive(pid: int) -> bool:
    """Running: there, and not ended waiting to be collected. (A process that ends between the two
    looks reads as there, and the next look says it is gone.)"""
    return there(pid) and not zombie(pid)


def pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):
        return None


def test_tools_are_listed_with_their_schemas(server: Server) -> None:
    async def test() -> None:
        async with server.client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"run", "poll", "send", "stop", "close", "sessions"}
        for tool in tools.values():
            assert tool.input_schema["type"] == "object" and tool.output_schema is not None
        assert tools["run"].input_schema["required"] == ["command"]
        assert "running" in tools["run"].output_schema["properties"]["status"]["enum"]

    drive(test)


def test_every_tool_has_a_title_and_says_what_it_does_to_the_world(server: Server) -> None:
    """A host that confirms destructive tools must not ask before each `poll`."""
    async def test() -> None:
        async with server.client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        hints = {name: (tool.annotations.read_only_hint, tool.annotations.destructive_hint,
                        tool.annotations.idempotent_hint) for name, tool in tools.items() if tool.annotations}
        assert hints == {
            "run": (False, True, False), "send": (False, True, False), "poll": (True, False, False),
            "sessions": (True, False, True), "stop": (False, True, True), "close": (False, True, True),
        }
        assert all(tool.title for tool in tools.values())
        send = tools["send"].input_schema["properties"]
        assert all(send[name].get("description") for name in ("text", "keys", "enter"))

    drive(test)


def test_schemas_give_one_type_each(server: Server) -> None:
    """Hosts with strict checks (the Inspector's) take no list of types such as ["string", "null"]."""
    def lists(schema: object) -> list[object]:
        if isinstance(schema, dict):
            found = [schema] if isinstance(schema.get("type"), list) else []
            return found + [item for value in schema.values() for item in lists(value)]
        if isinstance(schema, list):
            return [item for value in schema for item in lists(value)]
        return []

    async def test() -> None:
        async with server.client() as session:
            tools = (await session.list_tools()).tools
        assert [found for tool in tools for found in lists([tool.input_schema, tool.output_schema])] == []

    drive(test)


def test_null_for_an_optional_argument_is_its_default(server: Server) -> None:
    """Adapters send every optional argument, null when it was not given."""
    async def test() -> None:
        async with server.client() as session:
            nulls = {"fresh": None, "shell_name": None, "timeout": None, "yield_after": None, "cwd": None, "env": None}
            assert (await call(session, "run", {"command": "echo ok", **nulls}))["output"] == "ok\n"
            asked = await call(session, "run", {"command": "read -p 'go? ' x; echo got $x", "fresh": None})
            assert asked["status"] == "input_required", asked
            done = await call(session, "send", {"session_id": asked["session_id"], "text": "yes", "keys": None,
                                                "enter": None, "wait": None})
            if done["status"] != "completed":
                done = await call(session, "poll", {"session_id": asked["session_id"], "wait": 10})
            assert done["output"].endswith("got yes\n"), done

    drive(test)


def test_the_text_has_the_summary_and_output_then_the_rest_of_the_result(server: Server, tmp_path: Path) -> None:
    """For hosts that pass on only text: cwd and shell_name are there too."""
    async def test() -> None:
        async with server.client() as session:
            answer = await session.call_tool("run", {"command": f"cd {tmp_path}; echo hi"})
        summary, rest = (item.text for item in answer.content)  # type: ignore[union-attr]
        assert summary == "completed, exit code 0\nhi\n"
        fields = json.loads(rest)
        assert "output" not in fields and fields["cwd"] == str(tmp_path) and fields["shell_name"].startswith("mcp-")
        assert answer.structured_content is not None and answer.structured_content["output"] == "hi\n"

    drive(test)


def test_run_answers_the_result_and_cd_persists(server: Server, tmp_path: Path) -> None:
    async def test() -> None:
        async with server.client() as session:
            first = await session.call_tool("run", {"command": f"cd {tmp_path} && echo hi; exit 4"})
            assert first.structured_content is not None
            assert first.structured_content["status"] == "completed"
            assert first.structured_content["exit_code"] == 4 and first.structured_content["output"] == "hi\n"
            assert "exit code 4" in first.content[0].text  # type: ignore[union-attr]
            # `exit` ends the persistent shell: the next call gets a fresh one, in the server's directory.
            await call(session, "run", {"command": f"cd {tmp_path}/home"})
            assert (await call(session, "run", {"command": "pwd"}))["output"] == f"{tmp_path}/home\n"
            fresh = await call(session, "run", {"command": "pwd", "fresh": True})
            assert fresh["output"] == f"{tmp_path}\n" and fresh["shell_name"] is None
            listed = await session.call_tool("sessions", {})
            assert listed.structured_content is not None
            assert any(row["shell_name"] and row["cwd"] == f"{tmp_path}/home" for row in listed.structured_content["sessions"])
            # The shell that `exit` ended and the one after it share the name: the live one is told of.
            assert listed.content[0].text.endswith(f"(idle, in {tmp_path}/home)")  # type: ignore[union-attr]

    drive(test)


@pytest.mark.slow
def test_poll_send_and_stop(server: Server) -> None:
    async def test() -> None:
        async with server.client() as session:
            asked = await call(session, "run", {"command": 'read -p "name? " x; echo "hello $x"'})
            assert asked["status"] == "input_required" and asked["session_id"]
            assert (await call(session, "poll", {"session_id": asked["session_id"]}))["status"] == "input_required"
            answered = await call(session, "send", {"session_id": asked["session_id"], "text": "world\n", "wait": 10})
            assert answered["status"] == "completed" and "hello world" in answered["output"]

            running = await call(session, "run", {"command": "sleep 300", "fresh": True, "yield_after": 0.2})
            assert running["status"] == "running"
            stopped = await call(session, "stop", {"session_id": running["session_id"]})
            assert stopped["status"] == "interrupted" and stopped["session_id"] is None

    drive(test)


@pytest.mark.slow
def test_progress_notifications_come_before_the_result(server: Server, tmp_path: Path) -> None:
    go = tmp_path / "go"
    events: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        events.append(f"progress:{message}")
        go.touch()

    async def test() -> None:
        async with server.client() as session:
            command = f"echo first; while [ ! -e {go} ]; do sleep 0.05; done; echo second"
            result = await call(session, "run", {"command": command}, progress_callback=progress)
            events.append("result")
            assert result["status"] == "completed" and result["output"] == "first\nsecond\n"

    drive(test)
    assert events[0] == "progress:first\n" and events[-1] == "result"


@pytest.mark.parametrize("warm", [False, True], ids=["first-command", "warm-shell"])
def test_a_cancelled_run_stops_its_command_and_the_shell_takes_the_next(
    server: Server, tmp_path: Path, warm: bool
) -> None:
    """Both ways a run is asked: the shell's first command (started in a worker thread) and a warm
    shell's (asked from the event loop)."""
    pidfile = tmp_path / "pid"

    async def test() -> None:
        async with server.client() as session:
            if warm:
                assert (await call(session, "run", {"command": "true"}))["status"] == "completed"
            async with anyio.create_task_group() as group:
                group.start_soon(session.call_tool, "run", {"command": f"sh -c 'echo $$ > {pidfile}; exec sleep 300'"})
                await wait_for(lambda: pid_in(pidfile) is not None, "the command to start")
                group.cancel_scope.cancel()
            pid = pid_in(pidfile)
            assert pid is not None
            await wait_for(lambda: not alive(pid), f"the cancelled command (pid {pid}) to end")
            after = await call(session, "run", {"command": "echo after"})
            assert after["status"] == "completed" and after["output"] == "after\n"

    drive(test)


@pytest.mark.slow
def test_a_command_waiting_does_not_hold_up_another_call(server: Server, tmp_path: Path) -> None:
    go = tmp_path / "go"
    order: list[str] = []

    async def slow(session: ClientSession) -> None:
        waiting = await call(session, "run", {"command": f"while [ ! -e {go} ]; do sleep 0.05; done", "fresh": True})
        order.append(waiting["status"])

    async def test() -> None:
        async with server.client() as session:
            asked = await call(session, "run", {"command": "read x", "fresh": True})
            assert asked["status"] == "input_required"
            async with anyio.create_task_group() as group:
                group.start_soon(slow, session)
                quick = await call(session, "run", {"command": "echo quick"})
                order.append(quick["output"])
                go.touch()
            await call(session, "stop", {"session_id": asked["session_id"]})

    drive(test)
    assert order == ["quick\n", "completed"]


@pytest.mark.parametrize("fresh", [False, True])
def test_a_command_over_the_limit_is_refused_at_once(server: Server, fresh: bool) -> None:
    """The command line's limit, declared in the schema (maxLength), and a tool error saying so."""
    async def test() -> None:
        async with server.client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["run"].input_schema["properties"]["command"]["maxLength"] == 1024 * 1024
            answer = await session.call_tool("run", {"command": "echo " + "x" * (2 * 1024 * 1024), "fresh": fresh})
            assert answer.is_error
            assert "a command may have at most 1048576 (1 MiB)" in answer.content[0].text  # type: ignore[union-attr]
            assert (await call(session, "run", {"command": "echo alive"}))["output"] == "alive\n"

    drive(test)


def test_answers_name_the_tools_and_their_arguments_not_the_command_line(server: Server) -> None:
    async def test() -> None:
        async with server.client() as session:
            asked = await call(session, "run", {"command": "read -p 'name? ' x"})
            assert 'Answer with the `send` tool (session_id "' in asked["message"], asked["message"]
            running = await call(session, "run", {"command": "sleep 30", "fresh": True, "yield_after": 0.3})
            assert "Wait for the end with the `poll` tool" in running["message"]
            stopped = await call(session, "stop", {"session_id": running["session_id"]})
            assert stopped["message"].startswith("stopped: the `stop` tool was called")
            busy = await call(session, "run", {"command": "true"})
            for answer in (asked, running, stopped, busy):
                assert "safe-run " not in answer["message"], answer["message"]

    drive(test)


def test_malformed_arguments_are_tool_errors_and_the_server_stays_up(server: Server) -> None:
    async def test() -> None:
        async with server.client() as session:
            for tool, arguments in [
                ("run", {"command": 5}), ("run", {}), ("run", {"command": "true", "timeout": -1}),
                ("poll", {}), ("poll", {"session_id": "nope"}), ("send", {"session_id": "0" * 24, "keys": "x"}),
                ("stop", {"session_id": "0" * 24}),
            ]:
                result = await session.call_tool(tool, arguments)
                assert result.is_error, (tool, arguments)
                assert result.content and result.content[0].text  # type: ignore[union-attr]
            typed = await session.call_tool("run", {"command": "true", "timeout": "soon", "env": ["A=1"]})
            assert "not string" in typed.content[0].text, typed.content  # type: ignore[union-attr]
            assert (await call(session, "run", {"command": "echo alive"}))["output"] == "alive\n"

    drive(test)


def test_protocol_errors_are_json_rpc_errors(server: Server) -> None:
    """An unknown tool is the spec's -32602, not a tool's result; a line that is not JSON gets -32700."""
    async def test() -> None:
        async with server.client() as session:
            with pytest.raises(MCPError) as raised:
                await session.call_tool("no-such-tool", {})
            assert raised.value.code == -32602 and "the tools are run, poll" in raised.value.error.message
            assert (await call(session, "run", {"command": "echo alive"}))["output"] == "alive\n"

    drive(test)
    params = server.params()
    done = subprocess.run([params.command, *params.args], input=b"not json\n\n", capture_output=True, env=params.env,
                          cwd=params.cwd, timeout=BOUND_S)
    assert json.loads(done.stdout) == {"jsonrpc": "2.0", "id": None,
                                       "error": {"code": -32700, "message": "Parse error: not JSON"}}


def test_a_usage_error_of_the_server_writes_nothing_on_its_stdout(server: Server) -> None:
    params = server.params()
    done = subprocess.run([params.command, *params.args, "--bogus"], capture_output=True, env=params.env,
                          cwd=params.cwd, timeout=BOUND_S, stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and done.stdout == b"" and b"No such option '--bogus'" in done.stderr


@pytest.mark.slow
def test_a_connections_own_shell_closes_when_idle_and_a_named_one_stays(server: Server) -> None:
    """A client that never ends its session leaves its own shell to `--idle-expire`, not the hour."""
    async def test() -> None:
        async with server.client("--idle-expire", "1") as session:
            own = int((await call(session, "run", {"command": "echo $$"}))["output"])
            kept = int((await call(session, "run", {"command": "echo $$", "shell_name": "kept"}))["output"])
            await wait_for(lambda: not alive(own), "the connection's idle shell to close")
            assert alive(kept), "a named shell keeps its own limit"
            await call(session, "close", {"shell_name": "kept"})

    drive(test)


def test_a_client_that_goes_away_leaves_nothing_running(server: Server, tmp_path: Path) -> None:
    job = tmp_path / "job"
    fresh = tmp_path / "fresh"

    async def test() -> None:
        async with server.client() as session:
            await call(session, "run", {"command": f"sleep 300 & echo $! > {job}"})
            running = await call(
                session, "run", {"command": f"sh -c 'echo $$ > {fresh}; exec sleep 300'", "fresh": True, "yield_after": 0.2}
            )
            assert running["status"] == "running"
            await wait_for(lambda: pid_in(fresh) is not None, "the fresh command to start")
        pids = [pid_in(job), pid_in(fresh)]
        assert None not in pids
        for pid in pids:
            assert pid is not None
            await wait_for(lambda: not alive(pid), f"pid {pid} to end")
        async with server.client() as session:
            rows = (await call(session, "sessions", {}))["sessions"]
        assert [row for row in rows if row["status"] in ("running", "idle", "input_required")] == []

    drive(test)


def test_cwd_and_env_of_a_call_apply_to_that_command_alone(server: Server, tmp_path: Path) -> None:
    async def test() -> None:
        async with server.client() as session:
            scoped = await call(session, "run", {"command": "pwd; echo $ONLY", "cwd": str(server.home), "env": {"ONLY": "x"}})
            assert scoped["output"] == f"{server.home}\nx\n"
            assert (await call(session, "run", {"command": "pwd; echo $ONLY"}))["output"] == f"{tmp_path}\n\n"

    drive(test)


def test_a_stop_signal_ends_the_server_and_what_its_client_left(server: Server, tmp_path: Path) -> None:
    import json
    import signal
    import subprocess

    job = tmp_path / "job"
    params = server.params()
    proc = subprocess.Popen(
        [params.command, *params.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=params.env, cwd=params.cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        proc.stdin.flush()

    try:
        ask({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}})
        assert json.loads(proc.stdout.readline())["id"] == 1
        ask({"method": "notifications/initialized"})
        ask({"id": 2, "method": "tools/call", "params": {"name": "run", "arguments": {"command": f"sleep 300 & echo $! > {job}"}}})
        assert json.loads(proc.stdout.readline())["result"]["structuredContent"]["status"] == "completed"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(BOUND_S) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    pid = pid_in(job)
    assert pid is not None
    drive(lambda: wait_for(lambda: not alive(pid), f"the shell's job (pid {pid}) to end"))


def cli(server: Server, *args: str) -> dict[str, Any]:
    """`safe-run ARGS --format json` with the server's environment, its JSON answer."""
    import json
    import subprocess

    params = server.params()
    words = list(args)
    words.insert(words.index("--") if "--" in words else len(words), "--format=json")
    done = subprocess.run(
        [*fastcli.program(), *words], env=params.env, cwd=params.cwd,
        capture_output=True, text=True, timeout=BOUND_S,
    )
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_a_named_shell_outlives_its_connection_and_the_command_line_shares_it(server: Server) -> None:
    async def test() -> None:
        async with server.client() as session:
            named = await call(session, "run", {"command": "X=kept; cd home", "shell_name": "a"})
            assert named["shell_name"] == "a" and named["fresh"] is True
            own = (await call(session, "run", {"command": "true"}))["shell_name"]
            assert own.startswith("mcp-")
            refused = await session.call_tool("run", {"command": "true", "shell_name": "-bad"})
            assert refused.is_error
        async with server.client() as session:
            again = await call(session, "run", {"command": "echo $X; pwd", "shell_name": "a"})
            assert again["output"] == f"kept\n{server.home}\n" and again["fresh"] is False

            def own_shell_gone() -> bool:
                return not [row for row in cli(server, "sessions")["sessions"]
                            if row["shell_name"] == own and row["status"] == "idle"]

            await wait_for(own_shell_gone, f"the first connection's shell {own} to close")
        assert cli(server, "--in", "a", "--", "echo $X")["output"] == "kept\n"
        async with server.client() as session:
            closed = await call(session, "close", {"shell_name": "a"})
            assert closed["shell_name"] == "a"
            assert (await session.call_tool("close", {"shell_name": "a"})).is_error

    drive(test)


def _rpc(method: str, params: dict[str, Any], ident: int | None = None) -> bytes:
    import json

    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return (json.dumps(message) + "\n").encode()


@pytest.mark.slow
@pytest.mark.parametrize("warm", [False, True], ids=["first-command", "warm-shell"])
def test_a_client_that_vanishes_mid_call_leaves_a_named_shells_command_running(
    server: Server, tmp_path: Path, warm: bool
) -> None:
    """The client is gone while a call on a named shell runs (its first command, or one after it):
    the command finishes all the same, and the server ends quietly, after its clean-up."""
    import subprocess

    marker = tmp_path / "M"
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    params = server.params()
    proc = subprocess.Popen(
        [params.command, *params.args], env=params.env, cwd=params.cwd,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(_rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                         "clientInfo": {"name": "test", "version": "1"}}, 1))
    proc.stdin.flush()
    proc.stdout.readline()
    proc.stdin.write(_rpc("notifications/initialized", {}))
    if warm:
        proc.stdin.write(_rpc("tools/call", {"name": "run", "arguments": {"command": "true", "shell_name": "KN"}}, 3))
        proc.stdin.flush()
        assert b'"completed"' in proc.stdout.readline()
    proc.stdin.write(_rpc("tools/call", {"name": "run", "arguments": {
        "command": f"read -r _ < {fifo}; echo finished > {marker}", "shell_name": "KN", "yield_after": 20}}, 2))
    proc.stdin.flush()
    go = writer_once_read(fifo, BOUND_S)  # the command runs: it waits on the FIFO
    proc.stdin.close()  # the client goes away: its end of both pipes
    proc.stdout.close()
    try:
        code = proc.wait(BOUND_S)
        os.write(go, b"go\n")
        errors = proc.stderr.read().decode() if proc.stderr is not None else ""
        assert code == 0, errors
        assert "internal error" not in errors and "Traceback" not in errors, errors
        deadline = time.monotonic() + BOUND_S
        while not marker.exists():
            assert time.monotonic() < deadline, "the named shell's command was stopped with its caller"
            time.sleep(0.1)
        assert marker.read_text() == "finished\n"
    finally:
        os.close(go)
        if proc.poll() is None:
            proc.kill()
        cli(server, "close", "KN")



def test_the_connections_shell_is_told_of_by_its_live_row() -> None:
    """A shell that `exit` ended and the one started after it share the connection's name; the
    listing's order is not theirs to decide which is told of."""
    from safe_run.mcp.server import _standing

    closed = {"shell_name": "mcp-1", "status": "closed", "cwd": None}
    live = {"shell_name": "mcp-1", "status": "idle", "cwd": "/srv"}
    assert _standing([closed, live]) == _standing([live, closed]) == "(idle, in /srv)"
    assert _standing([closed]) == "(closed)"
    assert _standing([]) == "(not started yet)"

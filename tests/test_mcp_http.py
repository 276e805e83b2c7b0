"""`safe-run mcp --http` on loopback, driven by the SDK's Streamable HTTP client and by raw requests.

Each test starts `python -m safe_run mcp --http 127.0.0.1:0` (a free port, printed on stderr) with
the token in its environment and its own HOME, TMPDIR and XDG_RUNTIME_DIR, and stops it with
SIGTERM. Waits are bounded loops on real state.
"""

from __future__ import annotations

import http.client
import os
import sys
import json
import re
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")

import anyio  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

import fastcli  # noqa: E402
from conftest import workers_of  # noqa: E402
from safe_run.mcp.http_bounds import Bounds, admits, body_to_come, last_words  # noqa: E402
from test_mcp import BOUND_S, Server, call, cli, drive  # noqa: E402

TOKEN = secrets.token_hex(16)
SERVING = re.compile(r"serving MCP at http://([^/]+)/mcp")


class HttpServer:
    """One `safe-run mcp --http` process; `start` again after `stop` for a restart."""

    def __init__(self, server: Server, token_file: Path | None = None, own_process: bool = False,
                 options: tuple[str, ...] = ()) -> None:
        self.server = server
        self.token_file = token_file
        self.options = options  # more of the verb's options, after --http
        # The server in a process of its own, never a fork of the tests' zygote: `proc` is then the
        # server itself rather than the launcher that hands it over.
        self.own_process = own_process
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr = server.root / "stderr"
        self.address = ""

    def start(self) -> None:
        params = self.server.params()
        env = dict(params.env or {})
        program = [sys.executable, "-m", "safe_run"] if self.own_process else fastcli.program()
        argv = [*program, "mcp", "--http", "127.0.0.1:0", *self.options]
        if self.token_file is None:
            env["SAFE_RUN_MCP_TOKEN"] = TOKEN
        else:
            argv += ["--token-file", str(self.token_file)]
        with self.stderr.open("ab") as stderr:
            self.proc = subprocess.Popen(
                argv, env=env, cwd=params.cwd,
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            )
        deadline = time.monotonic() + BOUND_S
        while not (found := SERVING.findall(self.stderr.read_text())[-1:]) or found[0] == self.address:
            assert self.proc.poll() is None, self.stderr.read_text()
            assert time.monotonic() < deadline, "the server did not say where it serves"
            time.sleep(0.05)
        self.address = found[0]
        self.wait_healthy()

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + BOUND_S
        while True:
            try:
                if raw(self.address, "GET", "/health", headers={})[0] == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "the server did not answer /health"
            time.sleep(0.05)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(BOUND_S)
        self.proc = None
        return code

    @property
    def url(self) -> str:
        return f"http://{self.address}/mcp"

    @asynccontextmanager
    async def client(self, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        with anyio.fail_after(BOUND_S * 2):
            async with (
                create_mcp_http_client(headers=headers) as http_client,
                streamable_http_client(self.url, http_client=http_client) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                yield session


@pytest.fixture
def served(tmp_path: Path) -> Iterator[HttpServer]:
    http_server = HttpServer(Server(tmp_path))
    http_server.start()
    try:
        yield http_server
    finally:
        if http_server.proc is not None:
            http_server.proc.kill()
            http_server.proc.wait()
        for name in ("a", "b"):
            cli(http_server.server, "close", name)


def raw(address: str, method: str, path: str, body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """One plain HTTP request; its status, headers and body."""
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=BOUND_S)
    try:
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
        conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=sent)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_without_the_right_token_a_request_is_refused_and_does_nothing(served: HttpServer, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    status, headers, _ = raw(served.address, "POST", "/mcp", initialize, bearer(TOKEN))
    assert status == 200
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    assert raw(served.address, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"},
               {**session, **bearer(TOKEN)})[0] == 202
    run = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "run", "arguments": {"command": f"touch {marker}", "fresh": True}}}
    for refused in ({}, bearer("wrong"), bearer(TOKEN + "x"), {"Authorization": TOKEN}, {"Authorization": f"Basic {TOKEN}"}):
        status, headers, body = raw(served.address, "POST", "/mcp", run, {**session, **refused})
        assert status == 401 and headers["www-authenticate"].startswith("Bearer"), (refused, status)
        assert TOKEN not in body
    assert not marker.exists()
    status, _, body = raw(served.address, "POST", "/mcp", run, {**session, **bearer(TOKEN)})
    assert status == 200 and '"completed"' in body and marker.exists()

    async def test() -> None:
        with pytest.raises(Exception):
            async with served.client(token="wrong"):
                pass

    drive(test)


def test_oauth_discovery_finds_nothing_and_a_refusal_names_the_bearer_token(served: HttpServer) -> None:
    """Clients probe OAuth's metadata after a 401: a 404 there says there is none, and the 401's
    challenge says which token to send."""
    for path in ("/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp",
                 "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        assert raw(served.address, "GET", path)[0] == 404, path
    status, headers, _ = raw(served.address, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert status == 401 and "SAFE_RUN_MCP_TOKEN or --token-file" in headers["www-authenticate"]


def test_over_http_too_tools_are_annotated_null_is_the_default_and_errors_are_the_protocols(
    served: HttpServer,
) -> None:
    async def test() -> None:
        async with served.client() as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["poll"].annotations is not None and tools["poll"].annotations.read_only_hint
            answer = await session.call_tool("run", {"command": "echo hi", "fresh": None, "timeout": None})
            summary, rest = (item.text for item in answer.content)  # type: ignore[union-attr]
            assert summary == "completed, exit code 0\nhi\n" and json.loads(rest)["shell_name"].startswith("mcp-")
            with pytest.raises(MCPError) as raised:
                await session.call_tool("no-such-tool", {})
            assert raised.value.code == -32602
            asked = await session.call_tool("run", {"command": "read -p 'name? ' x"})
            assert 'the `send` tool (session_id "' in asked.structured_content["message"]  # type: ignore[index]
            await session.call_tool("stop", {"session_id": asked.structured_content["session_id"]})  # type: ignore[index]

    drive(test)


def test_a_foreign_host_is_refused_and_health_says_nothing(served: HttpServer) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert raw(served.address, "POST", "/mcp", ping, {**bearer(TOKEN), "Host": "attacker.example"})[0] == 421
    assert raw(served.address, "POST", "/mcp", ping, {**bearer(TOKEN), "Origin": "http://attacker.example"})[0] == 403
    status, headers, body = raw(served.address, "GET", "/health")
    assert status == 200 and body == "ok\n" and "server" not in headers


def test_shells_are_shared_between_clients_and_outlive_a_restart(served: HttpServer) -> None:
    async def first() -> str:
        async with served.client() as one, served.client() as two:
            assert (await call(one, "run", {"command": "export X=kept", "shell_name": "a"}))["fresh"] is True
            assert (await call(two, "run", {"command": "echo $X", "shell_name": "a"}))["output"] == "kept\n"
            own = await call(one, "run", {"command": "Y=own; echo $$"})
            assert (await call(one, "run", {"command": "echo $Y"}))["output"] == "own\n"
            assert (await call(two, "run", {"command": "echo $Y"}))["output"] == "\n"
            shell: str = own["shell_name"]
            return shell

    own = anyio.run(first)
    rows = cli(served.server, "sessions")["sessions"]
    assert not [row for row in rows if row["shell_name"] == own and row["status"] == "idle"]
    assert served.stop() == 128 + signal.SIGTERM
    served.start()

    async def after() -> None:
        async with served.client() as session:
            again = await call(session, "run", {"command": "echo $X", "shell_name": "a"})
            assert again["output"] == "kept\n" and again["fresh"] is False

    drive(after)
    assert served.stop() == 128 + signal.SIGTERM
    assert TOKEN not in served.stderr.read_text()


def test_the_token_is_not_on_the_servers_command_line(served: HttpServer) -> None:
    assert served.proc is not None
    cmdline = Path(f"/proc/{served.proc.pid}/cmdline").read_bytes()
    # Without --real-cli the process started is the launcher of tests/fastcli_launch.py, not safe-run.
    assert fastcli.ENABLED or cmdline.startswith(b"safe-run")
    assert TOKEN.encode() not in cmdline
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                assert TOKEN.encode() not in (entry / "cmdline").read_bytes()
            except OSError:
                continue

    async def test() -> None:
        async with served.client() as session:
            seen = await call(session, "run", {"command": "echo ${SAFE_RUN_MCP_TOKEN:-unset}", "fresh": True})
            assert seen["output"] == "unset\n"

    drive(test)
    assert TOKEN not in served.stderr.read_text()


@pytest.mark.parametrize("address", ["0.0.0.0:0", "127.0.0.1:0"])
def test_without_a_token_the_server_does_not_start(tmp_path: Path, address: str) -> None:
    params = Server(tmp_path).params()
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for extra in ([], ["--token-file", str(empty)]):
        done = subprocess.run(
            [*fastcli.program(), "mcp", "--http", address, *extra], env=params.env, cwd=params.cwd,
            capture_output=True, text=True, timeout=BOUND_S, stdin=subprocess.DEVNULL,
        )
        assert done.returncode == 2
        assert len(done.stderr.splitlines()) == 1 and "token" in done.stderr and "Traceback" not in done.stderr


def test_the_token_can_come_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    served = HttpServer(Server(tmp_path), token_file)
    served.start()
    try:
        async def test() -> None:
            async with served.client() as session:
                assert (await call(session, "run", {"command": "echo hi", "fresh": True}))["output"] == "hi\n"

        drive(test)
        assert raw(served.address, "POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "ping"})[0] == 401
    finally:
        assert served.stop() == 128 + signal.SIGTERM


def open_session(address: str) -> dict[str, str]:
    """A raw MCP session, initialized: the headers its later requests carry."""
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    status, headers, _ = raw(address, "POST", "/mcp", initialize, bearer(TOKEN))
    assert status == 200
    session = {"mcp-session-id": headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18", **bearer(TOKEN)}
    assert raw(address, "POST", "/mcp", {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)[0] == 202
    return session


def tool_call(address: str, session: dict[str, str], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    request = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    status, _, body = raw(address, "POST", "/mcp", request, session)
    assert status == 200, body
    data = next(line[len("data: "):] for line in body.splitlines() if line.startswith("data: ")) if "data: " in body else body
    answer: dict[str, Any] = json.loads(data)["result"]
    return answer


def test_every_check_comes_before_any_effect_a_delete_from_a_foreign_host_closes_nothing(served: HttpServer) -> None:
    session = open_session(served.address)
    started = tool_call(served.address, session, "run", {"command": "echo $$"})
    shell = started["structuredContent"]["shell_name"]
    shell_pid = int(started["structuredContent"]["output"])
    for foreign in ({"Host": "attacker.example"}, {"Origin": "http://attacker.example"}):
        status = raw(served.address, "DELETE", "/mcp", None, {**session, **foreign})[0]
        assert status in (421, 403)
        rows = {row["session_id"]: row for row in cli(served.server, "sessions")["sessions"]}
        shell_row = rows[started["structuredContent"]["shell_id"]]
        assert (shell_row["shell_name"], shell_row["status"]) == (shell, "idle"), "a refused DELETE closed the shell"
    assert raw(served.address, "DELETE", "/mcp", None, session)[0] == 200
    deadline = time.monotonic() + BOUND_S
    while Path(f"/proc/{shell_pid}").exists():
        assert time.monotonic() < deadline, "an accepted DELETE left the connection's shell running"
        time.sleep(0.05)


def test_arguments_outside_the_schema_are_tool_errors(served: HttpServer) -> None:
    session = open_session(served.address)
    for arguments, needle in (
        ({"command": "true", "timeout": 10 ** 400}, "finite number of seconds"),
        ({"command": "true", "yield_after": 10 ** 400}, "finite number of seconds"),
        ({"command": "true", "shell": "/bin/sh"}, "no such argument: 'shell'"),
    ):
        answer = tool_call(served.address, session, "run", arguments)
        assert answer["isError"] is True and needle in answer["content"][0]["text"], answer
    assert "Traceback" not in served.stderr.read_text()


@pytest.mark.parametrize(("token", "needle"), [("short", "at least 32"), ("   ", "blank")])
def test_a_short_or_blank_token_is_refused_at_start(tmp_path: Path, token: str, needle: str) -> None:
    params = Server(tmp_path).params()
    done = subprocess.run(
        [*fastcli.program(), "mcp", "--http", "127.0.0.1:0"], env={**(params.env or {}), "SAFE_RUN_MCP_TOKEN": token},
        cwd=params.cwd, capture_output=True, text=True, timeout=BOUND_S, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and needle in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_stop_signal_ends_the_server_quickly_and_quietly(served: HttpServer) -> None:
    async def busy() -> None:
        async with served.client() as session:
            await call(session, "run", {"command": "true"})

    drive(busy)
    assert served.stop() == 128 + signal.SIGTERM
    log = served.stderr.read_text()
    assert "Traceback" not in log and "Error" not in log and "cutting short" not in log, log


@pytest.mark.slow
def test_a_stop_that_runs_out_of_time_still_ends_the_server_and_says_where(served: HttpServer) -> None:
    """A connection's shell whose holder cannot answer (stopped) cannot be closed: the server
    still ends at its one deadline, and names the step it cut short."""
    stopped: list[int] = []
    names: list[str] = []

    async def test() -> None:
        async with served.client() as session:
            await call(session, "run", {"command": "true"})
            metas = [json.loads(meta.read_text()) for meta in served.server.runtime.glob("safe-run/*/meta.json")]
            [holder] = {meta.get("holder_pid") for meta in metas} - {None}
            names.extend({meta.get("shell_name") for meta in metas} - {None})
            for pid in [holder, *workers_of(holder)]:  # and the worker that serves for it, if any
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
            assert served.proc is not None
            served.proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(served.proc.wait, BOUND_S)

    try:
        drive(test)
    finally:
        for holder in stopped:
            os.kill(holder, signal.SIGCONT)
        for name in names:  # the close it could not answer in time was dropped, as every late request is
            cli(served.server, "close", name)
    log = served.stderr.read_text()
    assert "safe-run: stopped within 3 s, cutting short: 1 connection shell(s) still closing" in log, log


@pytest.mark.slow
def test_a_stop_signal_answers_every_call_in_flight_first(served: HttpServer) -> None:
    """A client's `run` waiting for its command when the server is told to stop gets its answer
    (the command stopped), not a stream that ends without one, and nothing is logged as an error.
    The client lists the tools first, as a host does: the SDK's client otherwise lists them after
    the answer, to check it against the tool's output schema, and by then the server has gone."""
    answers: list[Any] = []

    async def test() -> None:
        async def caller() -> None:
            try:
                async with served.client() as session:
                    await session.list_tools()
                    answers.append(await session.call_tool("run", {"command": "sleep 30.75", "yield_after": 60}))
            except Exception:  # noqa: BLE001 - leaving, the client tells the server its session ended:
                if not answers:  # a server that has stopped by then cannot be told, and that is no fault
                    raise

        async with anyio.create_task_group() as group:
            group.start_soon(caller)
            await wait_for_output(served)
            assert served.proc is not None
            served.proc.send_signal(signal.SIGTERM)
            await anyio.to_thread.run_sync(served.proc.wait, BOUND_S)

    drive(test)
    [answer] = answers
    assert answer.structured_content["status"] == "interrupted"
    assert "SIGTERM" in answer.structured_content["message"]
    log = served.stderr.read_text()
    assert "Traceback" not in log and "Error" not in log, log


async def wait_for_output(served: HttpServer) -> None:
    """Until the command runs: its call waits for it from then on."""
    deadline = time.monotonic() + BOUND_S
    while subprocess.run(["pgrep", "-f", "sleep 30.75"], capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "the command never started"
        await anyio.sleep(0.05)


def test_a_command_too_long_and_a_body_too_large_are_answered_and_the_session_goes_on(served: HttpServer) -> None:
    async def test() -> None:
        async with served.client() as session:
            long = await session.call_tool("run", {"command": "echo " + "x" * (1024 * 1024)})
            assert long.is_error and "a command may have at most 1048576" in long.content[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="this server takes at most"):
                await session.call_tool("run", {"command": "echo " + "x" * (5 * 1024 * 1024)})
            assert (await session.call_tool("run", {"command": "echo alive"})).structured_content["output"] == "alive\n"  # type: ignore[index]

    drive(test)


def test_the_server_is_not_dumpable() -> None:
    """A command run as the same user cannot read the token from the server's memory: the server
    makes itself non-dumpable, so the kernel refuses such a read (root alone may still)."""
    check = "import ctypes; from safe_run.mcp.http import keep_memory_private; keep_memory_private(); " \
            "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))"  # PR_GET_DUMPABLE
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=BOUND_S)
    assert done.stdout == "0\n", done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root may read any process's memory: this holds for other users")
def test_the_servers_memory_is_not_readable_by_its_user(tmp_path: Path) -> None:
    served = HttpServer(Server(tmp_path), own_process=True)
    served.start()
    assert served.proc is not None
    try:
        with pytest.raises(PermissionError):
            Path(f"/proc/{served.proc.pid}/mem").open("rb")
    finally:
        served.proc.kill()
        served.proc.wait()


def connected(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=BOUND_S)


def until_closed(conn: socket.socket) -> bytes:
    """All the server sends on `conn` until it closes it (bounded by the socket's timeout)."""
    received = b""
    while data := conn.recv(4096):
        received += data
    return received


def answer(conn: socket.socket) -> bytes:
    """One whole answer to a request sent on `conn`, which stays open: its status line, headers and body."""
    received = b""
    while b"\r\n\r\n" not in received:
        data = conn.recv(4096)
        assert data, f"closed after {received!r}"
        received += data
    head, _, body = received.partition(b"\r\n\r\n")
    length = int(re.search(rb"content-length: *(\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    while len(body) < length:
        body += conn.recv(4096)
    return received


def health(address: str) -> int | None:
    """The status of a request for /health; None when the connection was cut before it came."""
    try:
        return raw(address, "GET", "/health", headers={})[0]
    except OSError:
        return None


def health_request(address: str) -> bytes:
    return f"GET /health HTTP/1.1\r\nHost: {address}\r\n\r\n".encode()


HALF_A_HEADER = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def half_a_body(address: str) -> bytes:
    """An MCP request the server would take, whose body stops a fifth of the way."""
    return (f"POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {TOKEN}\r\n"
            'Content-Length: 100\r\n\r\n{"jsonrpc": "2.0", ').encode()


@pytest.mark.slow
def test_a_connection_whose_request_headers_do_not_come_in_time_is_closed(tmp_path: Path) -> None:
    """From its opening or its last answer, a connection has --header-timeout seconds to complete
    its next request's headers and body: half a header or half a body is answered 408, nothing at
    all (on a new connection or one kept alive) is just closed; a well-formed request is still
    served."""
    served = HttpServer(Server(tmp_path), options=("--header-timeout", "0.5"))
    served.start()
    try:
        with connected(served.address) as slow, connected(served.address) as silent, \
                connected(served.address) as slow_body:
            slow.sendall(HALF_A_HEADER)
            slow_body.sendall(half_a_body(served.address))
            assert until_closed(slow).startswith(b"HTTP/1.1 408 ")
            assert until_closed(silent) == b""
            assert until_closed(slow_body).startswith(b"HTTP/1.1 408 ")
        with connected(served.address) as kept:
            kept.sendall(health_request(served.address))
            assert answer(kept).startswith(b"HTTP/1.1 200 ")
            kept.sendall(HALF_A_HEADER)  # its next request, as slow
            assert until_closed(kept).startswith(b"HTTP/1.1 408 ")
        with connected(served.address) as idle:
            idle.sendall(health_request(served.address))
            assert answer(idle).startswith(b"HTTP/1.1 200 ")
            assert until_closed(idle) == b""  # kept alive, and no next request came
        assert raw(served.address, "GET", "/health", headers={})[0] == 200
    finally:
        served.stop()


def test_connections_beyond_the_cap_are_answered_503_and_closed_until_others_close(tmp_path: Path) -> None:
    served = HttpServer(Server(tmp_path), options=("--max-connections", "4", "--header-timeout", "60"))
    served.start()
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + BOUND_S
        while len(held) < 4:  # each seen served (the server may not have seen start()'s own close yet)
            conn = connected(served.address)
            conn.sendall(health_request(served.address))
            if answer(conn).startswith(b"HTTP/1.1 200 "):
                conn.sendall(HALF_A_HEADER)  # open, in the middle of its next request's headers
                held.append(conn)
            else:
                conn.close()
                assert time.monotonic() < deadline, "the server kept refusing below its cap"
                time.sleep(0.05)
        with connected(served.address) as beyond:
            assert until_closed(beyond).startswith(b"HTTP/1.1 503 ")
        held.pop().close()
        while (status := health(served.address)) != 200:
            assert status in (503, None), status
            assert time.monotonic() < deadline, "a connection closed did not make room"
            time.sleep(0.05)
    finally:
        for conn in held:
            conn.close()
        served.stop()


def test_the_clock_runs_on_through_a_body_to_come() -> None:
    assert body_to_come([(b"host", b"x"), (b"content-length", b"12")])
    assert body_to_come([(b"transfer-encoding", b"chunked")])
    assert not body_to_come([(b"content-length", b"0")]) and not body_to_come([(b"host", b"x")])


def test_the_cap_admits_up_to_its_bound_and_only_a_request_begun_is_told_it_came_too_late() -> None:
    assert admits(3, Bounds(connections=4)) and not admits(4, Bounds(connections=4))
    assert last_words(heard=True).startswith(b"HTTP/1.1 408 ")
    assert last_words(heard=False) == b""  # an idle connection's client may be sending a request now


@pytest.mark.parametrize("options, needle", [
    (["--http", "127.0.0.1:0", "--header-timeout", "0"], "--header-timeout"),
    (["--http", "127.0.0.1:0", "--header-timeout", "soon"], "--header-timeout"),
    (["--http", "127.0.0.1:0", "--max-connections", "0"], "--max-connections"),
    (["--header-timeout", "5"], "--header-timeout goes with --http"),
    (["--max-connections", "5"], "--max-connections goes with --http"),
])
def test_a_bound_that_is_no_bound_is_refused_at_start(tmp_path: Path, options: list[str], needle: str) -> None:
    params = Server(tmp_path).params()
    done = subprocess.run(
        [*fastcli.program(), "mcp", *options], env={**(params.env or {}), "SAFE_RUN_MCP_TOKEN": TOKEN},
        cwd=params.cwd, capture_output=True, text=True, timeout=BOUND_S, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr

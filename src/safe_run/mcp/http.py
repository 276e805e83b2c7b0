"""Runs in the MCP server over HTTP (`safe-run mcp --http HOST:PORT`): the same tools over the
SDK's Streamable HTTP transport.

One process serves many clients at `/mcp`, each HTTP session a connection with its own default
shell; named shells are shared and live in their holders, so they outlive the server. Every
request but `/health` needs `Authorization: Bearer TOKEN`: a request without the right token is
answered 401 before the MCP transport sees it, so it does nothing. The SDK's Host and Origin
checks stay on, allowing only the bound address (DNS rebinding). TLS and routing are a reverse
proxy's job, or a tunnel's.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import re
import socket
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from ..engine.deadline import Deadline
from ..engine.interrupts import Wakeup
from .http_bounds import Book, Bounds, Watched
from .server import END_RUNNING_S, Connection, Tools, mcp_server, say, stop_requested
from ..core.request import DEFAULT_CONNECTION_IDLE_S
from ..session.forkserver import EXIT_S, ForkServer

TOKEN_ENV = "SAFE_RUN_MCP_TOKEN"
WELL_KNOWN = "/.well-known/"
# What a refused request is told: which token, and where the server got it.
_CHALLENGE = (b'Bearer realm="safe-run", error="invalid_token", error_description="the token the server was '
              b'started with (SAFE_RUN_MCP_TOKEN or --token-file), as Authorization: Bearer TOKEN; no OAuth"')
MCP_PATH = "/mcp"
HEALTH_PATH = "/health"
# prctl's option from <linux/prctl.h>.
PR_SET_DUMPABLE = 4
# A stop signal ends the server within this long, whatever is still going on: each step below
# takes its share of it, and never more than is left (`deadline.Deadline`).
STOP_S = 3.0
# Open streams get this long to end once a stop signal came; then they are cut.
GRACEFUL_S = 1.0
# At a stop, the connections' shells are closed side by side, all of them within this long.
CLOSE_ALL_S = 1.5
# A request body larger than the transport takes is answered here, as JSON-RPC: the SDK's own
# answer is an HTTP 413, which its client takes for the end of the whole session.
MAX_BODY = DEFAULT_MAX_REQUEST_BODY_SIZE
# Of such a body, this much of the start is kept to find the request's id; what is sent beyond
# LONGEST_READ is not waited for (the connection is closed after the answer).
ID_WINDOW = 4096
LONGEST_READ = 64 * 1024 * 1024
_REQUEST_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,20})')

# Every call waits for its command in a worker thread; with anyio's default of 40, the 41st
# client at once would wait for another's command to end.
WORKER_THREADS = 256


# Where uvicorn and the SDK say that a stream was cut: at a stop, that is the stop's own doing.
QUIETED_LOGGERS = ("uvicorn.error", "mcp.server.streamable_http", "mcp.server.streamable_http_manager")


class CancelledAtStop(logging.Filter):
    """Once the server stops, a stream still open (a client's listening GET) is cut after the
    grace time, and uvicorn and the SDK log that with a traceback: the stop is not an error, so
    those records go. Before the stop, and any other record, passes."""

    def __init__(self) -> None:
        super().__init__()
        self.stopping = False

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.stopping:
            return True
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, asyncio.CancelledError) and \
            "graceful shutdown" not in record.getMessage() and "gave up" not in record.getMessage()


class Connections:
    """The connection of each HTTP session, found by its session id, made on its first tool call."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_session: dict[str, Connection] = {}

    def of(self, ctx: ServerRequestContext[Any, Any]) -> Connection:
        request = ctx.request
        headers = getattr(request, "headers", None)
        key = (headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None) or ""
        with self.lock:
            return self.by_session.setdefault(key, Connection())

    def end(self, key: str) -> str | None:
        """The client ends its session: close its shell and stop its sessions. What could not be
        done is said, and the connection is kept, so that the client can ask again."""
        with self.lock:
            connection = self.by_session.pop(key, None)
        problem = None if connection is None else connection.close()
        if connection is not None and problem is not None:
            with self.lock:
                self.by_session.setdefault(key, connection)
        return problem

    def end_all(self, stop: Deadline) -> None:
        """The server stops: every connection's shell closed, side by side, all within the stop's
        share for it; a close still going then is left to its holder, which carries it out alone."""
        with self.lock:
            left = list(self.by_session.values())
            self.by_session.clear()
        threads = [threading.Thread(target=lambda c=c: say(c.close()), daemon=True) for c in left]
        for thread in threads:
            thread.start()
        closing = Deadline(stop.share(CLOSE_ALL_S))
        for thread in threads:
            thread.join(closing.left())
        still = sum(thread.is_alive() for thread in threads)
        stop.note(f"{still} connection shell(s) still closing", still == 0)


class Gate:
    """The ASGI app in front of the SDK's: `/health` for anyone, the rest with the token only, from
    an allowed Host and Origin; every check comes before anything is done.

    It also sees a session end (DELETE), to close that connection's default shell, once the SDK
    has accepted it.
    """

    def __init__(self, app: ASGIApp, token: bytes, connections: Connections, hosts: list[str]) -> None:
        self.app = app
        self.token = token
        self.connections = connections
        self.hosts = {host.encode("latin-1") for host in hosts}
        self.origins = {f"http://{host}".encode("latin-1") for host in hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # the lifespan, which runs the session manager
            return
        if scope["path"] == HEALTH_PATH:
            await _plain(send, 200, b"ok\n")
            return
        if scope["path"].startswith(WELL_KNOWN):
            # No OAuth here: clients that probe for its metadata after a 401 learn so at once.
            await _plain(send, 404, b"not found: this server takes a bearer token, and has no OAuth\n")
            return
        if not self._authorized(scope):
            await _plain(send, 401, b"unauthorized: send Authorization: Bearer TOKEN\n", [(b"www-authenticate", _CHALLENGE)])
            return
        if _header(scope, b"host") not in self.hosts:
            await _plain(send, 421, b"this server does not answer for that Host\n")
            return
        origin = _header(scope, b"origin")
        if origin is not None and origin not in self.origins:
            await _plain(send, 403, b"requests from that Origin are refused\n")
            return
        length = _header(scope, b"content-length")
        if scope["method"] == "POST" and length is not None and length.isdigit() and int(length) > MAX_BODY:
            await _too_large(receive, send, int(length))
            return
        key = _header(scope, MCP_SESSION_ID_HEADER.encode())
        if scope["method"] == "DELETE" and key:
            # The connection's shell is closed first: a close that failed is said, never reported done.
            problem = await anyio.to_thread.run_sync(self.connections.end, key.decode("latin-1"))
            if problem is not None:
                await _plain(send, 500, f"{problem}; ask again\n".encode())
                return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        given = _header(scope, b"authorization") or b""
        scheme, _, credential = given.partition(b" ")
        # compare_digest whatever was sent, so the time taken tells nothing about the token
        matches = hmac.compare_digest(credential.strip(), self.token)
        return scheme.lower() == b"bearer" and matches


def keep_memory_private() -> None:
    """Make this process non-dumpable (PR_SET_DUMPABLE 0): a command it runs, as the same user,
    can then neither read its memory (/proc/PID/mem, where the token is) nor attach to it. What it
    starts with exec (its sessions' holders, their shells) is dumpable again, as usual."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        print("safe-run: could not make this process non-dumpable; a command run as the same user could read "
              "the token from its memory", file=sys.stderr, flush=True)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def _too_large(receive: Receive, send: Send, length: int) -> None:
    """A body beyond MAX_BODY: a JSON-RPC error for its request, found by the id at its start."""
    start, taken = b"", 0
    while taken < LONGEST_READ:
        message = await receive()
        body = message.get("body", b"")
        taken += len(body)
        if len(start) < ID_WINDOW:
            start += body[: ID_WINDOW - len(start)]
        if not message.get("more_body", False):
            break
    found = _REQUEST_ID.search(start)
    answer = {
        "jsonrpc": "2.0", "id": json.loads(found.group(1)) if found else None,
        "error": {"code": -32600, "message": f"the request is {length} bytes; this server takes at most {MAX_BODY} "
                                             "(a command may have at most 1 MiB)"},
    }
    body = json.dumps(answer).encode()
    await send({
        "type": "http.response.start", "status": 200,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
    })
    await send({"type": "http.response.body", "body": body})


async def _plain(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({
        "type": "http.response.start", "status": status,
        "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()), *(headers or [])],
    })
    await send({"type": "http.response.body", "body": body})


def parse_address(value: str) -> tuple[str, int]:
    """HOST:PORT ([ADDRESS]:PORT for IPv6) as a host and a port, or ValueError saying why not."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"expected HOST:PORT (IPv6 as [ADDRESS]:PORT), got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"write an IPv6 address in brackets, as [{host}]:{port}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything else is started (port 0: a free one)."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family)


def allowed_hosts(host: str, port: int) -> list[str]:
    """The Host headers a request may carry: the bound address, and its other names on loopback."""
    names = [f"[{host}]" if ":" in host else host]
    if is_loopback(host):
        names += [name for name in ("localhost", "127.0.0.1", "[::1]") if name not in names]
    return [f"{name}:{port}" for name in names]


class _Server(uvicorn.Server):
    """uvicorn without its own signal handlers: the verb's stop signals end the serving."""

    @contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def serve_http(
    cwd: str, sock: socket.socket, token: bytes, wakeup: Wakeup | None = None,
    own_shell_idle: float | None = DEFAULT_CONNECTION_IDLE_S, bounds: Bounds = Bounds(),
) -> None:
    """Serve on `sock` until a stop request on `wakeup`; then close the connections' own shells
    and stop their sessions (named shells go on). `bounds`: how many connections at once, and how
    long each may take to send a request, headers and body (`http_bounds`)."""
    host, port = sock.getsockname()[:2]
    hosts = allowed_hosts(host, port)
    connections = Connections()
    launcher = ForkServer().open()
    tools = Tools(connections.of, cwd, launcher, own_shell_idle)
    server = mcp_server(tools)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=[f"http://{name}" for name in hosts],
    )
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, transport_security=security, host=host)
    book = Book(bounds)
    config = uvicorn.Config(
        Watched(Gate(app, token, connections, hosts), book), log_level="warning", access_log=False, server_header=False,
        lifespan="on", timeout_graceful_shutdown=int(GRACEFUL_S), http=book.protocol(),
        # No WebSocket upgrade (MCP here is Streamable HTTP): one would hand the connection to
        # another protocol, out of the book's sight, and its place would never be given back.
        ws="none",
    )
    http = _Server(config)
    quiet = CancelledAtStop()
    for name in QUIETED_LOGGERS:
        logging.getLogger(name).addFilter(quiet)

    stops: list[Deadline] = []

    async def stop_on_request() -> None:
        if wakeup is not None:
            await stop_requested(wakeup)
            stops.append(Deadline(STOP_S))
            quiet.stopping = True
            stops[0].note("runs in flight not all answered", await tools.end_running(stops[0].share(END_RUNNING_S)))
            http.config.timeout_graceful_shutdown = stops[0].share(GRACEFUL_S)  # type: ignore[assignment]
            http.should_exit = True

    async def main() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS
        async with anyio.create_task_group() as group:
            group.start_soon(stop_on_request)
            await http.serve(sockets=[sock])
            group.cancel_scope.cancel()

    keep_memory_private()
    print(f"safe-run: serving MCP at http://{hosts[0]}{MCP_PATH}", file=sys.stderr, flush=True)
    try:
        anyio.run(main)
    finally:
        stop = stops[0] if stops else Deadline(STOP_S)  # the serving failed: its clean-up is bounded too
        connections.end_all(stop)
        stop.note("the fork server killed", launcher.close(stop.share(EXIT_S)))
        say(stop.summary())

"""Runs in the MCP server (`safe-run mcp`, over stdio; `mcp/http.py` serves the same tools over
HTTP): the runs, sessions and persistent shells as tools of an MCP server.

Each connection (the one client of a stdio server, or one session over HTTP) has its own
persistent shell, so a `cd` in one `run` holds for the next. A `run` may name a shell instead
(`shell_name`, the names of `--in NAME`): named shells belong to no connection, so the command
line and every later connection find them, and only their idle expiry or `close` ends them.
Every answer is the result JSON as structured content, with a short line of text. What a
command did (timed out, waits for input, found the shell busy) is a normal result; only a call
that cannot be made (bad arguments, an unknown session) is a tool error. The blocking calls run
in worker threads, so calls go on at once, and the server's own stdin and stdout never reach a
command: commands run in holders with their own terminal.

A long command reports its output as progress notifications when the client asked for them
(a progress token), and still going at `yield_after` it answers `running` with its session id.
A cancelled `run` stops its command; when the client goes away, the connection's own shell is
closed and the sessions it started are stopped, except those of named shells.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from .. import __version__, calls
from ..calls import DEFAULT_YIELD_AFTER_S
from ..engine.interrupts import Wakeup
from ..core.result import SCHEMA_VERSION, ExitStatus, Reason, Result, Status, Strategy
from ..core.request import DEFAULT_CONNECTION_IDLE_S, DEFAULT_IDLE_EXPIRE_S, RunRequest, Scope
from ..session import SessionError, client, wire
from ..session.forkserver import ForkServer
from ..session.launch import Launcher
from ..session.store import SHELL_NAME, Session
from ..session.wire import MAX_WAIT_S

# With a progress token, output is reported at least this often while a command runs.
PROGRESS_STEP_S = 0.5
# A connection's shell that cannot be closed is tried this many times, this long apart (and more).
CLOSE_ATTEMPTS = 3
CLOSE_RETRY_S = 0.2
# Why the commands a connection started are stopped when it ends.
GONE = "the MCP client that started it went away"
CANCELLED = "the MCP call that ran it was cancelled"
# At a stop, the calls in flight get this long to end their commands and be answered: two thirds
# of the HTTP server's whole stop, since an answer is what a client waits for, and what comes
# after it (streams, shells, the fork server) can be cut short without one being lost.
END_RUNNING_S = 2.0
# How long a cancelled call waits for its command to be stopped before it lets go.
STOP_BOUND_S = 15.0

# One type a schema, for hosts whose checks take no list of types (`["string", "null"]`).
_NULLABLE_STRING = {"anyOf": [{"type": "string"}, {"type": "null"}]}
_NUMBER = {"type": "number", "minimum": 0}

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "safe-run's result object: the JSON `safe-run --format json` prints (see `man safe-run`).",
    "required": ["schema_version", "status", "exit_code", "completion_reason", "command", "output", "session_id"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "status": {"enum": [status.value for status in Status]},
        "exit_code": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "strategy": {"anyOf": [{"enum": [strategy.value for strategy in Strategy]}, {"type": "null"}]},
        "completion_reason": {"anyOf": [{"enum": [reason.value for reason in Reason]}, {"type": "null"}]},
        "command": _NULLABLE_STRING,
        "output": {"type": "string"},
        "output_truncated": {"type": "boolean"},
        "duration_s": {"type": "number"},
        "message": _NULLABLE_STRING,
        "session_id": _NULLABLE_STRING,
        "prompt": _NULLABLE_STRING,
        "signal": _NULLABLE_STRING,
        "shell_name": _NULLABLE_STRING,
        "cwd": _NULLABLE_STRING,
    },
}

SESSIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["schema_version", "sessions"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "sessions": {"type": "array", "items": {"type": "object"}},
    },
}

_SESSION_ID = {"type": "string", "description": "The session_id of a result that had one."}
_WAIT = {**_NUMBER, "description": "Wait up to this many seconds for the command to end or ask for input."}

def _named(title: str, *, read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict[str, Any]:
    """A tool's title, and what it does to the world as hosts read it (the spec's annotations)."""
    return {"title": title, "annotations": types.ToolAnnotations(
        title=title, read_only_hint=read_only, destructive_hint=destructive, idempotent_hint=idempotent,
        open_world_hint=open_world,
    )}


TOOLS = [
    types.Tool(
        name="run",
        # It runs anything: destructive, and reaching the world, as the spec's defaults say.
        **_named("Run a shell command", read_only=False, destructive=True, idempotent=False, open_world=True),
        description=(
            "Run a shell command and get an honest result: status, exit code, clean output. By default it runs "
            "in this connection's persistent shell, so cd, variables and venvs persist; `fresh: true` runs it in "
            "a new shell; `shell_name` runs it in the named shell shared with `safe-run --in NAME` and other "
            "connections (it outlives this connection; `close` ends it). Still running after yield_after seconds: status `running` with a session_id (poll, "
            "send, stop). Waiting for input: `input_required` with a session_id; answer with send."
        ),
        input_schema={
            "type": "object",
            "required": ["command"],
            "additionalProperties": False,
            "properties": {
                "command": {
                    "type": "string", "minLength": 1, "maxLength": calls.MAX_COMMAND_BYTES,
                    "description": "The command line, as typed in a shell (at most 1 MiB).",
                },
                "fresh": {"type": "boolean", "default": False, "description": "Run in a new shell, not the persistent one."},
                "shell_name": {
                    "type": "string", "pattern": "^" + SHELL_NAME.pattern.removesuffix(r"\Z") + "$",
                    "description": "Run in the persistent shell of this name (as `safe-run --in NAME`), started on first use.",
                },
                "timeout": {**_NUMBER, "description": "Stop the command after this many seconds (0: no limit)."},
                "yield_after": {
                    **_NUMBER, "default": DEFAULT_YIELD_AFTER_S,
                    "description": "Answer `running` with a session_id after this many seconds (0: wait for the end).",
                },
                "cwd": {"type": "string", "description": "Directory for this command alone."},
                "env": {
                    "type": "object", "additionalProperties": {"type": "string"},
                    "description": "Variables for this command alone.",
                },
            },
        },
        output_schema=RESULT_SCHEMA,
    ),
    types.Tool(
        name="poll",
        **_named("Poll a session", read_only=True, destructive=False, idempotent=False, open_world=False),
        description="New output of a running command and where it stands; its final result once it ended.",
        input_schema={
            "type": "object", "required": ["session_id"], "additionalProperties": False,
            "properties": {"session_id": _SESSION_ID, "wait": {**_WAIT, "default": 0}},
        },
        output_schema=RESULT_SCHEMA,
    ),
    types.Tool(
        name="send",
        # What is typed is the command's to act on: as open and as destructive as `run`.
        **_named("Type into a session", read_only=False, destructive=True, idempotent=False, open_world=True),
        description=(
            "Type text (and Enter) into a session's command while it reads its terminal, and/or press keys "
            "(ctrl-<letter>, enter, tab, esc, up, down, ...); answers like poll. A text ending in one "
            "newline is that line: the newline is its Enter."
        ),
        input_schema={
            "type": "object", "required": ["session_id"], "additionalProperties": False,
            "properties": {
                "session_id": _SESSION_ID,
                "text": {
                    "type": "string",
                    "description": "Text to type, typed only while the command reads its terminal (else refused, "
                                   "and said why).",
                },
                "keys": {
                    "type": "array", "items": {"type": "string"},
                    "description": "Keys to press after the text, by name: ctrl-c, ctrl-d (end of input), enter, tab, "
                                   "esc, up, down, left, right, backspace, ...",
                },
                "enter": {
                    "type": "boolean", "default": True,
                    "description": "Press Enter after the text (false: the text alone, one key for a key-reading prompt).",
                },
                "wait": {**_WAIT, "default": 1.0},
            },
        },
        output_schema=RESULT_SCHEMA,
    ),
    types.Tool(
        name="stop",
        **_named("Stop a session", read_only=False, destructive=True, idempotent=True, open_world=False),
        description="End a session's command and everything it started; its final result.",
        input_schema={
            "type": "object", "required": ["session_id"], "additionalProperties": False,
            "properties": {"session_id": _SESSION_ID},
        },
        output_schema=RESULT_SCHEMA,
    ),
    types.Tool(
        name="close",
        **_named("Close a named shell", read_only=False, destructive=True, idempotent=True, open_world=False),
        description="End the named persistent shell and everything it started; its last result, with what was ended.",
        input_schema={
            "type": "object", "required": ["shell_name"], "additionalProperties": False,
            "properties": {"shell_name": {"type": "string", "description": "The shell's name (`shell_name` of run)."}},
        },
        output_schema=RESULT_SCHEMA,
    ),
    types.Tool(
        name="sessions",
        **_named("List sessions and shells", read_only=True, destructive=False, idempotent=True, open_world=False),
        description="This user's persistent shells and sessions, running and finished: id, status, age, command.",
        input_schema={"type": "object", "additionalProperties": False, "properties": {}},
        output_schema=SESSIONS_SCHEMA,
    ),
]
# Each tool's arguments, from its input schema, which allows no others.
INPUT_PROPERTIES: dict[str, frozenset[str]] = {
    tool.name: frozenset(tool.input_schema.get("properties", {})) for tool in TOOLS
}


class BadArguments(ValueError):
    """A tool was called with arguments it cannot take."""


@dataclass
class Connection:
    """What one client started: its persistent shell, and the sessions to stop when it goes.

    A command of a named shell is the shell's, not the connection's: it is left running.
    """

    shell_name: str = field(default_factory=lambda: f"mcp-{os.urandom(8).hex()}")
    sessions: set[str] = field(default_factory=set)
    shells_used: set[str] = field(default_factory=set)
    # The session each shell name had at this connection's last call to it, asked again at once.
    warm: dict[str, Session] = field(default_factory=dict)
    # The connection to each shell's holder, kept from one call to the next (`client.Line`).
    lines: dict[str, client.Line] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def line_to(self, shell: str) -> client.Line:
        line = self.lines.get(shell)
        if line is None:
            line = self.lines[shell] = client.Line()
        return line

    def saw(self, result: Result) -> Result:
        if result.session_id is not None and result.shell_name in (None, self.shell_name):
            with self.lock:
                self.sessions.add(result.session_id)
        return result

    async def ask(self, work: Callable[[], Result]) -> Result:
        """A poll, send or stop in a worker thread; cancelled, the call only stops waiting for it."""
        return self.saw(await anyio.to_thread.run_sync(work, abandon_on_cancel=True))

    def close(self) -> str | None:
        """Stop every session this connection started, then close its shell; each bounded. A close
        that fails is tried again; what still failed is said (None: all done)."""
        for line in self.lines.values():
            line.close()
        with self.lock:
            pending = list(self.sessions)
        for session_id in pending:
            try:
                calls.stop(session_id, GONE)
            except (SessionError, OSError):
                pass  # ended already, or its holder is gone: nothing of it runs
        problem = None
        for attempt in range(CLOSE_ATTEMPTS):
            try:
                calls.close_shell(self.shell_name)
                return None
            except SessionError as exc:
                if exc.status == ExitStatus.NO_SESSION:
                    return None  # never started, or ended by itself
                problem = str(exc)
            except OSError as exc:
                problem = exc.strerror or str(exc)
            time.sleep(CLOSE_RETRY_S * (attempt + 1))
        return f"the shell {self.shell_name} could not be closed: {problem}"


def _arguments(params: types.CallToolRequestParams) -> dict[str, Any]:
    arguments = params.arguments or {}
    if not isinstance(arguments, dict):
        raise BadArguments("arguments must be an object")
    return arguments


def _string(arguments: dict[str, Any], key: str, required: bool = False) -> str | None:
    value = arguments.get(key)
    if value is None:
        if required:
            raise BadArguments(f"{key!r} is required")
        return None
    if not isinstance(value, str):
        raise BadArguments(f"{key!r} must be a string")
    return value


def _seconds(arguments: dict[str, Any], key: str, default: float | None) -> float | None:
    value = arguments.get(key)
    if value is None:
        value = default
    try:
        return calls.seconds(value, key)
    except (TypeError, ValueError) as exc:
        raise BadArguments(str(exc)) from None


def _flag(arguments: dict[str, Any], key: str, default: bool) -> bool:
    value = arguments.get(key)
    if value is None:  # absent, or null, as adapters send every optional argument: the default
        return default
    if not isinstance(value, bool):
        raise BadArguments(f"{key!r} must be true or false")
    return value


# Python's names in the library's messages, as JSON names them.
_JSON_TYPES = {"NoneType": "null", "str": "string", "int": "number", "float": "number", "bool": "boolean",
               "list": "array", "dict": "object"}
_PYTHON_TYPE = re.compile(r"\bnot (NoneType|str|int|float|bool|list|dict)$")


def _in_json_terms(message: str) -> str:
    """A message of the library's checks, its types named as a JSON caller knows them ("not str",
    "or None", "a mapping")."""
    message = _PYTHON_TYPE.sub(lambda match: f"not {_JSON_TYPES[match.group(1)]}", message)
    return message.replace(" or None,", " or null,").replace("a mapping of", "an object of")


def _summary(result: Result) -> str:
    """One line for a model that reads text only; the structured content has everything."""
    line = result.status.value
    if result.exit_code is not None:
        line += f", exit code {result.exit_code}"
    if result.session_id is not None:
        line += f", session {result.session_id}"
    if result.message:
        line += f": {result.message}"
    return line + (f"\n{result.output}" if result.output else "")


def _answer(result: Result) -> types.CallToolResult:
    """The result as structured content, and as text: a summary line with the output, for a model
    to read, then the structured content serialized (as the spec asks of a tool that returns it),
    less the output already given, for hosts that pass on only text (cwd, shell_name, killed)."""
    structured = result.to_dict()
    rest = json.dumps({key: value for key, value in structured.items() if key != "output"}, separators=(",", ":"))
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_summary(result)), types.TextContent(type="text", text=rest)],
        structured_content=structured,
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class Call:
    """The blocking steps of one `run`, in worker threads. Cancelled (the client cancelled the
    call, or went away), it asks its command to stop and waits (bounded) for that, so that a
    cancelled `run` leaves nothing running; unless the command is not the connection's (`owned`
    false: a named shell's), which it leaves running and only stops waiting for."""

    def __init__(self, connection: Connection, owned: bool = True) -> None:
        self.connection = connection
        self.owned = owned
        self._wakeup: Wakeup | None = None
        self.session_id: str | None = None
        self.warm: Session | None = None  # the shell asked from the event loop, while it is

    @property
    def wakeup(self) -> Wakeup:
        """What a step's worker watches besides its work, made on first need and only in the event
        loop's thread (a step hands it to its worker): most calls, a warm shell's command asked
        from the loop itself, need none, and a pipe made and closed again for nothing was 2% of
        the server's work on each."""
        if self._wakeup is None:
            self._wakeup = Wakeup()
        return self._wakeup

    def end_now(self) -> None:
        """The server stops: the command is stopped as SIGTERM would stop it (a named shell's is
        left running, and the call stops waiting), so that the call is answered before the
        server goes."""
        if not self.owned:
            self.wakeup.release()
            return
        self.wakeup.trigger(signal.SIGTERM)
        warm = self.warm
        if warm is not None:
            threading.Thread(target=_interrupt, args=(warm, "SIGTERM"), daemon=True).start()

    async def step(self, work: Callable[[Wakeup], Result]) -> Result:
        done = threading.Event()
        box: list[Result | BaseException] = []
        wakeup = self.wakeup

        def worker() -> None:
            try:
                box.append(self.connection.saw(work(wakeup)))
            except BaseException as exc:  # handed to the awaiting task
                box.append(exc)
            finally:
                done.set()

        try:
            await anyio.to_thread.run_sync(worker, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                await self._stop(done, box)
            raise
        answer = box[0]
        if isinstance(answer, BaseException):
            raise answer
        self.session_id = answer.session_id
        return answer

    async def in_warm_shell(self, shell: str, request: RunRequest, bound: float | None, scope: Scope) -> Result | None:
        """The command run in the warm shell `shell`, its holder asked from the event loop itself,
        without a worker thread (two hand-overs between threads, 0.1-0.2 ms a call). None when
        the shell is not warm, or its holder takes no caller at this moment (many at once, or it
        is ending): `step` then does what that calls for."""
        warm = calls.warm_shell_run(shell, request, bound, scope, self.connection.warm.pop(shell, None))
        if warm is None:
            return None
        result = await self._ask_warm(*warm, self.connection.line_to(shell))
        if result is not None:
            self.connection.warm[shell] = warm[0]
        return result

    async def _ask_warm(self, session: Session, request: wire.Run, kept: client.Line) -> Result | None:
        """`kept`: the connection to the holder kept from this connection's last call to the shell,
        which carries the request when it still can, and keeps this call's if the holder does."""
        self.warm = session
        conn: socket.socket | None = None
        keep = False
        try:
            with anyio.fail_after(client.answer_bound(request)):
                conn = await _carrying(session, wire.encode_request(request), kept)
                if conn is None:
                    return None  # the holder is closing: `step` finds what it left
                line = await _received(conn)
            message = None if line is None else wire.decode(line)
            keep = message is not None and message.pop(wire.KEPT, None) is True
        except TimeoutError:
            raise client.unresponsive(session, request) from None
        except anyio.get_cancelled_exc_class():
            if self.owned:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_interrupt, session)
            raise
        finally:
            self.warm = None
            if conn is not None and keep:
                kept.keep(session, conn)
            elif conn is not None:
                conn.close()
        if message is None:  # it hung up after taking the command: what it left says how it ended
            result = await anyio.to_thread.run_sync(client.answered, session, request, None)
        else:
            result = client.answered(session, request, message)
        if client.gone_first(result):
            return None  # the shell ended before the command's turn: `step` starts the next one
        self.session_id = result.session_id
        return self.connection.saw(result)

    async def _stop(self, done: threading.Event, box: list[Result | BaseException]) -> None:
        if not self.owned:
            self.wakeup.release()
            await anyio.to_thread.run_sync(done.wait, STOP_BOUND_S)
            return
        self.wakeup.trigger(signal.SIGINT)  # a step that started the command interrupts it itself
        await anyio.to_thread.run_sync(done.wait, STOP_BOUND_S)
        last = box[0] if box else None
        session_id = last.session_id if isinstance(last, Result) else self.session_id
        if session_id is not None:
            try:
                await anyio.to_thread.run_sync(lambda: calls.stop(session_id, CANCELLED))
            except (SessionError, OSError):
                pass

    def close(self) -> None:
        if self._wakeup is not None:
            self._wakeup.close()


async def _carrying(session: Session, data: bytes, kept: client.Line) -> socket.socket | None:
    """A connection to `session`'s holder with `data` sent on it: the one kept from the last call
    while the holder still takes it, else a new one; None when no holder takes it (a full queue of
    callers refuses at once, never blocking the loop) or it is closing."""
    conn = kept.take(session)
    if conn is not None:
        if await _sent(conn, data):
            return conn
        conn.close()  # closed after all: the request did not go, and a new connection carries it
    conn = session.connect(0.0)
    if conn is not None and not await _sent(conn, data):
        conn.close()
        return None
    return conn


async def _sent(conn: socket.socket, data: bytes) -> bool:
    """Whether all of `data` went out on the non-blocking `conn` (False: the other end closed)."""
    view = memoryview(data)
    while view:
        try:
            view = view[conn.send(view):]
        except BlockingIOError:
            await anyio.wait_writable(conn)
        except OSError:
            return False
    return True


async def _received(conn: socket.socket) -> bytes | None:
    """The one line the other end answers on `conn`, or None if it hung up first."""
    buffer = bytearray()
    while b"\n" not in buffer and len(buffer) < wire.MAX_MESSAGE:
        await anyio.wait_readable(conn)
        try:
            chunk = conn.recv(1 << 16)
        except BlockingIOError:
            continue
        except OSError:
            return None
        if not chunk:
            return None
        buffer += chunk
    return bytes(buffer).partition(b"\n")[0]


def _interrupt(session: Session, signal_name: str = "SIGINT") -> None:
    """A cancelled call's command in its own shell: stopped as Ctrl-C would (or the signal named),
    then for good if it goes on (each bounded); as `step` does through its wakeup."""
    try:
        result = client.interrupt(session, signal_name)
        if result.session_id is not None and result.status is Status.RUNNING:
            calls.stop(result.session_id, CANCELLED)
    except (SessionError, OSError):
        pass  # ended already, or its holder is gone: nothing of it runs


ConnectionOf = Callable[[ServerRequestContext[Any, Any]], Connection]
ToolCall = Callable[[ServerRequestContext[Any, Any], Connection, dict[str, Any]], Awaitable[types.CallToolResult]]


class Tools:
    """The tools, each call made for the connection `connection_of` finds for its request."""

    def __init__(
        self, connection_of: ConnectionOf, cwd: str, launcher: Launcher,
        own_shell_idle: float | None = DEFAULT_CONNECTION_IDLE_S,
    ) -> None:
        self.connection_of = connection_of
        self.cwd = cwd
        self.launcher = launcher  # how a new shell's or a fresh run's holder is started
        self.running: set[Call] = set()  # the `run` calls in flight
        # A connection's own shell closes after this long without a command (None: never): a
        # client that never ends its session (no DELETE) leaves it, where a named shell is meant to stay.
        self.own_shell_idle = own_shell_idle
        # Each listed tool (TOOLS) and the method that answers it.
        self.handlers: dict[str, ToolCall] = {
            "run": self.tool_run, "poll": self.tool_poll, "send": self.tool_send, "stop": self.tool_stop,
            "close": self.tool_close, "sessions": self.tool_sessions,
        }

    async def call(self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        handler = self.handlers.get(params.name)
        if handler is None:  # the spec's protocol error, not a tool's result
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}: the tools are "
                                                 f"{', '.join(tool.name for tool in TOOLS)}")
        try:
            arguments = _arguments(params)
            unknown = sorted(set(arguments) - set(INPUT_PROPERTIES[params.name]))
            if unknown:
                raise BadArguments(f"no such argument: {', '.join(map(repr, unknown))} (see the tool's input schema)")
            answer: types.CallToolResult = await handler(ctx, self.connection_of(ctx), arguments)
            return answer
        except (BadArguments, ValueError, TypeError) as exc:
            return _error(f"{params.name}: {_in_json_terms(str(exc))}")
        except SessionError as exc:
            return _error(str(exc))
        except OSError as exc:
            return _error(f"{params.name}: {exc.strerror or exc}")

    async def tool_run(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        from ..session.client import check_name

        command = calls.command(_string(arguments, "command", required=True) or "")
        fresh = _flag(arguments, "fresh", False)
        name = _string(arguments, "shell_name")
        if name is not None:
            if fresh:
                raise BadArguments("'fresh' and 'shell_name' exclude each other")
            check_name(name)
        timeout = _seconds(arguments, "timeout", None)
        bound = _seconds(arguments, "yield_after", DEFAULT_YIELD_AFTER_S)
        scope = calls.scope(_string(arguments, "cwd"), arguments.get("env"))
        own = not fresh and name is None
        request = calls.request(
            command, cwd=scope.cwd if fresh and scope.cwd else self.cwd, env=scope.env if fresh else None,
            timeout=timeout, idle_expire=self.own_shell_idle if own else DEFAULT_IDLE_EXPIRE_S, caller="mcp",
        )
        progress = ctx.meta is not None and ctx.meta.get("progress_token") is not None
        shell = None if fresh else name or connection.shell_name
        # A shell the client named is not the connection's: what runs in it outlives the call.
        call = Call(connection, owned=name is None)
        self.running.add(call)
        try:
            return _answer(await self._follow(ctx, call, request, shell, scope, bound, progress))
        finally:
            self.running.discard(call)

    async def end_running(self, within: float) -> bool:
        """The server stops: each `run` in flight ends its command and is answered, for `within`
        seconds at most; what is not answered by then is cut with the connection. Whether all were."""
        for call in list(self.running):
            call.end_now()
        with anyio.move_on_after(within):
            while self.running:
                await anyio.sleep(0.02)
        return not self.running

    async def _follow(
        self, ctx: ServerRequestContext[Any, Any], call: Call, request: RunRequest, shell: str | None,
        scope: Scope, bound: float | None, progress: bool,
    ) -> Result:
        """The run (in `shell`, or a fresh one for None) to its end or its bound; with progress asked
        for, in short steps that report output."""
        step = bound if not progress else min(bound or PROGRESS_STEP_S, PROGRESS_STEP_S)
        wait = MAX_WAIT_S if step is None else step
        try:
            if shell is None:
                result = await call.step(lambda wakeup: calls.run_in_session(request, wait, self.launcher, wakeup=wakeup))
            else:
                started = shell in call.connection.shells_used
                call.connection.shells_used.add(shell)
                answer = await call.in_warm_shell(shell, request, step, scope) if started else None
                result = answer if answer is not None else await call.step(
                    lambda wakeup: calls.run_in_shell(
                        shell, request, step, scope, started=started, wakeup=wakeup, launcher=self.launcher,
                    )
                )
            if progress:
                result = await self._report(ctx, call, result, bound)
            return result
        finally:
            call.close()

    async def _report(
        self, ctx: ServerRequestContext[Any, Any], call: Call, result: Result, bound: float | None
    ) -> Result:
        """Poll in short steps, each new piece of output a progress notification, to the end or the bound.

        An answer still running at the bound holds all the output since the start, as one long
        wait would have.
        """
        from ..session.client import follow

        deadline = None if bound is None else time.monotonic() + bound - PROGRESS_STEP_S
        shown = ""
        reported = 0
        while result.session_id is not None and result.status is Status.RUNNING:
            if result.output:
                shown += result.output
                reported += 1
                await ctx.session.report_progress(reported, None, result.output)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return replace(result, output=shown)
            wait = PROGRESS_STEP_S if remaining is None else min(PROGRESS_STEP_S, remaining)
            session_id = result.session_id
            result = await call.step(lambda _: follow(session_id, wait))
        return replace(result, output=shown + result.output) if result.session_id is not None else result

    async def tool_poll(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        session_id = _string(arguments, "session_id", required=True) or ""
        wait = _seconds(arguments, "wait", 0.0) or 0.0
        return _answer(await connection.ask(lambda: calls.poll(session_id, wait)))

    async def tool_send(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        session_id = _string(arguments, "session_id", required=True) or ""
        text = _string(arguments, "text")
        keys = arguments.get("keys") or []
        if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
            raise BadArguments("'keys' must be a list of key names")
        enter = _flag(arguments, "enter", True)
        wait = _seconds(arguments, "wait", 1.0) or 0.0
        return _answer(await connection.ask(lambda: calls.send(session_id, text, keys, enter=enter, wait_s=wait)))

    async def tool_stop(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        session_id = _string(arguments, "session_id", required=True) or ""
        return _answer(await connection.ask(lambda: calls.stop(session_id)))

    async def tool_close(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        name = _string(arguments, "shell_name", required=True) or ""
        return _answer(await anyio.to_thread.run_sync(lambda: calls.close_shell(name)))

    async def tool_sessions(
        self, ctx: ServerRequestContext[Any, Any], connection: Connection, arguments: dict[str, Any]
    ) -> types.CallToolResult:
        from ..session.client import listing

        rows = await anyio.to_thread.run_sync(listing, time.time())
        text = f"{len(rows)} sessions; this connection's shell is {connection.shell_name!r} " + _standing(
            [row for row in rows if row.get("shell_name") == connection.shell_name and not row.get("shell_id")]
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content={"schema_version": SCHEMA_VERSION, "sessions": rows},
        )


def _standing(shells: list[dict[str, object]]) -> str:
    """Where the connection's shell stands, from its rows in `sessions` (a shell that ended and the
    one started after it share the name): the live one's, else the first listed."""
    if not shells:
        return "(not started yet)"
    live = [row for row in shells if row.get("status") != "closed"]
    row = (live or shells)[0]
    return f"({row['status']}, in {row['cwd']})" if row.get("cwd") else f"({row['status']})"


async def _list_tools(ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def mcp_server(tools: Tools) -> Server[Any]:
    return Server(
        "safe-run", version=__version__, on_list_tools=_list_tools, on_call_tool=tools.call,
        instructions=(
            "Run shell commands with honest results. `run` uses a persistent shell per connection, "
            "or the named shell `shell_name` shared with other connections and the command line."
        ),
    )


def serve(cwd: str, wakeup: Wakeup | None = None, own_shell_idle: float | None = DEFAULT_CONNECTION_IDLE_S) -> None:
    """Serve one client over stdin and stdout until it goes away, or a stop request on `wakeup`
    (the verb's SIGINT, SIGTERM, SIGHUP); then end what it left running."""
    connection = Connection()
    launcher = ForkServer().open()
    tools = Tools(lambda ctx: connection, cwd, launcher, own_shell_idle)
    server = mcp_server(tools)

    async def main() -> None:
        async with anyio.create_task_group() as group:
            if wakeup is not None:
                group.start_soon(_stop_on_request, wakeup, group.cancel_scope, tools)
            answers = StdoutLines()
            async with stdio_server(stdin=StdinLines(answers), stdout=answers) as (read_stream, write_stream):  # type: ignore[arg-type]
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()

    blocking = os.get_blocking(0), os.get_blocking(1)
    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        if not _client_gone(group):
            raise
        _quiet_stdout()  # a client going away mid-answer is the normal end of a stdio server
    finally:
        os.set_blocking(0, blocking[0])
        os.set_blocking(1, blocking[1])
        say(connection.close())
        launcher.close()


def _client_gone(error: BaseException) -> bool:
    """Whether every error in `error` says the client's end of a pipe is closed."""
    if isinstance(error, BaseExceptionGroup):
        return all(_client_gone(inner) for inner in error.exceptions)
    return isinstance(error, (BrokenPipeError, ConnectionResetError, anyio.BrokenResourceError, anyio.ClosedResourceError))


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush finds no broken pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def say(problem: str | None) -> None:
    """What could not be cleaned up, on stderr (the host's log); nothing when all went."""
    if problem is not None:
        print(f"safe-run: {problem}", file=sys.stderr, flush=True)


# The answer to a line that is not JSON, which has no id to answer to (JSON-RPC's parse error).
PARSE_ERROR = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: not JSON"}})


class StdinLines:
    """The client's messages, a line each, read from descriptor 0 in the event loop.

    The SDK reads stdin in a worker thread, which nothing can cancel: a stop signal could then
    end the serving only once the client wrote again. Waiting for input in the loop can be cancelled.
    A line that is not JSON is answered here with a parse error (the SDK would drop it without a
    word); a blank line is no message.
    """

    def __init__(self, answers: StdoutLines) -> None:
        os.set_blocking(0, False)
        self.buffer = b""
        self.answers = answers

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = (await self._line()).decode("utf-8", "replace")
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                await self.answers.write(PARSE_ERROR + "\n")
                continue
            return line + "\n"

    async def _line(self) -> bytes:
        while b"\n" not in self.buffer:
            try:
                await anyio.wait_readable(0)
            except OSError:
                pass  # a regular file or /dev/null: not pollable, and reading it never blocks
            try:
                chunk = os.read(0, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                if not self.buffer:
                    raise StopAsyncIteration
                chunk = b"\n"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


class StdoutLines:
    """The answers, written to descriptor 1 from the event loop.

    The SDK writes and flushes each answer in a worker thread (two hand-overs between threads per
    answer, a good part of a warm call); a pipe that is full is waited on in the loop instead.
    """

    def __init__(self) -> None:
        os.set_blocking(1, False)

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                data = data[os.write(1, data):]
            except BlockingIOError:
                await anyio.wait_writable(1)

    async def flush(self) -> None:
        """Nothing is kept back: `write` returns once all of it is in the pipe."""


async def stop_requested(wakeup: Wakeup) -> None:
    """Return once a stop request (a signal the verb keeps) arrived on `wakeup`."""
    while not wakeup.pending:
        await anyio.wait_readable(wakeup.fd)
        wakeup.drain()


async def _stop_on_request(wakeup: Wakeup, serving: anyio.CancelScope, tools: Tools) -> None:
    await stop_requested(wakeup)
    await tools.end_running(END_RUNNING_S)
    serving.cancel()

"""How a caller and a holder talk: one JSON object per line over the session's Unix socket.

A caller sends one request and reads one answer; the holder closes the connection after answering,
unless the answer says it keeps it (`KEPT`) for the caller's next request.
A request is one of the typed messages below, built by the caller and checked by the holder on
arrival (`decode_request`): a message that is not one of them, or whose fields are not what it
says, is refused without being acted on. The answer is a result's JSON object.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import time
from dataclasses import dataclass, field, fields
from collections.abc import Callable
from typing import Any, TypeGuard

# A request is a few words, or the text of a `send`; anything longer is not from safe-run.
MAX_MESSAGE = 8 * 1024 * 1024
# The longest wait a caller may ask for (a day); a caller's own bound is this plus a margin.
MAX_WAIT_S = 86400.0
# Said in an answer, beside the result, when the holder keeps the connection open for the
# caller's next request (see `callers`); a caller that does not know of it closes it.
KEPT = "connection_kept"


# In a persistent shell every command has an id of its own; `about` names the command a request
# is about (None: the session's own command, in a one-shot session; the shell, in a named one).


@dataclass(frozen=True)
class Poll:
    """The output since the last answer and where the command stands; waits up to `wait` for its
    end or an input wait. `first`: the call that started the session or the named shell's first
    command, about that command (it waits for the holder)."""

    wait: float = 0.0
    first: bool = False
    about: str | None = None


@dataclass(frozen=True)
class Send:
    """Type `text`, then press `keys` (already as the bytes a terminal sends); `queue`: type it at the
    command's next read rather than refusing it now. Then answer as a poll of `wait` does."""

    text: str = ""
    keys: str = ""
    queue: bool = False
    wait: float = 1.0
    about: str | None = None


@dataclass(frozen=True)
class Stop:
    """End the command and what it started, and answer with its final result; `why`, when the
    caller has a reason of its own to give (its client went away)."""

    about: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class Interrupt:
    """Stop the command as `signal` to safe-run would (the caller that started it got it).
    `typed`: a person at the caller's terminal pressed Ctrl-C, which the command gets as its
    interrupt character while it runs, as at their own run; answered at once then, the output
    left for the caller's own answer."""

    signal: str = "SIGINT"
    about: str | None = None
    typed: bool = False


@dataclass(frozen=True)
class Status:
    """Where the session stands, without taking its new output (for `sessions`)."""

    about: str | None = None


@dataclass(frozen=True)
class Close:
    """A persistent shell: end it and everything it started."""


@dataclass(frozen=True)
class Run:
    """A persistent shell: run `command` next, with its own timers and output bound, and, for this
    command alone, `cwd` and `env`; answer as a poll of `wait` does."""

    command: str
    wait: float = MAX_WAIT_S
    timers: dict[str, float] = field(default_factory=dict)
    max_output: int = 1024 * 1024
    cwd: str | None = None
    env: dict[str, str] | None = None


@dataclass(frozen=True)
class Attach:
    """A person joins the terminal, whose size becomes theirs (`rows`, `columns`); `watch`: only
    to see it, keys not taken, size not changed. The connection then carries frames (see
    `onlookers`), not one answer. `about`: a named shell's command whose end ends the attach
    (None: the session's end does, or the person leaving)."""

    watch: bool = False
    rows: int = 24
    columns: int = 80
    about: str | None = None


Request = Poll | Send | Stop | Interrupt | Status | Close | Run | Attach
_BY_NAME: dict[str, type[Request]] = {
    "poll": Poll, "send": Send, "stop": Stop, "interrupt": Interrupt, "status": Status, "close": Close, "run": Run,
    "attach": Attach,
}
_NAMES = {kind: name for name, kind in _BY_NAME.items()}
# Each request's field names, looked up once: `fields()` builds its answer anew at every call.
_FIELD_NAMES = {kind: tuple(item.name for item in fields(kind)) for kind in _BY_NAME.values()}


def encode(message: dict[str, object]) -> bytes:
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def encode_request(request: Request) -> bytes:
    """Field by field: the values are plain (strings, numbers, flat dicts), and `asdict`'s deep copy
    of them cost more than the rest of a warm call's request."""
    message: dict[str, object] = {"op": _NAMES[type(request)]}
    message.update(vars(request))
    return encode(message)


def decode(line: bytes | memoryview) -> dict[str, object] | None:
    try:
        message = json.loads(str(line, "utf-8"))
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def decode_request(line: bytes) -> Request | None:
    """The request a line holds, or None for anything that is not exactly one of them."""
    message = decode(line)
    kind = _BY_NAME.get(str(message.pop("op", ""))) if message is not None else None
    if kind is None or message is None:
        return None
    given: dict[str, Any] = {}
    for name in _FIELD_NAMES[kind]:
        if name in message:
            value = message.pop(name)
            if not _fits(name, value):
                return None
            given[name] = value
    if message:
        return None  # a field that this request does not have
    try:
        return kind(**given)
    except TypeError:  # a required field is missing
        return None


def _fits(name: str, value: object) -> bool:
    """Whether a field's value is of the type its name takes, in every message that has it; a
    field no message has is refused."""
    check = _FIELD_CHECKS.get(name)
    return check is not None and check(value)


def _number(value: object) -> TypeGuard[int | float]:
    """A JSON number: `true` is an int to Python, never a number to a caller."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag(value: object) -> bool:
    return isinstance(value, bool)


def _text(value: object) -> bool:
    return isinstance(value, str)


def _text_or_none(value: object) -> bool:
    return value is None or isinstance(value, str)


def _finite(value: object) -> bool:
    """A wait: NaN and infinity are numbers to JSON's parser, but bound no wait; nor does a whole
    number too large for a float (isfinite would raise on it)."""
    if _whole(value):
        return abs(value) <= sys.float_info.max
    return _number(value) and math.isfinite(value)


def _side(value: object) -> bool:
    """A terminal's rows or columns, bounded as an onlooker's own resize is."""
    return _whole(value) and 1 <= value <= 1000


def _output_bound(value: object) -> bool:
    """No less than any front end takes (`calls.MIN_MAX_OUTPUT`)."""
    return _whole(value) and value >= 1024


def _timers(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and (v is None or _number(v)) for k, v in value.items())


def _environment(value: object) -> bool:
    return value is None or (
        isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    )


_FIELD_CHECKS: dict[str, Callable[[object], bool]] = {
    "typed": _flag,
    "wait": _finite, "rows": _side, "columns": _side, "max_output": _output_bound,
    "first": _flag, "queue": _flag, "watch": _flag,
    "text": _text, "keys": _text, "signal": _text, "command": _text,
    "cwd": _text_or_none, "about": _text_or_none, "why": _text_or_none,
    "timers": _timers, "env": _environment,
}


def wait_of(request: Request) -> float:
    """The seconds a request may wait for its answer: from 0 to MAX_WAIT_S."""
    wait = getattr(request, "wait", 0.0)
    return min(max(float(wait), 0.0), MAX_WAIT_S)


def receive(conn: socket.socket, deadline: float | None = None) -> dict[str, object] | None:
    """The one message the other side sends, or None if it hung up first.

    With a `deadline` (time.monotonic()), raises TimeoutError once it passes without a message.
    """
    buffer = bytearray()
    complete = False  # each piece is looked at once: a megabyte answer comes in many
    while not complete and len(buffer) < MAX_MESSAGE:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no answer in time")
            conn.settimeout(remaining)
        try:
            data = conn.recv(1 << 16)
        except TimeoutError:
            raise
        except OSError:
            return None
        if not data:
            return None
        buffer += data
        complete = b"\n" in data
    end = buffer.find(b"\n")
    # Decoded where it came: a megabyte answer copied first took milliseconds more.
    return decode(memoryview(buffer)[: end if end >= 0 else len(buffer)])

"""How a caller and a holder talk: one JSON object per line over the session's Unix socket.

A caller sends one request and reads one answer; the holder closes the connection after answering.
"""

from __future__ import annotations

import json
import math
import socket
import time

# A request is a few words, or the text of a `send`; anything longer is not from safe-run.
MAX_MESSAGE = 8 * 1024 * 1024
# The longest wait a caller may ask for (a day); a caller's own bound is this plus a margin.
MAX_WAIT_S = 86400.0


def encode(message: dict[str, object]) -> bytes:
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def decode(line: bytes) -> dict[str, object] | None:
    try:
        message = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def wait_of(request: dict[str, object]) -> float:
    """The seconds a request may wait for its answer: finite, from 0 to MAX_WAIT_S."""
    wait = request.get("wait")
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not math.isfinite(wait):
        return 0.0
    return min(max(float(wait), 0.0), MAX_WAIT_S)


def text_of(request: dict[str, object], key: str) -> bytes:
    """Text to type, as the bytes a terminal gets."""
    value = request.get(key)
    return value.encode("utf-8", "replace") if isinstance(value, str) else b""


def receive(conn: socket.socket, deadline: float | None = None) -> dict[str, object] | None:
    """The one message the other side sends, or None if it hung up first.

    With a `deadline` (time.monotonic()), raises TimeoutError once it passes without a message.
    """
    buffer = bytearray()
    while b"\n" not in buffer and len(buffer) < MAX_MESSAGE:
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
    line, _, _ = bytes(buffer).partition(b"\n")
    return decode(line)

"""How a caller and a holder talk: one JSON object per line over the session's Unix socket.

A caller sends one request and reads one answer; the holder closes the connection after answering.
"""

from __future__ import annotations

import json
import socket

# A request is a few words, or the text of a `send`; anything longer is not from safe-run.
MAX_MESSAGE = 8 * 1024 * 1024


def encode(message: dict[str, object]) -> bytes:
    return (json.dumps(message, ensure_ascii=False) + "\n").encode("utf-8")


def decode(line: bytes) -> dict[str, object] | None:
    try:
        message = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def receive(conn: socket.socket) -> dict[str, object] | None:
    """The one message the other side sends, or None if it hung up first."""
    buffer = bytearray()
    while b"\n" not in buffer and len(buffer) < MAX_MESSAGE:
        try:
            data = conn.recv(1 << 16)
        except OSError:
            return None
        if not data:
            return None
        buffer += data
    line, _, _ = bytes(buffer).partition(b"\n")
    return decode(line)

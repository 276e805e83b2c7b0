"""Who is at the other end of a Unix socket: what a holder asks of each caller, and a warm call of
the process that listens, before anything is handed over. It imports only what Python has loaded
at start-up already, since a warm call's client pays for every import."""

from __future__ import annotations

import _socket
import sys


def peer(conn: _socket.socket) -> tuple[int, int]:
    """The pid and uid of the process at the other end, as the kernel gives them (OSError when it
    cannot)."""
    credentials = conn.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    pid, uid = (int.from_bytes(credentials[at:at + 4], sys.byteorder, signed=True) for at in (0, 4))
    return pid, uid

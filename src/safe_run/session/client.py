"""The caller's side of a session: start one, ask its holder, or read what it left.

A holder that has gone away is not an error by itself: a finished command's holder leaves its
result in the session directory and exits. Only a holder gone without a result is reported, once,
and its leftovers are removed.
"""

from __future__ import annotations

import select
import signal
import socket
from dataclasses import replace

from ..result import ExitStatus, Result
from ..runner import RunRequest, signals_to_fd
from . import SessionError, wire
from .holder import NOT_TYPED, detach, with_note
from .store import Session, SessionStore


def start_session(request: RunRequest, yield_after: float) -> Result:
    """Run the command in a new session; answer at its end or after `yield_after` seconds.

    A signal to this caller while it waits (Ctrl-C) stops the command, as in a foreground run.
    """
    store = SessionStore.open()
    session = store.create(request.command)
    detach(session, replace(request, hold_on_input=True))
    return _ask_interruptibly(session, {"op": "poll", "wait": yield_after, "first": True})


def ask(session_id: str, request: dict[str, object]) -> Result:
    """One request to a session's holder, or the result it left once its command ended."""
    return _request(SessionStore.open().get(session_id), request)


def _request(session: Session, request: dict[str, object]) -> Result:
    conn = _send(session, request)
    if conn is None:
        return _unanswered(session, request)
    with conn:
        return _answer(session, conn, request)


def _send(session: Session, request: dict[str, object]) -> socket.socket | None:
    """A connection that carries the request, or None when no holder takes it any more."""
    conn = session.connect()
    if conn is None:
        return None
    try:
        conn.sendall(wire.encode(request))
    except OSError:
        conn.close()  # the holder is closing: what it left says how the command ended
        return None
    return conn


def _answer(session: Session, conn: socket.socket, request: dict[str, object]) -> Result:
    answer = wire.receive(conn)
    return Result.from_dict(answer) if answer is not None else _unanswered(session, request)


def _unanswered(session: Session, request: dict[str, object]) -> Result:
    """The holder went away without answering: the result it left, and typed text never arrived."""
    result = _left_result(session)
    return with_note(result, NOT_TYPED) if request.get("op") == "send" else result


def _left_result(session: Session) -> Result:
    """The result a finished holder saved; a holder gone without one crashed."""
    result = session.load_result()
    if result is None and "holder_pid" not in session.meta():
        raise SessionError(f"session {session.id} is still starting; ask again in a moment", ExitStatus.FAILURE)
    if result is None:
        session.remove()
        raise SessionError(f"session {session.id} ended without a result: its holder process died", ExitStatus.FAILURE)
    return result


def _ask_interruptibly(session: Session, request: dict[str, object]) -> Result:
    with signals_to_fd() as (wake_fd, signals):
        conn = _send(session, request)
        if conn is None:
            return _unanswered(session, request)
        with conn:
            while True:
                ready, _, _ = select.select([conn, wake_fd], [], [])
                if conn in ready:
                    return _answer(session, conn, request)
                if signals:
                    return _request(session, {"op": "interrupt", "signal": signal.Signals(signals[0]).name})


def listing(now: float) -> list[dict[str, object]]:
    """Every session of this user: id, command, status (asked of live holders), exit code, age."""
    rows = []
    for session in SessionStore.open().all():
        meta = session.meta()
        result = session.load_result()
        if result is None:
            try:
                result = _request(session, {"op": "status"})
            except SessionError:
                continue  # its holder died just now; the store has removed it
        started = meta.get("started")
        rows.append({
            "session_id": session.id,
            "command": meta.get("command", ""),
            "status": result.status.value,
            "exit_code": result.exit_code,
            "age_s": round(now - started, 1) if isinstance(started, (int, float)) else None,
        })
    return rows

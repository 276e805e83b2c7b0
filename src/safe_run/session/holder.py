"""The session holder: a detached process that owns one command's terminal and answers callers.

It drives the same `Run` a foreground call does, so strategies, fallbacks, --timeout and clean-up
are the foreground's; what it adds is the socket. Callers ask to poll (now, or waiting for the end,
an input wait or their time limit), to send input, or to stop. Waiting is done by the run loop's
own select, which watches the terminal, the socket and every caller together: an end is answered
the moment it is seen.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..output import Chunks
from ..process_title import name_holder
from ..result import Result, Status, error_result
from ..runner import CommandRefused, Run, RunFailed, RunRequest, signals_to_fd
from ..shells import ShellNotFound
from ..terminal import TerminalError
from ..workdir import private_workdir
from . import wire
from .store import Session

# A caller that does not read its answer within this is dropped, never waited for.
ANSWER_TIMEOUT_S = 5.0
# How long a command that ended at once waits for the caller that started it to ask.
FIRST_CALLER_WAIT_S = 5.0
NOT_TYPED = "nothing was typed: the command had already ended"


@dataclass
class Waiter:
    """A caller waiting for its answer: at `deadline`, or (None) only when the command has ended."""

    conn: socket.socket
    deadline: float | None
    first: bool = False
    note: str | None = None


class Holder:
    """Serves one session from the start of its command until its result is saved."""

    def __init__(
        self, session: Session, listener: socket.socket, request: RunRequest, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.session = session
        self.listener = listener
        self.request = request
        self._clock = clock
        self.chunks = Chunks(request.max_output)
        self.final: Result | None = None
        self.waiters: list[Waiter] = []
        self.inboxes: dict[socket.socket, bytearray] = {}
        self.handed_out = False  # a caller was given the session id, so the session must outlive the command
        self.first_answered = False

    def serve(self) -> None:
        with private_workdir(self.session.path) as workdir, signals_to_fd() as (wake_fd, signals):
            run = self._start(workdir)
            if run is not None:
                try:
                    self._follow(run, wake_fd, signals)
                finally:
                    run.close()
                self.final = run.result()
        self._finish()

    def _start(self, workdir: Path) -> Run | None:
        try:
            return Run(self.request, workdir, self._clock, on_output=self.chunks.write)
        except CommandRefused as refused:
            self.final = refused.result
        except (ShellNotFound, TerminalError, RunFailed) as exc:
            self.final = error_result(self.request.command, str(exc))
        return None

    def _follow(self, run: Run, wake_fd: int, signals: list[int]) -> None:
        while run.step(self._wait_time(), (wake_fd, self.listener.fileno(), *self._fds())) is None:
            if signals:
                run.interrupt(signals.pop(0))
            self._serve_callers(run)
            self._answer_due(run)

    def _finish(self) -> None:
        """Save the result, answer everyone, and go; a session nobody was told of goes too."""
        assert self.final is not None
        final = replace(self.final, session_id=None)
        self.session.save_result(final)
        give_up = self._clock() + FIRST_CALLER_WAIT_S
        while True:
            for waiter in list(self.waiters):
                self._answer(waiter, with_note(final, waiter.note))
            if self.first_answered or self.handed_out or self._clock() >= give_up:
                break
            self._serve_callers(None, give_up - self._clock())
        self.listener.close()
        self.session.socket_path.unlink(missing_ok=True)
        if not self.handed_out:
            self.session.remove()

    # ---- callers ------------------------------------------------------------------------------

    def _fds(self) -> list[int]:
        return [conn.fileno() for conn in self.inboxes]

    def _wait_time(self) -> float | None:
        deadlines = [w.deadline for w in self.waiters if w.deadline is not None]
        return max(0.0, min(deadlines) - self._clock()) if deadlines else None

    def _serve_callers(self, run: Run | None, timeout: float = 0.0) -> None:
        readable, _, _ = select.select([self.listener, *self.inboxes], [], [], timeout)
        for sock in readable:
            if sock is self.listener:
                self._accept()
            else:
                self._read(sock, run)

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        if _peer_uid(conn) != os.geteuid():
            conn.close()
            return
        conn.setblocking(False)
        self.inboxes[conn] = bytearray()

    def _read(self, conn: socket.socket, run: Run | None) -> None:
        try:
            data = conn.recv(1 << 16)
        except OSError:
            data = b""
        inbox = self.inboxes[conn]
        if not data or len(inbox) + len(data) > wire.MAX_MESSAGE:
            self._drop(conn)  # the caller went away (a poll interrupted): its output stays for the next
            return
        inbox += data
        if b"\n" in inbox and not any(w.conn is conn for w in self.waiters):
            request = wire.decode(bytes(inbox).partition(b"\n")[0])
            if request is None:
                self._drop(conn)
            else:
                self._handle(conn, request, run)

    def _handle(self, conn: socket.socket, request: dict[str, object], run: Run | None) -> None:
        op = request.get("op")
        now = self._clock()
        wait = request.get("wait")
        deadline = now + float(wait) if isinstance(wait, (int, float)) and wait > 0 else now
        if run is None or run.finish is not None:
            note = NOT_TYPED if op == "send" else None
            self.waiters.append(Waiter(conn, None, first=bool(request.get("first")), note=note))
            if run is None:
                return
        elif op == "poll":
            self.waiters.append(Waiter(conn, deadline, first=bool(request.get("first"))))
        elif op == "send":
            run.answer(str(request.get("text", "")).encode("utf-8"))
            self.waiters.append(Waiter(conn, deadline))
        elif op == "stop":
            run.stop()
            self.waiters.append(Waiter(conn, None))
        elif op == "interrupt":
            run.interrupt(signal.Signals.__members__.get(str(request.get("signal")), signal.SIGINT))
            self.waiters.append(Waiter(conn, None))
        elif op == "status":
            self._answer(Waiter(conn, now), self._progress(run, take_output=False))
        else:
            self._drop(conn)

    def _answer_due(self, run: Run) -> None:
        now = self._clock()
        waiting = run.tracker.waiting is not None
        for waiter in list(self.waiters):
            if waiter.deadline is not None and (waiting or now >= waiter.deadline):
                self._answer(waiter, self._progress(run))

    def _progress(self, run: Run, take_output: bool = True) -> Result:
        """Where the command stands, with the output since the last answer and what to do next."""
        result = replace(run.progress(), session_id=self.session.id)
        if take_output:
            text, dropped = self.chunks.take()
            result = replace(result, output=text, output_truncated=dropped > 0, output_dropped_bytes=dropped)
            self.handed_out = True
        return replace(result, message=_next_steps(result, self.session.id))

    def _answer(self, waiter: Waiter, result: Result) -> None:
        self.first_answered = self.first_answered or waiter.first
        conn = waiter.conn
        try:
            conn.setblocking(True)
            conn.settimeout(ANSWER_TIMEOUT_S)
            conn.sendall(wire.encode(result.to_dict()))
        except OSError:
            pass
        self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        self.waiters = [w for w in self.waiters if w.conn is not conn]
        self.inboxes.pop(conn, None)
        conn.close()


def _next_steps(result: Result, session_id: str) -> str:
    """Tell the caller exactly what to run next, and what not to."""
    if result.status is Status.INPUT_REQUIRED:
        return (
            f"{result.message}; it is still running in session {session_id}. Answer with "
            f"`safe-run send {session_id} 'TEXT'` (or `--key ctrl-c`, `--key ctrl-d`), "
            f"or end it with `safe-run stop {session_id}`"
        )
    return (
        f"still running after {result.duration_s:.1f} s in session {session_id}; the output since the last "
        f"answer is included. Wait for the end with `safe-run poll {session_id} --wait 60` (it returns as soon "
        "as the command ends or asks for input); do not run the command again"
    )


def with_note(result: Result, note: str | None) -> Result:
    if note is None:
        return result
    return replace(result, message=f"{note}. {result.message}" if result.message else note)


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    return struct.unpack("3i", creds)[1]


def detach(session: Session, request: RunRequest) -> None:
    """Start the holder in a process of its own session, free of the caller's terminal and pipes.

    The listening socket exists before the fork, so the caller can connect at once. The holder
    keeps no descriptor of the caller's (a caller reading our stdout to its end must not wait for
    the command), and its own errors go to a log in the session directory.
    """
    listener = session.listen()
    pid = os.fork()
    if pid != 0:
        listener.close()
        session.write_meta(holder_pid=pid)
        return
    status = 1
    try:
        os.setsid()
        name_holder(session.id)
        _detach_descriptors(session, listener, request)
        Holder(session, listener, request).serve()
        status = 0
    except BaseException:  # a holder must never return into the caller's code
        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(status)


def _detach_descriptors(session: Session, listener: socket.socket, request: RunRequest) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(session.path / "holder.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target, source in ((0, devnull), (1, devnull), (2, log)):
        os.dup2(source, target)
    keep = {0, 1, 2, listener.fileno()}
    if request.log is not None:
        keep.add(request.log.fileno())
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))

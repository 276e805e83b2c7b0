"""A holder's callers: accepted, read and answered over the session's socket, never waited on.

This is the socket side of a holder (`holder.py` is the run side): it accepts connections of the
session's own user only, reads each caller's one request, hands it to the holder once it is whole
and valid, keeps the callers that wait for an answer, and writes answers as far as each caller
takes them. A caller that sends nothing, or does not take its answer, within CALLER_TIMEOUT_S is
dropped; one that hangs up before its request is acted on is not acted for.

A connection carries one request and its answer, unless the holder keeps it (a named shell's
answer to a command, `Waiter.keep`): the answer then says so (`wire.KEPT`), and the caller may
send its next request on it within KEPT_FOR_S (a new connection for every call made a warm call
about 8% slower). A caller that does not know of this closes it, as ever.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Collection
from dataclasses import dataclass

from ..engine import polling
from ..peers import peer
from ..core.result import Result
from . import wire

# A caller that does not send its request, or take its answer, within this is dropped.
CALLER_TIMEOUT_S = 5.0
# Callers served at once; more wait in the socket's queue, which the kernel bounds.
MAX_CALLERS = 64
# A kept connection is closed once its caller sent nothing on it for this long.
KEPT_FOR_S = CALLER_TIMEOUT_S


@dataclass
class Waiter:
    """A caller waiting for its answer: at `deadline`, or (None) only when the command has ended."""

    conn: socket.socket
    deadline: float | None
    first: bool = False
    note: str | None = None
    closing: bool = False  # waits for the answer about the shell's close, not about a command
    keep: bool = False  # the connection stays open after the answer, for the caller's next request


@dataclass
class _Inbox:
    """What a caller sent so far, and until when it may take to send its request (None: it did)."""

    data: bytearray
    deadline: float | None


@dataclass
class _Outbox:
    """An answer the caller has not taken yet, all of it or the rest (a view: a megabyte answer
    goes out in many pieces, and the rest is not copied after each)."""

    data: memoryview
    deadline: float
    keep: bool = False


Handle = Callable[[socket.socket, wire.Request], None]


class Callers:
    """Every caller of one holder, from connection to answer."""

    def __init__(self, listener: socket.socket, clock: Callable[[], float]) -> None:
        self.listener = listener
        self._clock = clock
        self.waiters: list[Waiter] = []
        self._inboxes: dict[socket.socket, _Inbox] = {}
        self._outboxes: dict[socket.socket, _Outbox] = {}
        self._kept: dict[socket.socket, float] = {}  # answered, open for the next request until then
        self._keeping = True  # False once the holder ends
        self.first_answered = False  # the call that started the session has its answer

    @property
    def busy(self) -> bool:
        """A caller is connected: sending its request, or taking its answer."""
        return bool(self._inboxes or self._outboxes)

    @property
    def sending(self) -> bool:
        """An answer is still going out to a caller."""
        return bool(self._outboxes)

    def fds(self) -> list[int]:
        """What wakes the holder for its callers: a new connection (when there is room), a request."""
        listening = [self.listener.fileno()] if self._room() else []
        return listening + [conn.fileno() for conn in (*self._inboxes, *self._kept)]

    def writers(self) -> list[int]:
        """The callers whose answers did not fit in their sockets: the holder wakes when they take more."""
        return [conn.fileno() for conn in self._outboxes]

    def deadlines(self) -> list[float]:
        """When a waiting caller is due its answer, and when a silent one is dropped. Answers not yet
        taken need no deadline of their own: the holder wakes when a caller takes more (`writers`)."""
        due = [waiter.deadline for waiter in self.waiters if waiter.deadline is not None]
        return due + [box.deadline for box in self._inboxes.values() if box.deadline is not None]

    def sending_deadlines(self) -> list[float]:
        """When each answer still going out is given up on."""
        return [box.deadline for box in self._outboxes.values()]

    def serve(
        self, handle: Handle, timeout: float = 0.0, accept: bool = True, ready: Collection[int] | None = None,
    ) -> None:
        """Take new callers and their requests (each whole request to `handle`), waiting at most
        `timeout` for one; drop those that sent nothing in time. `ready`: the descriptors that a
        wait which watched `fds()` has just found readable, looked at without asking the kernel
        again (a loop's every turn would otherwise poll once more for nothing)."""
        listening = [self.listener] if accept and self._room() else []
        by_fd = {sock.fileno(): sock for sock in [*listening, *self._inboxes, *self._kept]}
        if ready is None:  # an answer still going out wakes the wait too, to be delivered
            readable, _ = polling.wait(by_fd, timeout, [conn.fileno() for conn in self._outboxes])
        else:
            readable = by_fd.keys() & ready
        for fd in sorted(readable):
            sock = by_fd[fd]
            if sock is self.listener:
                conn = self._accept()
                if conn is not None:  # a caller sends its request as it connects: mostly it is there
                    self._read(conn, handle)
            elif sock in self._inboxes:
                self._read(sock, handle)
            elif sock in self._kept:
                self._reopen(sock, handle)
        now = self._clock()
        for conn, box in list(self._inboxes.items()):
            if box.deadline is not None and now >= box.deadline:
                self.drop(conn)  # connected and sent no request in time
        for conn, until in list(self._kept.items()):
            if now >= until:
                self.drop(conn)

    def wait(
        self, conn: socket.socket, deadline: float | None, first: bool = False, note: str | None = None,
        closing: bool = False, keep: bool = False,
    ) -> None:
        """Keep the caller until its answer is due (`deadline`), or until the command ends (None);
        `keep`: its connection after that too, for its next request."""
        self.waiters.append(Waiter(conn, deadline, first=first, note=note, closing=closing, keep=keep))

    def answer(self, waiter: Waiter, result: Result, extra: dict[str, object] | None = None) -> None:
        """Hand the answer over as far as the caller takes it now; the rest goes out later."""
        self.first_answered = self.first_answered or waiter.first
        conn = waiter.conn
        self.waiters = [w for w in self.waiters if w.conn is not conn]
        self._inboxes.pop(conn, None)
        keep = waiter.keep and self._keeping and len(self._kept) < MAX_CALLERS
        data = wire.encode({**result.to_dict(), **(extra or {}), **({wire.KEPT: True} if keep else {})})
        self._outboxes[conn] = _Outbox(memoryview(data), self._clock() + CALLER_TIMEOUT_S, keep)
        self.deliver()

    def answer_now(
        self, conn: socket.socket, result: Result, extra: dict[str, object] | None = None, first: bool = False,
        keep: bool = False,
    ) -> None:
        self.answer(Waiter(conn, self._clock(), first=first, keep=keep), result, extra)

    def deliver(self) -> None:
        now = self._clock()
        for conn, box in list(self._outboxes.items()):
            try:
                sent = conn.send(box.data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self.drop(conn)
                continue
            box.data = box.data[sent:]
            if not box.data and box.keep:
                del self._outboxes[conn]
                self._kept[conn] = now + KEPT_FOR_S
            elif not box.data or now >= box.deadline:
                self.drop(conn)  # answered, or the caller does not read: it is not waited for

    def deliver_while_taken(self, patience: float) -> None:
        """Send the answers still going out for as long as their callers take more within
        `patience` seconds: a large answer (a megabyte of output is several socket buffers) is
        then read whole while the holder still waits, rather than after the work that follows it
        (a shell's hang-up takes milliseconds). A caller that stops taking it is not waited for."""
        self.deliver()
        while self._outboxes and polling.wait((), patience, self.writers())[1]:
            self.deliver()

    def release(self, conn: socket.socket) -> bytes:
        """No longer this module's: a connection that became something else (a person attached);
        what its caller sent after its request, read with it (the person's first keys)."""
        self.waiters = [w for w in self.waiters if w.conn is not conn]
        inbox = self._inboxes.pop(conn, None)
        self._outboxes.pop(conn, None)
        self._kept.pop(conn, None)
        return b"" if inbox is None else bytes(inbox.data).partition(b"\n")[2]

    def drop(self, conn: socket.socket) -> None:
        self.release(conn)
        conn.close()

    def close_kept(self, ending: bool = False) -> None:
        """Close the connections kept for a next request: the holder gives its shell to a keeper
        (which takes new connections only), or it is `ending`, and keeps none from then on. Their
        callers connect again."""
        self._keeping = self._keeping and not ending
        for conn in list(self._kept):
            self.drop(conn)

    def _room(self) -> bool:
        return len(self._inboxes) + len(self._outboxes) < MAX_CALLERS

    def _accept(self) -> socket.socket | None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return None
        if _peer_uid(conn) != os.geteuid():
            conn.close()
            return None
        conn.setblocking(False)
        self._inboxes[conn] = _Inbox(bytearray(), self._clock() + CALLER_TIMEOUT_S)
        return conn

    def _reopen(self, conn: socket.socket, handle: Handle) -> None:
        """A kept connection has news: its caller's next request, or its end."""
        del self._kept[conn]
        self._inboxes[conn] = _Inbox(bytearray(), self._clock() + CALLER_TIMEOUT_S)
        self._read(conn, handle)

    def _read(self, conn: socket.socket, handle: Handle) -> None:
        try:
            data = conn.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        inbox = self._inboxes[conn]
        if not data or len(inbox.data) + len(data) > wire.MAX_MESSAGE:
            self.drop(conn)  # the caller went away (a poll interrupted): its output stays for the next
            return
        inbox.data += data
        if b"\n" in inbox.data and inbox.deadline is not None:
            inbox.deadline = None
            request = wire.decode_request(bytes(inbox.data).partition(b"\n")[0])
            if request is None or _hung_up(conn):  # a caller that gave up waiting is not acted for
                self.drop(conn)
            else:
                handle(conn, request)


def _hung_up(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        return peer(conn)[1]
    except OSError:
        return None

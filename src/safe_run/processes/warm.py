"""Runs in the warm process, started detached by a warm client (`warm.client._spawn`, as
`SERVER_START`): everything imported once, one forked child per call, forked ahead of it.

Its own entry point, above the command line it runs for each call; `warm/` holds the caller's
side (the client, the context, the wire), which the command line calls first.

Started in /, with the client's context and module path on its stdin. It holds a lock beside its
socket for its whole life, so that two first calls start one; it stays single-threaded, so that
every fork is safe. Between calls one spare child waits (`processes.spare`); each call's child is
made into the process the client would have been (`processes.warm_call`) and runs
`cli.main_here`; this process only accepts, forks, passes signals on, reaps and reports, and never
runs a command itself.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import sys
import time
from collections.abc import Callable

from ..engine import polling
from ..engine.interrupts import STOP_SIGNALS
from ..session.adoption import adopt_orphans, ended_children
from ..session.launch import Fork
from ..peers import peer
from ..warm.client import within_reach
from ..warm.context import start_time
from ..warm.wire import GO, MAX_DESCRIPTORS, MAX_REQUEST, Call, decode, encode, request_length
from .caller import Caller
from .forking import ABANDON_S, fork_with_channel, let_go, receive_with_descriptors, send_with_descriptors
from .spare import wait_for_a_call
from .warm_call import become, caller_of

# How long a client may take to send its request once connected.
REQUEST_TIMEOUT_S = 2.0
# How often the socket is checked to still be this process's own: a removed state directory (a
# temporary HOME, a test's) ends it within this long. One stat a second is no load.
CHECK_INTERVAL_S = 1.0


def main() -> None:
    path, idle = sys.argv[1], float(sys.argv[2])
    leader = _leader(sys.argv[3] if len(sys.argv) > 3 else "-")
    context, *module_path = sys.stdin.buffer.read(MAX_REQUEST).split(b"\0")
    if not context or not module_path:
        return  # the client that started it went away before it said what it is
    sys.path[:] = [os.fsdecode(entry) for entry in module_path]
    lock = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another warm process of this context is starting or running
    os.ftruncate(lock, 0)
    os.write(lock, b"%d\n" % os.getpid())  # who to stop: `kill $(cat <socket>.lock)`
    try:
        stops = _hear_stop_signals()
        _preload()
        from .. import process_title

        process_title.name_warm()
        Server(path, context, idle, time.monotonic, leader, stops).serve()
    finally:
        os.unlink(path + ".lock")  # one started meanwhile found it locked and left; the next makes another


def _preload() -> None:
    """What any call may need, imported before the first fork so that no child imports it again."""
    import ctypes  # noqa: F401
    import click  # noqa: F401

    from ..cli import main, report  # noqa: F401
    from ..cli.commands import run, sessions  # noqa: F401
    from ..core import render  # noqa: F401
    from ..display import interactive, lines  # noqa: F401 - a pretty run's (the person's and a log's)
    from ..engine import runner  # noqa: F401
    from ..session import client, holder, launch  # noqa: F401


def _hear_stop_signals() -> list[int]:
    """The stop signals that come from now on, in the list returned.

    Heard before the slow imports, so that a stop during them still removes the lock; and
    unblocked, because this process inherits the signal mask of the call that started it, and a
    caller that blocks SIGTERM (a thread that leaves signals to another) must not make a process
    that outlives it deaf to SIGTERM."""
    heard: list[int] = []
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda signum, frame: heard.append(signum))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    return heard


def _leader(spec: str) -> tuple[int, int] | None:
    """The login session's leader the caller named (`PID:START`), None for none."""
    pid, _, start = spec.partition(":")
    return (int(pid), int(start)) if pid.isdigit() and start.isdigit() else None


def keeps_listening(stopping: bool, ours: bool, idle_for: float, idle: float) -> bool:
    """Whether to go on taking calls: not once stopped, nor once the socket is someone else's or
    gone (its directory removed) or the login session it serves has ended (`ours`), nor after
    `idle` seconds without a call running or starting."""
    return not stopping and ours and idle_for < idle


class Server:
    def __init__(
        self, path: str, context: bytes, idle: float, clock: Callable[[], float], leader: tuple[int, int] | None,
        stops: list[int],
    ) -> None:
        self._path = path
        self._leader = leader  # the caller's login session, which ends when this process does
        self._context = context
        self._idle = idle
        self._clock = clock
        self._calls: dict[int, socket.socket] = {}  # child pid -> its client's connection
        self._last_call = clock()
        self._pid = os.getpid()
        self._stops = stops  # the stop signals heard (`_hear_stop_signals`): calls running go on
        # A child forked ahead of the next call, waiting for it (see `_fork_spare`); none once one
        # failed, so that a spare that cannot live is not made again and again.
        self._spare: tuple[int, socket.socket] | None = None
        self._spares_work = True
        self._last_caller: Caller | None = None  # whose place the last call's child took
        self._listening = True
        self._ours = True  # the socket is still this process's, and its login session open
        self._checked = clock()
        self._wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        # A call's holder, once the call has ended, and whatever a holder leaves, come here to be
        # collected (`_reap`), rather than to a PID 1 that may never collect them.
        adopt_orphans()
        self._listener = self._listen()

    def _listen(self) -> socket.socket:
        """Bound under another name and renamed, so the socket appears only once it takes calls."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        staging = f"{self._path}.{os.getpid()}"
        listener.bind(staging)
        listener.listen(64)
        os.rename(staging, self._path)
        self._inode = os.stat(self._path).st_ino
        return listener

    def serve(self) -> None:
        """Take calls until stopped, idle, or no longer reachable; then see the running ones to their end."""
        while True:
            idle_for = 0.0 if self._calls else self._clock() - self._last_call
            if self._listening and not self._keeps_listening(idle_for):
                self._close()
            if not self._listening and not self._calls:
                return
            self._get_a_spare_ready()
            ready = polling.readable(self._waited(), max(0.0, min(CHECK_INTERVAL_S, self._idle - idle_for)))
            self._answer(ready)

    def _keeps_listening(self, idle_for: float) -> bool:
        """`keeps_listening`, with whether it is still reachable looked at once a second at most."""
        now = self._clock()
        if now - self._checked >= CHECK_INTERVAL_S:
            self._checked, self._ours = now, self._still_ours() and self._login_session_open()
        return keeps_listening(bool(self._stops), self._ours, idle_for, self._idle)

    def _get_a_spare_ready(self) -> None:
        """While no call runs: it takes no time from one."""
        if self._listening and self._spare is None and self._spares_work and not self._calls:
            self._spare = self._fork_spare()

    def _waited(self) -> list[int]:
        waited = [self._wake_r, *(conn.fileno() for conn in self._calls.values())]
        return waited + [self._listener.fileno()] if self._listening else waited

    def _answer(self, ready: set[int]) -> None:
        """What woke this process: a signal (a child ended), a client, a new call."""
        if self._wake_r in ready:
            polling.drain(self._wake_r)
        self._reap()
        for pid, conn in list(self._calls.items()):
            if conn.fileno() in ready:
                self._from_client(pid, conn)
        if self._listening and self._listener.fileno() in ready:
            self._accept()

    def _login_session_open(self) -> bool:
        """Whether a caller of the login session this process was started for may still call:
        once its leader is gone (an ssh connection that ended), nobody is left to."""
        return self._leader is None or start_time(self._leader[0]) == self._leader[1]

    def _still_ours(self) -> bool:
        try:
            return os.stat(self._path).st_ino == self._inode
        except OSError:
            return False

    def _close(self) -> None:
        self._listening = False
        if self._still_ours():
            os.unlink(self._path)
        self._listener.close()
        self._drop_spare()

    def _fork_spare(self) -> tuple[int, socket.socket] | None:
        """A child that gets ready for a call before it comes (`processes.spare`). Between calls,
        this process, the spare and the holder it forked ahead hold about 36 MB, and the kept shell
        what the user's rc makes it (1 MB for bash without one)."""
        last, inherited = self._last_caller, self._inherited()
        return fork_with_channel(lambda channel: wait_for_a_call(channel, self._pid, inherited, last))

    def _inherited(self) -> list[socket.socket]:
        """This process's sockets, which a child it forks must not close."""
        return [self._listener, *self._calls.values()]

    def _drop_spare(self) -> None:
        """Let the spare go (see `forking.let_go`): it ends after its holder forked ahead, so that
        no zombie outlives this process. It gives that holder ABANDON_S, so it gets twice that: were
        it killed first, the holder would be left to a PID 1 that may never collect it."""
        if self._spare is not None:
            spare, self._spare = self._spare, None
            let_go(spare, within=2 * ABANDON_S)

    def _handed_to_spare(self, call: Call, fds: list[int], conn: socket.socket) -> int | None:
        """The spare child's pid once it has the call (its descriptors and the client's
        connection), or None: there is none, or it could not take it."""
        if self._spare is None:
            return None
        pid, channel = self._spare
        self._spare = None
        try:
            channel.settimeout(REQUEST_TIMEOUT_S)  # it reads once it is ready: bounded all the same
            send_with_descriptors(channel, encode(call), [*fds, conn.fileno()])
        except OSError:
            _pass_signals(pid, bytes([signal.SIGKILL]))
            return None
        finally:
            channel.close()
        return pid

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        self._last_call = self._clock()
        fds: list[int] = []
        try:
            message, fds, early = receive_with_descriptors(conn, request_length, MAX_DESCRIPTORS, REQUEST_TIMEOUT_S)
            call = decode(message)
            refusal = self._refusal(conn, call, fds)
            if refusal is not None:
                conn.sendall(b"no " + refusal + b"\n")
                conn.close()
                return
            conn.sendall(b"ok\n")
            early = _committed(conn, early)
            pid = self._handed_to_spare(call, fds, conn) or os.fork()
            if pid == 0:
                become(call, fds, conn, Fork(), self._pid, self._inherited())
            conn.sendall(b"run %d\n" % pid)
            self._calls[pid] = conn
            _pass_signals(pid, early)
            # Where the next spare gets ready: taken once this call runs, as it costs this one nothing then.
            self._last_caller = caller_of(call, os.readlink(f"/proc/self/fd/{fds[0]}"))
        except (OSError, ValueError):
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def _refusal(self, conn: socket.socket, call: Call, fds: list[int]) -> bytes | None:
        pid, uid = peer(conn)
        if uid != os.getuid():
            return b"another user"
        if not within_reach(pid):
            return b"another sandbox"
        if call.fingerprint != self._context:
            return b"another context"
        if len(fds) != len(call.targets) + 1:
            return b"descriptors missing"
        return None

    def _from_client(self, pid: int, conn: socket.socket) -> None:
        """Stop signals to pass on; or the client went away, and the call with it, as it would have."""
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        _pass_signals(pid, data or bytes([signal.SIGKILL]))
        if not data:
            self._calls.pop(pid).close()

    def _reap(self) -> None:
        for pid, status in ended_children():
            if self._spare is not None and pid == self._spare[0]:  # it ended unasked
                self._spare[1].close()
                self._spare, self._spares_work = None, False
                continue
            self._last_call = self._clock()
            conn = self._calls.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(b"exit %d\n" % status)
                except OSError:
                    pass
                conn.close()


def _pass_signals(pid: int, signums: bytes) -> None:
    for signum in signums:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, ValueError):
            pass


def _committed(conn: socket.socket, early: bytes) -> bytes:
    """Wait for the client to commit the call (`GO`); the stop signals it sent before and with it.

    A client that gave up waiting for `ok` closes instead and runs the call itself: ValueError,
    and nothing runs here. One that commits too late is told so, and runs it itself too.
    """
    while GO not in early:
        try:
            data = conn.recv(64)
        except TimeoutError:
            conn.sendall(b"no too late\n")
            raise
        if not data:
            raise ValueError("the client runs the call itself")
        early += data
    before, _, after = early.partition(GO)
    return before + after

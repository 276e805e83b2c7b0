"""The warm process: everything imported once, one forked child per call, forked ahead of it.

Its own entry point, above the command line it runs for each call; `warm/` holds the caller's
side (the client, the context, the wire), which the command line calls first.

Started detached by a client (`client._spawn`), in /, with the client's context and module path on
its stdin. It holds a lock beside its socket for its whole life, so that two first calls start
one; it stays single-threaded, so that every fork is safe. Each call's child is made into the
process the client would have been (`_become`) and runs `cli.main_here`; this process only
accepts, forks, passes signals on, reaps and reports, and never runs a command itself.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable

from ..engine import polling
from ..engine.interrupts import STOP_SIGNALS
from .memory import take_own_pages
from ..session.adoption import adopt_orphans, set_parent_death_signal
from ..session.launch import (
    ABANDON_S, Fork, fork_with_channel, let_go, plain_shell_ahead, send_with_descriptors, take_environment,
)
from ..warm.context import start_time
from ..warm.client import within_reach
from ..warm.wire import GO, MAX_REQUEST, Call, decode, encode, request_length

# How long a client may take to send its request once connected.
REQUEST_TIMEOUT_S = 2.0
# How often the socket is checked to still be this process's own: a removed state directory (a
# temporary HOME, a test's) ends it within this long. One stat a second is no load.
CHECK_INTERVAL_S = 1.0
MAX_DESCRIPTORS = 253
PEER_CREDENTIALS = struct.Struct("3i")


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
        from . import title as process_title

        process_title.name_warm()
        Server(path, context, idle, time.monotonic, leader, stops).serve()
    finally:
        os.unlink(path + ".lock")  # one started meanwhile found it locked and left; the next makes another


def _preload() -> None:
    """What any call may need, imported before the first fork so that no child imports it again."""
    import ctypes  # noqa: F401
    import click  # noqa: F401

    from ..cli import main as cli, report
    from ..core import render
    from ..engine import runner
    from ..cli.commands import run, sessions
    from ..display import interactive, lines
    from ..session import client, holder, launch


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
        self._last_seen: tuple[list[bytes], str] | None = None  # the last call's variables and directory
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
        checked = self._clock()
        ours = listening = True
        while True:
            now = self._clock()
            if listening and now - checked >= CHECK_INTERVAL_S:
                checked, ours = now, self._still_ours() and self._login_session_open()
            idle_for = 0.0 if self._calls else now - self._last_call
            if listening and not keeps_listening(bool(self._stops), ours, idle_for, self._idle):
                listening = False
                self._close()
            if not listening and not self._calls:
                return
            if listening and self._spare is None and self._spares_work and not self._calls:
                self._spare = self._fork_spare()  # while no call runs: it takes no time from one
            waited = [self._wake_r, *(conn.fileno() for conn in self._calls.values())]
            waited += [self._listener.fileno()] if listening else []
            timeout = max(0.0, min(CHECK_INTERVAL_S, self._idle - idle_for))
            ready = polling.readable(waited, timeout)
            if self._wake_r in ready:
                polling.drain(self._wake_r)
            self._reap()
            for pid, conn in list(self._calls.items()):
                if conn.fileno() in ready:
                    self._from_client(pid, conn)
            if listening and self._listener.fileno() in ready:
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
        if self._still_ours():
            os.unlink(self._path)
        self._listener.close()
        self._drop_spare()

    def _fork_spare(self) -> tuple[int, socket.socket] | None:
        """A child that gets ready for a call before it comes, forked while no call runs: it forks
        the holder a session will need ahead too (`launch.Fork.prepare`), which starts the shell
        that call will likely need, rc files loaded (`shell_start.KeptShell`); it parses a typical
        command line, and takes its memory as its own (`memory`), so that its call meets no page
        it still shares with this process: about a third of a warm call here went to those page
        copies. Between calls, this process, the spare and the holder hold about 36 MB, and the
        kept shell what the user's rc makes it (1 MB for bash without one)."""
        return fork_with_channel(self._wait_for_a_call)

    def _drop_spare(self) -> None:
        """Let the spare go (see `launch.let_go`): it ends after its holder forked ahead, so that
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

    def _wait_for_a_call(self, channel: socket.socket) -> None:
        """In a spare child: get ready, wait for the call the warm process hands over, and be it."""
        holders = Fork()
        try:
            signal.set_wakeup_fd(-1)
            # Ended by a stop signal, as `ps` shows it and its holder forked ahead (which
            # inherits this) as `safe-run warm` too; its call then sets what the caller had.
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            _die_with(self._pid)
            for other in [self._listener, *self._calls.values()]:
                other.detach()
            # The holder a session will need is forked ahead too, before the rehearsal: a fork
            # shares again every page written before it. It starts the shell the last call's
            # like would need, in its directory and with its variables: the user's rc files are
            # loaded by the time the next call comes.
            self._anticipate()
            holders.prepare(plain_shell_ahead)
            _rehearse()
            take_own_pages()
            call, fds, _ = _receive(channel, timeout=None)
            channel.close()
        except BaseException:  # noqa: BLE001 - no call came (the warm process let it go), or it was garbled
            holders.abandon()
            os._exit(0)
        self._become(call, fds[:-1], socket.socket(fileno=fds[-1]), holders)

    def _anticipate(self) -> None:
        """In a spare child: the last call's variables and directory, as the next call's likely are."""
        if self._last_seen is not None:
            environ, directory = self._last_seen
            take_environment(environ)
            try:
                os.chdir(directory)
            except OSError:
                pass

    def _accept(self) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        self._last_call = self._clock()
        fds: list[int] = []
        try:
            call, fds, early = _receive(conn)
            refusal = self._refusal(conn, call, fds)
            if refusal is not None:
                conn.sendall(b"no " + refusal + b"\n")
                conn.close()
                return
            self._last_seen = call.environ, os.readlink(f"/proc/self/fd/{fds[0]}")
            conn.sendall(b"ok\n")
            early = _committed(conn, early)
            pid = self._handed_to_spare(call, fds, conn) or os.fork()
            if pid == 0:
                self._become(call, fds, conn, Fork())
            conn.sendall(b"run %d\n" % pid)
            self._calls[pid] = conn
            _pass_signals(pid, early)
        except (OSError, ValueError):
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def _refusal(self, conn: socket.socket, call: Call, fds: list[int]) -> bytes | None:
        pid, uid, _ = PEER_CREDENTIALS.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
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
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
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

    def _become(self, call: Call, fds: list[int], conn: socket.socket, holders: Fork) -> None:
        """In the child: be the client's process, run the call, and exit as the command line would;
        its session's holder comes from `holders` (forked ahead by a spare).

        Its status goes to the client (`conn`) as soon as its output is out and the client's
        descriptors are let go: the end of a process this size takes a millisecond or two, which
        neither the client nor a reader of its output then waits for. This process's end is still
        reported as well, for a call that ends otherwise (killed)."""
        code = 125
        try:
            signal.set_wakeup_fd(-1)
            _die_with(self._pid)
            os.setpgid(0, 0)  # a group of its own, as the client's process has its caller's
            for other in [self._listener, *self._calls.values()]:
                other.detach()
            call_fd, *ahead = _take_descriptors(fds[0], fds[1:], call.targets, [conn.detach(), *holders.carried()])
            conn = socket.socket(fileno=call_fd)
            holders.renumbered(ahead)
            take_environment(call.environ)
            _take_signals(call.ignored, call.blocked)
            sys.argv = [os.fsdecode(word) for word in call.argv]
            _fresh_standard_streams()
            from ..cli import main as cli
            from . import title as process_title

            process_title.hide_command()

            cli.main_here(sys.argv[1:], holders)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException as exc:  # noqa: BLE001 - the child must end here, whatever happened
            _say(f"internal error in a warm call: {type(exc).__name__}: {exc}")
        finally:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            _report_early(conn, code)
            holders.abandon()  # a holder forked ahead and not used ends its shell and directory first
            os._exit(code)


def _report_early(conn: socket.socket, code: int) -> None:
    """The exit status, as the warm process reports it (a wait status), once the client's standard
    descriptors are given back: a reader of the output sees its end when the client exits."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        conn.sendall(b"exit %d\n" % ((code & 0xFF) << 8))
    except OSError:
        pass  # the warm process reports it when this process has ended


def _rehearse() -> None:
    """Parse a typical call's command line, and make what a call makes first, without running
    anything: a spare child's pages that this writes are its own before its call needs them."""
    from ..cli.commands import cli
    from ..environment import Environment
    from ..cli.report import json_line
    from ..core.request import RunRequest
    from ..core.result import Reason, Result, ShellInfo, Status, Strategy

    try:
        with cli.make_context("safe-run", ["--format", "json", "--", "true"], resilient_parsing=True) as ctx:
            name, command, rest = cli.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
            if command is not None and name is not None:
                command.make_context(name, rest, parent=ctx, resilient_parsing=True).close()
        Environment.current()
        RunRequest("true")
        json_line(Result(Status.COMPLETED, 0, Strategy.RICH, Reason.SHELL_INTEGRATION, "true", ShellInfo("bash", "bash")), "json")
    except Exception:  # noqa: BLE001 - a rehearsal that fails costs the call only the time it would have saved
        pass


def _die_with(parent: int) -> None:
    """End with the warm process: killed, it cannot report how the call ended, and the caller says
    so; a call going on unseen would write its answer after its caller had given up. (Its session
    holder, forked later, does not inherit this and goes on, as when a caller's own process dies.)"""
    set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # it was gone before the request was made
        os._exit(125)


def _pass_signals(pid: int, signums: bytes) -> None:
    for signum in signums:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, ValueError):
            pass


def _receive(conn: socket.socket, timeout: float | None = REQUEST_TIMEOUT_S) -> tuple[Call, list[int], bytes]:
    """The call, its descriptors, and the stop signals the client already sent after it."""
    conn.settimeout(timeout)
    data, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(MAX_DESCRIPTORS * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
    try:
        for fd in fds:
            fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
        total = request_length(data)
        while total is None or len(data) < total:
            chunk = conn.recv(1 << 20)
            if not chunk:
                raise ValueError("the request ended early")
            data += chunk
            total = total if total is not None else request_length(data)
        return decode(data[:total]), fds, data[total:]
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


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


def _take_descriptors(directory: int, passed: list[int], targets: list[int], kept: list[int]) -> list[int]:
    """The client's descriptors at the client's numbers, and nothing else open but `kept` (the
    call's connection, a holder forked ahead), whose new numbers (close-on-exec) are returned."""
    os.fchdir(directory)
    top = max([directory, *passed, *targets, *(int(name) for name in os.listdir("/proc/self/fd"))]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top) for fd in [*passed, *kept]]
    os.closerange(0, top)
    for fd, target in zip(moved, targets):
        os.dup2(fd, target, inheritable=True)
    for fd in moved[:len(passed)]:
        os.close(fd)
    return moved[len(passed):]


def _take_signals(ignored: int, blocked: int) -> None:
    """The dispositions Python started the client with, and the mask it inherited."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if ignored >> (signum - 1) & 1:
            handler: signal.Handlers | Callable[..., object] = signal.SIG_IGN
        else:
            handler = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        try:
            signal.signal(signum, handler)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [s for s in signal.valid_signals() if blocked >> (s - 1) & 1])


def _fresh_standard_streams() -> None:
    """Streams on the client's descriptors, made as Python makes them at start (this process's were
    made for /dev/null and cached what they learnt of it), unbuffered where they were (-u)."""
    import io

    def stream(fd: int, old: io.TextIOWrapper, mode: str) -> io.TextIOWrapper:
        unbuffered = isinstance(old.buffer, io.RawIOBase)
        raw = io.open(fd, mode, buffering=0 if unbuffered else -1, closefd=False)
        return io.TextIOWrapper(
            raw, encoding=old.encoding, errors=old.errors, line_buffering=old.line_buffering,
            write_through=old.write_through,
        )

    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        fresh = stream(fd, getattr(sys, name), mode)
        setattr(sys, name, fresh)
        setattr(sys, f"__{name}__", fresh)


def _say(line: str) -> None:
    try:
        os.write(2, f"safe-run: {line}\n".encode("utf-8", "replace"))
    except OSError:
        pass


"""Runs in the command line's process, first: hand this call to a warm process, or say it cannot.

It imports little, since Python's own start-up is most of what a warm call costs the caller:
`_socket` rather than `socket` and `_signal` rather than `signal` (their enums alone would cost
half as much as Python's start-up), and no zlib for naming the socket. When no warm process
takes the call, nothing has happened yet and the caller runs it itself.
"""

from __future__ import annotations

import _socket
import os
import sys
import time

from .. import places
from ..peers import peer
from . import IDLE_S, OFF, SEEN_S, VARIABLE
from .context import NO_AUDIT_SESSION, fingerprint, read_proc, read_status, start_time
from .wire import GO, MAX_DESCRIPTORS, Call, encode

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    import signal as _signal  # the same functions, typed
    from typing import NoReturn
else:
    import _signal

# Stop signals the command line answers (interrupts.STOP_SIGNALS): passed on to the child, which
# answers them as the caller's own process would have. Any other signal ends this process as it
# would have ended the call, and the warm process then ends the child.
FORWARDED = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
# A path for the socket must fit in sockaddr_un.
SOCKET_PATH_MAX = 100
SERVER_START = "from safe_run.processes.warm import main; main()"
NOT_FOR = ("mcp", "--version")
# From the moment a call looks for its warm process, it gives up on it after this long, however
# the time went (connecting, sending, waiting for its `ok`): it then runs the call itself.
GIVE_UP_S = 2.0
# The socket is named by the context's remainder modulo this prime (the largest below 2**32): a
# name that two contexts share only costs the second its warm process, since the context is
# compared whole when a call is handed over.
NAME_MODULUS = 4294967291


def call(args: list[str]) -> int | None:
    """The exit status of this call, run by a warm process; None when none took it."""
    environ = dict(os.environ)
    if not _wanted(args, environ):
        return None
    give_up_at = time.monotonic() + GIVE_UP_S
    try:
        status = read_status()
        context = fingerprint(environ, status)
        directory = places.warm_directory(environ)
        path = os.path.join(directory, _file_name(context))
        if len(os.fsencode(path)) > SOCKET_PATH_MAX:
            return None
        conn = _connect(path, give_up_at)
        if conn is None:
            _start_when_used_again(directory, path, context, environ)
            return None
        if not _served_by_us(conn):
            conn.close()
            return None
        prepared = _call(args, context, status)
    except OSError:  # nothing was handed over: the call runs here
        return None
    try:
        return _handed_over(conn, prepared, give_up_at)
    finally:
        conn.close()


def _file_name(context: bytes) -> str:
    return "%08x" % (int.from_bytes(context, "big") % NAME_MODULUS)


def exit_like(code: int) -> NoReturn:
    """End as the child ended: with its status, or by the signal that killed it.

    Without Python's own finalization, which costs milliseconds (3 of a 48 ms warm call): this
    process wrote nothing of the call's (the child wrote to the descriptors it was given) and
    holds nothing that needs it.
    """
    if code < 0:
        try:
            _signal.signal(-code, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL and SIGSTOP have no handler to reset
        os.kill(os.getpid(), -code)
        code = 128 - code
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass  # a closed or broken stream: nothing of it was the call's
    os._exit(code)


def _served_by_us(conn: _socket.socket) -> bool:
    """Whether the process listening is one of this user's, in this sandbox: the call carries the
    caller's environment and descriptors, and is never handed to another user's process, whatever
    the directory it listens in (one another user made first in a shared TMPDIR, or an
    XDG_RUNTIME_DIR that sudo passed on)."""
    pid, uid = peer(conn)
    return uid == os.getuid() and within_reach(pid)


def within_reach(pid: int) -> bool:
    """Whether this process may look into `pid` as into a process of its own sandbox.

    Some sandboxes leave no trace in /proc that the fingerprint could compare (Landlock), but
    each forbids a process inside it to inspect one outside: a warm process started outside the
    sandbox must not run a sandboxed caller's command. The warm process checks the other way.
    """
    try:
        os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return False
    return True


def _wanted(args: list[str], environ: dict[str, str]) -> bool:
    if environ.get(VARIABLE, "").strip().lower() in OFF or (args and args[0] in NOT_FOR):
        return False
    if not sys.platform.startswith("linux"):
        return False  # the context is read from /proc
    flags = sys.flags
    if flags.optimize or flags.dev_mode or flags.no_site or flags.ignore_environment or sys.warnoptions:
        return False  # an interpreter started with options of its own; a warm one is started without
    if sys.getfilesystemencoding().lower().replace("-", "") != "utf8":
        return False  # the command line first re-runs in UTF-8 mode
    try:
        return not any(os.isatty(fd) for fd in (0, 1, 2)) and all(os.get_inheritable(fd) for fd in (0, 1, 2))
    except OSError:  # a closed standard descriptor: the command line itself deals with that
        return False


def _call(args: list[str], context: bytes, status: bytes) -> tuple[Call, list[int]]:
    """This call, and the descriptors to pass: the working directory, then every inherited one."""
    inherited = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if os.get_inheritable(fd):  # what the caller gave; Python's own are close-on-exec
                inherited.append(fd)
        except OSError:
            pass  # the descriptor listdir itself used
    masks = {line.partition(b":")[0]: int(line.partition(b":")[2].strip() or b"0", 16)
             for line in status.splitlines() if line.startswith((b"SigIgn:", b"SigBlk:"))}
    argv = [os.fsencode(word) for word in [sys.argv[0], *args]]
    environ = [name + b"=" + value for name, value in os.environb.items()]
    return Call(context, masks.get(b"SigIgn", 0), masks.get(b"SigBlk", 0), inherited, argv, environ), inherited


def _connect(path: str, give_up_at: float) -> _socket.socket | None:
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    conn.settimeout(_left(give_up_at))
    try:
        conn.connect(path)
    except OSError:
        conn.close()
        return None
    return conn


def _left(until: float) -> float:
    """The seconds left before `until`; never 0, which would make a socket non-blocking."""
    return max(until - time.monotonic(), 1e-3)


def _handed_over(conn: _socket.socket, prepared: tuple[Call, list[int]], give_up_at: float) -> int | None:
    """Send the call; pass stop signals on until the child's status comes back.

    A stop signal that comes before the warm process has taken the call is passed on too (it reads
    it after the request); if the call is refused, or not taken in time, it is delivered to this
    process again, which then answers it as it answers one that came before its handlers were set.
    Once the warm process has said `ok` and this process has committed the call, it never runs here.
    """
    call_, inherited = prepared
    if len(inherited) + 1 > MAX_DESCRIPTORS:
        return None
    try:  # O_PATH: a directory that may be entered but not read is still the caller's directory
        here = os.open(".", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None  # the call itself says what is wrong with its directory
    arrived: list[int] = []

    def pass_on(signum: int, frame: object) -> None:
        arrived.append(signum)
        try:
            conn.send(bytes([signum]))
        except OSError:
            pass

    previous = {signum: _signal.signal(signum, pass_on) for signum in FORWARDED}
    replies = _Lines(conn)
    try:
        data = encode(call_)
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in [here, *inherited])
        conn.settimeout(_left(give_up_at))
        sent = conn.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        conn.sendall(data[sent:])
        taken = replies.next(give_up_at) == b"ok"
        if taken:  # from here on the call is the warm process's: it never runs here too
            conn.sendall(GO)
    except OSError:
        taken = False
    finally:
        os.close(here)
    first = replies.next() if taken else None
    if not taken or (first is not None and first.startswith(b"no ")):  # nothing ran there
        _deliver_again(previous, arrived)
        return None
    # "exit" comes from the child once its output is out, or from the warm process once it ended.
    last = replies.next() if first is not None and first.startswith(b"run ") else first
    if last is None or not last.startswith(b"exit "):
        _say("the warm process running this call was killed, and the call with it; its answer is lost")
        return 125
    return os.waitstatus_to_exitcode(int(last[5:]))


def _deliver_again(previous: dict[_signal.Signals, _signal._HANDLER], arrived: list[int]) -> None:
    """The call runs here after all: the signals that came meanwhile, as if none had been caught."""
    for signum, handler in previous.items():
        _signal.signal(signum, handler)
    for pending in arrived:
        os.kill(os.getpid(), pending)


class _Lines:
    """The warm process's reply lines: the first by the call's give-up time, the later ones
    unbounded, since the last comes when the call ends (the child's own bounds apply)."""

    def __init__(self, conn: _socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

    def next(self, until: float | None = None) -> bytes | None:
        while b"\n" not in self._buffer:
            self._conn.settimeout(None if until is None else _left(until))
            try:
                data = self._conn.recv(4096)
            except InterruptedError:
                continue
            except OSError:
                return None
            if not data:
                return None
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line


def _start_when_used_again(directory: str, path: str, context: bytes, environ: dict[str, str]) -> None:
    """Start a warm process for this context if it already called within SEEN_S; else note this call.

    A caller that never comes back (each call in a new sandbox or container) then never leaves a
    warm process behind; CI, whose jobs expect no process to outlive a step, gets none either.
    """
    if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        return
    seen = path + ".seen"
    try:
        places.private_directory(os.path.dirname(directory))  # the sessions' directory, then its own
        places.private_directory(directory)
        _forget_stale_marks(directory)
        try:
            recent = time.time() - os.stat(seen).st_mtime < SEEN_S
        except FileNotFoundError:
            recent = False
        if not recent:
            os.close(os.open(seen, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600))
            os.utime(seen)
            return
        os.unlink(seen)
        _spawn(path, context)
    except OSError:
        pass  # no warm process: calls are as they always were


def _forget_stale_marks(directory: str) -> None:
    now = time.time()
    for name in os.listdir(directory):
        if name.endswith(".seen"):
            try:
                if now - os.stat(os.path.join(directory, name)).st_mtime >= SEEN_S:
                    os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _spawn(path: str, context: bytes) -> None:
    """Start the warm process, detached, with this process's interpreter settings and environment.

    It starts in / (so that no module of the caller's directory can shadow one of safe-run's) and
    reads this context and this process's module path from its stdin.
    """
    import subprocess

    utf8 = "utf8" if sys.flags.utf8_mode else "utf8=0"
    server = subprocess.Popen(
        [sys.executable, "-X", utf8, "-c", SERVER_START, path, "%g" % IDLE_S, login_leader()],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd="/",
    )
    assert server.stdin is not None
    with server.stdin:
        server.stdin.write(b"\0".join([context, *(os.fsencode(entry) for entry in sys.path)]))


def login_leader() -> str:
    """`PID:START` of the leader of this caller's session when it belongs to a login session (an
    ssh connection through PAM: its own audit session id, part of the context), else `-`.

    Once that leader is gone, no caller of that login session is left to call (an ssh connection
    that ended), so the warm process started for it ends at once instead of after its idle time.
    """
    session = read_proc("/proc/self/sessionid").strip()
    if not session.isdigit() or int(session) == NO_AUDIT_SESSION:
        return "-"
    leader = os.getsid(0)
    start = start_time(leader)
    return "-" if start is None else f"{leader}:{start}"


def _say(line: str) -> None:
    try:
        sys.stderr.write(f"safe-run: {line}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass

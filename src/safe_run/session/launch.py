"""Starting a session's holder: a process of its own session, free of the caller's terminal and
pipes, that runs `holder.Holder` until the command (or the named shell) ends.

Three launchers: a new interpreter (`python -m safe_run.session.launch`, the default), so it
carries nothing of its caller; a fork, for safe-run's own single-threaded command line, which
costs nothing and spares each session a second start-up of Python; and a fork server
(`forkserver.ForkServer`), for a many-threaded caller that starts many holders (the MCP server).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from ..engine.kernel import current_umask
from ..engine.interrupts import STOP_SIGNALS, StopSignals
from ..processes.title import name_holder
from ..core.request import RunRequest, request_from_dict, request_to_dict
from ..engine.shell_start import KeptShell
from .adoption import adopt_orphans, collect_adopted, end_child, set_parent_death_signal
from .holder import ShellPlan, make_holder
from .store import Session

# What the caller wants run, handed to a new holder process (read and removed at its start).
REQUEST_FILE = "request.json"
# How long a process forked ahead and let go gets to end before it is killed.
ABANDON_S = 1.0


class Launcher(Protocol):
    """A way to start a holder serving `listener`."""

    def start(self, session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> int | None:
        """Start it; its pid when the caller must collect it (None: something else does)."""


def detach(session: Session, request: RunRequest, plan: ShellPlan | None, launcher: Launcher) -> int | None:
    """Start the holder in a process of its own session, free of the caller's terminal and pipes.

    The listening socket exists before the holder does, so the caller can connect at once. The
    holder keeps no descriptor of the caller's (a caller reading our stdout to its end must not
    wait for the command), and its own errors go to a log in the session directory. `launcher` is
    the front end's one way to start holders: `Fork` for the command line, a fork server
    (`forkserver.ForkServer`) for a process with threads, `Spawn` when neither can be had.
    """
    listener = session.listen()
    try:
        return launcher.start(session, listener, request, plan)
    finally:
        listener.close()


class Spawn:
    """A new interpreter runs the holder, so it carries nothing of its caller (threads, memory,
    locks held mid-fork); it costs a start-up of Python (about 0.1 s of CPU)."""

    def start(self, session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> None:
        write_request(session, request, plan)
        log_fd = -1 if request.log is None else request.log.fileno()
        passed = [listener.fileno()] + ([log_fd] if log_fd >= 0 else [])
        with open(session.path / "holder.log", "ab") as errors:
            os.chmod(errors.fileno(), 0o600)
            holder = subprocess.Popen(
                [sys.executable, "-m", "safe_run.session.launch", str(session.path), str(listener.fileno()), str(log_fd)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, pass_fds=passed,
                start_new_session=True,
            )
        session.write_meta(holder_pid=holder.pid)
        # Collected when it ends, so that a long-lived caller (the Python API) keeps no zombie.
        threading.Thread(target=holder.wait, name=f"safe-run holder {session.id}", daemon=True).start()


@dataclass(frozen=True)
class Caller:
    """The variables, directory and umask of whoever asked for a holder, which the holder takes."""

    environ: list[str]  # NAME=VALUE
    directory: str
    umask: int

    @classmethod
    def here(cls, directory: str | None = None) -> Caller:
        """This process's variables, and its directory (named, for another process; "." for a child)."""
        environ = [os.fsdecode(name + b"=" + value) for name, value in os.environb.items()]
        return cls(environ, os.getcwd() if directory is None else directory, current_umask())

    def take(self) -> None:
        """Be where the caller is, in this process: a holder's, forked for it. Raises OSError when
        its directory is gone."""
        take_environment([os.fsencode(entry) for entry in self.environ])
        os.umask(self.umask)
        os.chdir(self.directory)

    def shell_ahead(self) -> KeptShell | None:
        """In a holder forked ahead: the shell a plain call of this caller's would start, from its
        directory and with its variables and umask (which the holder takes again when its call comes)."""
        try:
            self.take()
        except OSError:
            pass  # its directory is gone: the shell starts where the holder is, and a call from there starts its own
        return plain_shell_ahead()


class Fork:
    """The caller forks the holder: for safe-run's own single-threaded command line, where a fork
    costs nothing and spares each session a second start-up of Python. The forked holder's pid is
    returned, for the caller to collect it if it ends while the caller still runs.

    A warm process's spare child (`warm_server`) forks its holder ahead with `prepare`, before
    its call comes: that child then waits, and `start` hands it what to serve, with this
    process's variables and directory as they are by then (a fork and the child's first steps
    cost about 2 ms of a warm call here). Unused, it ends with this process."""

    def __init__(self) -> None:
        self._ready: tuple[int, socket.socket] | None = None

    def prepare(self, ahead: Callable[[], KeptShell | None] = lambda: None) -> None:
        """Fork the holder now; `ahead` starts the shell it will likely need, in that holder."""
        if self._ready is None:
            parent = os.getpid()
            self._ready = fork_with_channel(lambda channel: _wait_to_hold(channel, parent, ahead))

    def abandon(self) -> None:
        """Let a holder forked ahead go unused (see `let_go`)."""
        if self._ready is not None:
            ready, self._ready = self._ready, None
            let_go(ready)

    def carried(self) -> list[int]:
        """The descriptor of a holder forked ahead: one that a process taking over another's
        descriptors must keep (see `renumbered`)."""
        return [] if self._ready is None else [self._ready[1].fileno()]

    def renumbered(self, fds: list[int]) -> None:
        """The new numbers of `carried`'s descriptors, moved by the process that kept them."""
        if self._ready is not None and fds:
            pid, channel = self._ready
            channel.detach()  # its old number is closed, and may be another descriptor's by now
            self._ready = pid, socket.socket(fileno=fds[0])

    def start(
        self, session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None,
        caller: Caller | None = None,
    ) -> int:
        """`caller`: the variables and directory the holder takes, when they are not this
        process's own (a fork server's, which starts holders for another process)."""
        pid = self._hand_over(session, listener, request, plan, caller) or os.fork()
        if pid != 0:
            session.write_meta(holder_pid=pid)
            return pid
        status = 1
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a fork server ignores it; a holder waits for its shell
            if caller is not None:
                caller.take()
            status = _become_holder(session, listener, request, plan)
        finally:
            sys.stderr.flush()
            os._exit(status)

    def _hand_over(
        self, session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None,
        caller: Caller | None,
    ) -> int | None:
        """The holder forked ahead, once it has what to serve; None when there is none (or it is gone)."""
        if self._ready is None:
            return None
        (pid, channel), self._ready = self._ready, None
        caller = caller or Caller.here(".")
        job = json.dumps({
            "path": str(session.path), "environ": caller.environ, "umask": caller.umask, "spec": _spec(request, plan),
        }).encode()
        message = b"%d\n%s" % (len(job), job)
        try:
            here = os.open(caller.directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                passed = [here, listener.fileno()] + ([request.log.fileno()] if request.log is not None else [])
                send_with_descriptors(channel, message, passed)
            finally:
                os.close(here)
        except OSError:
            end_child(pid, 0.0)
            return None
        finally:
            channel.close()
        return pid


def let_go(child: tuple[int, socket.socket], within: float = ABANDON_S) -> None:
    """Let a child forked ahead (`fork_with_channel`) go unused: it ends once its end of the
    channel closes, and is collected here (killed if it has not ended `within` seconds), so that
    no zombie is left."""
    pid, channel = child
    channel.close()
    end_child(pid, within)


def send_with_descriptors(channel: socket.socket, data: bytes, fds: list[int]) -> None:
    """`data` to a child forked ahead, the descriptors `fds` passed with its first bytes."""
    sent = channel.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    channel.sendall(data[sent:])


def fork_with_channel(child: Callable[[socket.socket], None]) -> tuple[int, socket.socket] | None:
    """A child running `child` with its end of a socket pair (it never returns into the caller's
    code), and the caller's end; None when no process can be made."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None
    if pid == 0:
        ours.close()
        try:
            child(theirs)
        finally:
            os._exit(1)
    theirs.close()
    return pid, ours


def _become_holder(
    session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None, kept: KeptShell | None = None,
) -> int:
    """In a forked child: the holder, in a session of its own with only its own descriptors (and
    those of the shell it started ahead, `kept`)."""
    for signum in STOP_SIGNALS:  # the caller's handlers came along with the fork
        signal.signal(signum, signal.SIG_DFL)
    os.setsid()
    detach_descriptors(session, listener.fileno(), request, [] if kept is None else kept.descriptors())
    return serve_here(session, listener, request, plan, kept)


def _wait_to_hold(channel: socket.socket, parent: int, ahead: Callable[[], KeptShell | None]) -> None:
    """A holder forked ahead: until its caller hands it a session, or ends (and it with it).
    Meanwhile the shell its session will likely need starts (`ahead`), the user's rc files with it."""
    status = 0
    kept = None
    try:
        set_parent_death_signal(signal.SIGKILL)
        if os.getppid() != parent:
            return  # the caller was gone before the signal was set
        for signum in (signal.SIGCHLD, signal.SIGINT):  # a fork server ignores both; a holder waits for its shell
            signal.signal(signum, signal.SIG_DFL)
        kept = ahead()
        data, received, _, _ = socket.recv_fds(channel, 1 << 20, 3)
        head, _, message = data.partition(b"\n")
        while data and head.isdigit() and len(message) < int(head):
            data = channel.recv(1 << 20)
            message += data
        if len(received) < 2 or not head.isdigit() or len(message) != int(head):
            return  # the caller ended without handing anything over
        job = json.loads(message)
        here, listen_fd, *log = received
        os.fchdir(here)
        os.close(here)
        take_environment([os.fsencode(entry) for entry in job["environ"]])
        os.umask(job["umask"])
        set_parent_death_signal(0)  # from here on it outlives its caller, as a holder does
        status = 1
        session, request, plan = _from_spec(Path(job["path"]), job["spec"], log[0] if log else -1)
        kept, given = None, kept
        status = _become_holder(session, socket.socket(fileno=listen_fd), request, plan, given)
    except BaseException:  # nothing may return into the caller's code
        traceback.print_exc()
    finally:
        if kept is not None:
            kept.close()  # no session came for it
        sys.stderr.flush()
        os._exit(status)


def take_environment(entries: list[bytes]) -> None:
    """A caller's variables (`NAME=value` each) in a process forked to serve it, changing only
    what differs: mostly nothing, as a fork of a warm process has the variables of the call that
    started that process. tempfile keeps the first TMPDIR it saw, so it is made to look again."""
    wanted = dict(entry.partition(b"=")[::2] for entry in entries)
    for name in [name for name in os.environb if name not in wanted]:
        del os.environb[name]
    for name, value in wanted.items():
        if os.environb.get(name) != value:
            os.environb[name] = value
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        setattr(tempfile, "tempdir", None)


def plain_shell_ahead() -> KeptShell | None:
    """The shell a plain call (`safe-run -- COMMAND`, a named shell's first command) starts, from
    this process's directory and variables: for a holder forked ahead to keep."""
    return KeptShell.ahead_of(RunRequest(""))


def write_request(session: Session, request: RunRequest, plan: ShellPlan | None, caller: Caller | None = None) -> None:
    """What the holder is to run, for a holder that starts without its caller's memory; with the
    caller's variables and directory for one that another process starts (a fork server)."""
    spec = _spec(request, plan)
    if caller is not None:
        spec["caller"] = asdict(caller)
    _write_private(session.path / REQUEST_FILE, json.dumps(spec))


def read_request(path: Path, log_fd: int) -> tuple[Session, RunRequest, ShellPlan | None]:
    """The session at `path` and what its caller wrote for it to run; the file is removed."""
    session, request, plan, _ = read_request_from(path, log_fd)
    return session, request, plan


def read_request_from(path: Path, log_fd: int) -> tuple[Session, RunRequest, ShellPlan | None, Caller | None]:
    """As `read_request`, and the caller's variables and directory where it wrote them."""
    spec = json.loads((path / REQUEST_FILE).read_text(encoding="utf-8"))
    (path / REQUEST_FILE).unlink()
    caller = None if spec.get("caller") is None else Caller(**spec["caller"])
    return (*_from_spec(path, spec, log_fd), caller)


def _spec(request: RunRequest, plan: ShellPlan | None) -> dict[str, object]:
    return {"request": request_to_dict(request), "plan": None if plan is None else asdict(plan)}


def _from_spec(path: Path, spec: dict[str, Any], log_fd: int) -> tuple[Session, RunRequest, ShellPlan | None]:
    log = None if log_fd < 0 else os.fdopen(log_fd, "ab", buffering=0)
    plan = None if spec["plan"] is None else ShellPlan(**spec["plan"])
    return Session(path.name, path), request_from_dict(spec["request"], log), plan


def serve_here(
    session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None, kept: KeptShell | None = None,
) -> int:
    """The holder's life, in the process that is now its own; its exit status."""
    try:
        name_holder(session.id)
        # The holder owns its process: its stop signals end the command (or the shell) with a result.
        signals = StopSignals()
        signals.install(deferring=True)
        adopt_orphans()  # what its commands detach comes back to it, to be collected
        make_holder(session, listener, request, plan=plan, kept=kept).serve(signals.wakeup)
        collect_adopted(None)  # the shell is collected by now
        return 0
    except BaseException:  # a holder must never return into its caller's code
        traceback.print_exc()
        return 1


def main(argv: list[str]) -> int:
    """`python -m safe_run.session.launch SESSION_DIR LISTEN_FD LOG_FD`, as `Spawn` starts it."""
    path, listen_fd, log_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    session, request, plan = read_request(path, log_fd)
    return serve_here(session, socket.socket(fileno=listen_fd), request, plan)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def detach_descriptors(session: Session, listener_fd: int, request: RunRequest, kept: list[int] | None = None) -> None:
    """Only the holder's own descriptors stay open (`kept` too): nothing of its caller's (pipes, terminal)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(session.path / "holder.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target, source in ((0, devnull), (1, devnull), (2, log)):
        os.dup2(source, target)
    keep = {0, 1, 2, listener_fd, *(kept or [])}
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

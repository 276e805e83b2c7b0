"""Runs in a session's holder, from its start, whichever way it was started: forked by its caller
(`session.launch.Fork`, also in a fork server), handed its session as the holder forked ahead
(`processes.holder_ahead`), or a new interpreter (`python -m safe_run.processes.holder`, `Spawn`).

Each way ends in `serve_here`: a process of its own session, with only its own descriptors, that
runs the holder of its kind (`session.holder.make_holder`) until the command (or the named shell)
ends. What it is to serve is a `Job`, in one form whether it comes in a file (`write_job`, for a
process that starts without its caller's memory) or over a channel (a fork server's request, the
hand-over to a holder forked ahead).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import traceback
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import NoReturn

from ..core.request import RunRequest, request_from_dict, request_to_dict
from ..engine.interrupts import STOP_SIGNALS, StopSignals, Wakeup
from ..engine.shell_start import KeptShell
from ..session.adoption import adopt_orphans, collect_adopted
from ..session.hibernation import thawed
from ..session.holder import ShellPlan, make_holder
from ..session.store import HOLDER_LOG, Session
from . import keeper
from .keeper import Link
from .forking import close_all_but, standard_descriptors_to
from ..process_title import name_holder, name_worker

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from .caller import Caller

# What the caller wants run, handed to a new holder process (read and removed at its start).
REQUEST_FILE = "request.json"


@dataclass(frozen=True)
class Job:
    """What a holder is to serve, and whose place it takes (None: it is where its caller was, as a
    fork of the caller, or an interpreter the caller started, is)."""

    session: Session
    request: RunRequest
    plan: ShellPlan | None
    caller: Caller | None = None

    def encoded(self) -> bytes:
        return json.dumps({
            "path": str(self.session.path), "request": request_to_dict(self.request),
            "plan": None if self.plan is None else asdict(self.plan),
            "caller": None if self.caller is None else self.caller.encoded(),
        }).encode()

    @classmethod
    def decoded(cls, data: bytes, log_fd: int, directory: int | None = None) -> Job:
        """The job `encoded` made; the request's log on `log_fd` (-1: none), the caller's directory
        on the descriptor `directory` when one came beside it."""
        from .caller import Caller  # only a holder handed over, or a fork server, has a caller to take

        spec = json.loads(data)
        path = Path(spec["path"])
        log = None if log_fd < 0 else os.fdopen(log_fd, "ab", buffering=0)
        plan = None if spec["plan"] is None else ShellPlan(**spec["plan"])
        caller = None if spec["caller"] is None else Caller.decoded(spec["caller"], directory)
        return cls(Session(path.name, path), request_from_dict(spec["request"], log), plan, caller)


def write_job(job: Job) -> None:
    """The job, in its session's directory, for a holder that starts without its caller's memory."""
    fd = os.open(job.session.path / REQUEST_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "wb") as handle:
        handle.write(job.encoded())


def read_job(path: Path, log_fd: int) -> Job:
    """The job written for the session at `path`; the file is removed."""
    data = (path / REQUEST_FILE).read_bytes()
    (path / REQUEST_FILE).unlink()
    return Job.decoded(data, log_fd)


def hold_forked(job: Job, listener: socket.socket) -> NoReturn:
    """In a child forked to be the holder now: take its caller's place and serve, never returning
    into the code of the process it was forked from."""
    status = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # a fork server ignores it; a holder waits for its shell
        if job.caller is not None:
            job.caller.take()
        status = hold(job, listener)
    finally:
        sys.stderr.flush()
        os._exit(status)


def hold(job: Job, listener: socket.socket, kept: KeptShell | None = None, link: Link | None = None) -> int:
    """In a forked child: the holder, in a session of its own with only its own descriptors (and
    those of the shell it started ahead, `kept`, and of its keeper, `link`); its exit status."""
    for signum in STOP_SIGNALS:  # the caller's handlers came along with the fork
        signal.signal(signum, signal.SIG_DFL)
    os.setsid()
    ours = [*([] if kept is None else kept.descriptors()), *([] if link is None else link.descriptors())]
    detach_descriptors(job.session, listener.fileno(), job.request, ours)
    if link is not None:
        link.serving(job.session.path)
    return serve_here(job.session, listener, job.request, job.plan, kept, link)


def serve_here(
    session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None, kept: KeptShell | None = None,
    link: Link | None = None,
) -> int:
    """The holder's life, in the process that is now its own; its exit status. A named shell's
    holder keeps its shell, and a worker it forks serves it (`keeper`), where the kernel allows;
    `link`: this is such a worker already, forked ahead with its keeper."""
    try:
        if link is None and plan is not None and keeper.possible():
            name_holder(session.id)
            return keeper.keep(partial(_serve, session, listener, request, plan, kept), serve_on)
        return _serve(session, listener, request, plan, kept, link)
    except BaseException:  # a holder must never return into its caller's code
        traceback.print_exc()
        return 1


def _serve(
    session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None, kept: KeptShell | None,
    link: Link | None = None,
) -> int:
    """Serve the session from its start (`link`: to the keeper, in a keeper's worker)."""
    (name_holder if link is None else name_worker)(session.id)
    wakeup = _own_signals([])
    make_holder(session, listener, request, plan=plan, kept=kept, keeper=link).serve(wakeup)
    collect_adopted(None)  # the shell is collected by now
    return 0


def serve_on(state: bytes, link: Link, signals: list[int]) -> int:
    """Serve a named shell on from where the last worker handed it over (`signals`: the stop
    signals its keeper got meanwhile)."""
    holder, run = thawed(state)
    name_worker(holder.session.id)
    holder.resume(run, _own_signals(signals), link)
    collect_adopted(None)
    return 0


def _own_signals(pending: list[int]) -> Wakeup:
    """The holder owns its process: its stop signals end the command (or the shell) with a
    result; what its commands detach comes back to it, to be collected."""
    signals = StopSignals()
    signals.install(deferring=True)
    for signum in pending:
        signals.wakeup.trigger(signum)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # a keeper's worker starts with them held
    adopt_orphans()
    return signals.wakeup


def detach_descriptors(session: Session, listener_fd: int, request: RunRequest, kept: list[int] | None = None) -> None:
    """Only the holder's own descriptors stay open (`kept` too): nothing of its caller's (pipes, terminal)."""
    standard_descriptors_to(session.path / HOLDER_LOG)
    keep = {0, 1, 2, listener_fd, *(kept or [])}
    if request.log is not None:
        keep.add(request.log.fileno())
    close_all_but(keep)


def main(argv: list[str]) -> int:
    """`python -m safe_run.processes.holder SESSION_DIR LISTEN_FD LOG_FD`, as `Spawn` starts it."""
    path, listen_fd, log_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    job = read_job(path, log_fd)
    return serve_here(job.session, socket.socket(fileno=listen_fd), job.request, job.plan)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

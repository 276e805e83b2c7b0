"""The caller's side of starting a session's holder: a process of its own session, free of the
caller's terminal and pipes, that runs its holder (`session.holder`) until the command (or the named
shell) ends; the holder's process itself runs `processes.holder`.

A front end hands down one way of starting holders, a `Launcher`: a fork (`Fork`) for safe-run's
own single-threaded command line, which costs nothing and spares each session a second start-up
of Python (a warm process's spare child forks its holder ahead with it); a fork server
(`session.forkserver.ForkServer`) for the many-threaded MCP server and the Python API, which cannot fork
themselves safely; and a new interpreter (`Spawn`, `python -m safe_run.processes.holder`) only
where neither can be had, so that it carries nothing of its caller.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from ..core.request import RunRequest
from ..processes.holder import Job, hold_forked, write_job
from .adoption import end_child
from .holder import ShellPlan
from .store import HOLDER_LOG, Session

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from ..engine.shell_start import KeptShell
    from ..processes.caller import Caller


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
    (`session.forkserver.ForkServer`) for a process with threads, `Spawn` when neither can be had.
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
        write_job(Job(session, request, plan))
        log_fd = -1 if request.log is None else request.log.fileno()
        passed = [listener.fileno()] + ([log_fd] if log_fd >= 0 else [])
        with open(session.path / HOLDER_LOG, "ab") as errors:
            os.chmod(errors.fileno(), 0o600)
            holder = subprocess.Popen(
                [sys.executable, "-m", "safe_run.processes.holder", str(session.path), str(listener.fileno()), str(log_fd)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, pass_fds=passed,
                start_new_session=True,
            )
        session.write_meta(holder_pid=holder.pid)
        # Collected when it ends, so that a long-lived caller (the Python API) keeps no zombie.
        threading.Thread(target=holder.wait, name=f"safe-run holder {session.id}", daemon=True).start()


class Fork:
    """The caller forks the holder: for safe-run's own single-threaded command line, where a fork
    costs nothing and spares each session a second start-up of Python. The forked holder's pid is
    returned, for the caller to collect it if it ends while the caller still runs.

    A warm process's spare child (`processes.spare`) and a fork server (`processes.fork_server`)
    fork their holder ahead with `prepare`, before its call comes: that child
    (`processes.holder_ahead`) then waits, and `start` hands it what to serve, with the caller's
    variables and directory as they are by then (a fork and the child's first steps cost about
    2 ms of a warm call here). Unused, it ends with this process."""

    def __init__(self, private: Sequence[socket.socket] = ()) -> None:
        """`private`: this process's own connections, which a holder it forks (ahead or at once)
        does not keep (a fork server's to its caller: kept open by the child waiting ahead, it
        would still take the caller's requests once the server itself had died, and nobody would
        answer them)."""
        self._ready: tuple[int, socket.socket] | None = None
        self._private = private

    def prepare(self, ahead: Callable[[], KeptShell | None] = lambda: None) -> None:
        """Fork the holder now; `ahead` starts the shell it will likely need, in that holder."""
        if self._ready is None:
            # Only a process that forks ahead (a spare, a fork server) imports what that takes.
            from ..processes.forking import fork_with_channel
            from ..processes.holder_ahead import wait_to_hold

            parent = os.getpid()
            self._ready = fork_with_channel(lambda channel: wait_to_hold(channel, parent, ahead), self._private)

    def abandon(self) -> None:
        """Let a holder forked ahead go unused (see `let_go`)."""
        if self._ready is not None:
            from ..processes.forking import let_go

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
        job = Job(session, request, plan, caller)
        pid = self._hand_over(job, listener) or os.fork()
        if pid == 0:
            for conn in self._private:
                conn.close()
            hold_forked(job, listener)
        session.write_meta(holder_pid=pid)
        return pid

    def _hand_over(self, job: Job, listener: socket.socket) -> int | None:
        """The holder forked ahead, once it has what to serve; None when there is none (or it is gone).
        A job without a caller is this process's own, whose directory goes as a descriptor."""
        if self._ready is None:
            return None
        from ..processes.caller import Caller
        from ..processes.forking import framed, send_with_descriptors

        (pid, channel), self._ready = self._ready, None
        caller = job.caller or Caller.here(".")
        try:
            here = caller.directory_descriptor()
            try:
                passed = [here, listener.fileno()] + ([job.request.log.fileno()] if job.request.log is not None else [])
                send_with_descriptors(channel, framed(replace(job, caller=caller).encoded()), passed)
            finally:
                os.close(here)
        except OSError:
            end_child(pid, 0.0)
            return None
        finally:
            channel.close()
        return pid

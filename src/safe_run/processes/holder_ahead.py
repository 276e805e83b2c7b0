"""Runs in a holder forked ahead, waiting, forked by a warm process's spare child or a fork server
(`session.launch.Fork.prepare`): until its caller hands it a session, or ends (and it with it).

Meanwhile the shell its session will likely need starts, the user's rc files with it
(`shell_start.KeptShell`), so that a call that comes later costs neither a fork nor that start. It
is handed a `processes.holder.Job` framed on its channel, with the caller's directory, the
session's listening socket and the request's log passed beside it; it then takes its caller's
place and is the holder (`processes.holder`).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from functools import partial
from types import FrameType

from ..core.request import RunRequest
from ..engine.shell_start import KeptShell
from ..session.adoption import set_parent_death_signal
from .caller import Caller, anticipate
from .forking import die_with, frame_length, receive_with_descriptors, unframed
from . import keeper
from .keeper import Link
from .holder import Job, hold, serve_on

# What comes beside a job: the caller's directory, the listening socket, and the request's log.
PASSED = 3


class CallerGone(BaseException):
    """The caller ended before it handed a session over (its death signal, SIGTERM, came)."""


def _caller_gone(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once: the shell kept ahead is closed after this
    raise CallerGone


def wait_to_hold(channel: socket.socket, parent: int, ahead: Callable[[], KeptShell | None]) -> None:
    """Start the shell `ahead`, then wait for a session and be its holder; never returns into the
    code of the process that forked it.

    Where a named shell's holder keeps its shell in a keeper (`keeper`), this process is that
    keeper from the start, whatever session comes: forked before anything ran in it, its pages
    stay those it shares with the process that forked it. Its worker starts the shell and waits.
    A caller that ends first (most calls need no new session: a named shell's next command, a
    poll) sends SIGTERM by its death, not SIGKILL: the shell kept ahead is then closed as a
    window is, once its theme's first jobs are done, rather than cut off in the middle of them."""
    if not keeper.possible():
        _wait_to_hold(channel, parent, ahead)  # never returns
    status = 0
    try:
        if die_with(parent, signal.SIGTERM):
            status = keeper.keep(partial(_held_by_worker, channel, ahead), serve_on)
    except BaseException:  # nothing may return into the caller's code
        traceback.print_exc()
    finally:
        os._exit(status)


def _held_by_worker(channel: socket.socket, ahead: Callable[[], KeptShell | None], link: Link) -> int:
    """A keeper's worker waits and holds (its parent is its keeper)."""
    _wait_to_hold(channel, os.getppid(), ahead, link)
    return 1  # never comes here: it ends as it holds


def _wait_to_hold(
    channel: socket.socket, parent: int, ahead: Callable[[], KeptShell | None], link: Link | None = None,
) -> None:
    """`wait_to_hold`'s waiting and holding, in the process forked ahead or its keeper's worker
    (`link`), whose `parent` is then that keeper."""
    status = 0
    kept = None
    try:
        signal.signal(signal.SIGTERM, _caller_gone)
        if not die_with(parent, signal.SIGTERM):
            return  # the caller was gone before the signal was set
        for signum in (signal.SIGCHLD, signal.SIGINT):  # a fork server ignores both; a holder waits for its shell
            signal.signal(signum, signal.SIG_DFL)
        # A shell half started cannot be closed: the caller's end waits until it is whole.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        kept = ahead()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        handed = _handed_over(channel)
        if handed is None:
            return  # the caller ended without handing anything over
        job, listener = handed
        # From here on a holder outlives its caller, and a keeper's worker lives as long as its keeper.
        set_parent_death_signal(0 if link is None else signal.SIGKILL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        status = 1
        kept, given = None, kept
        status = hold(job, listener, given, link)
    except CallerGone:
        pass
    except BaseException:  # nothing may return into the caller's code
        traceback.print_exc()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a bounded close, not one cut in two
        if kept is not None:
            kept.close()  # no session came for it
        sys.stderr.flush()
        os._exit(status)


def _handed_over(channel: socket.socket) -> tuple[Job, socket.socket] | None:
    """The job handed over, its caller's place taken, and the listening socket; None for none."""
    try:
        data, fds, _ = receive_with_descriptors(channel, frame_length, PASSED)
    except (ValueError, OSError):
        return None
    if len(fds) < 2:
        for fd in fds:
            os.close(fd)
        return None
    here, listen_fd, *log = fds
    job = Job.decoded(unframed(data), log[0] if log else -1, directory=here)
    if job.caller is not None:
        job.caller.take()
    os.close(here)
    return job, socket.socket(fileno=listen_fd)


def shell_ahead(caller: Caller | None = None) -> KeptShell | None:
    """The shell a plain call (`safe-run -- COMMAND`, a named shell's first command) starts, from
    `caller`'s directory and with its variables and umask (this process's own when None): for a
    holder forked ahead to keep (it takes its own caller's place again when its call comes)."""
    if caller is not None:
        anticipate(caller)
    return KeptShell.ahead_of(RunRequest(""))

"""Runs in the fork server, `python -m safe_run.processes.fork_server FD`, started by the MCP server
or the Python API (`session.forkserver.ForkServer.open`): it forks their sessions' holders.

Single-threaded, safe-run imported, so that every fork is safe and cheap. Each request is a
`processes.holder.Job` with its caller, in one message, and the session's listening socket (and
the request's log) passed beside it; the answer is the holder's pid. One holder waits forked
ahead (`session.launch.Fork`), its shell started where the last request came from and with its
variables. It exits when its caller closes its end of the channel.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import socket
import sys

from ..engine import polling
from ..session.forkserver import JOB_BYTES
from ..session.launch import Fork
from .caller import Caller
from .holder import Job
from .holder_ahead import shell_ahead
from ..process_title import name_fork_server


# How long after a request the next holder is forked ahead: a first command is mostly answered
# by then, and the fork and the next shell's start (its rc, a prompt theme's first work) would
# otherwise take the two cores of a small machine from it (about 2 ms of a first Shell.run here).
AHEAD_AFTER_S = 0.05


def serve(channel: socket.socket) -> int:
    """Start a holder for each request until the caller closes its end, one forked ahead after
    each (`AHEAD_AFTER_S`), unless the next request comes first."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel collects the holders
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what was imported stays shared with the holders, not copied on the first collection
    forks = Fork(private=[channel])
    last: Caller | None = None
    try:
        while True:
            if last is None or not polling.readable([channel.fileno()], AHEAD_AFTER_S):
                # The next request likely comes from where the last came: its shell starts there.
                forks.prepare(functools.partial(shell_ahead, last))
            message, fds, _, _ = socket.recv_fds(channel, JOB_BYTES, 2)
            if not message:
                return 0
            pid, last = _start_holder(forks, message, fds[0], fds[1] if len(fds) > 1 else -1)
            channel.send(str(pid).encode())
    finally:
        forks.abandon()


def _start_holder(forks: Fork, encoded: bytes, listen_fd: int, log_fd: int) -> tuple[int, Caller | None]:
    """The holder of the `encoded` job (the one forked ahead, or a fork now), and its caller."""
    listener = socket.socket(fileno=listen_fd)
    try:
        job = Job.decoded(encoded, log_fd)
    except BaseException:
        listener.close()
        if log_fd >= 0:
            os.close(log_fd)
        raise
    try:
        return forks.start(job.session, listener, job.request, job.plan, job.caller), job.caller
    finally:
        listener.close()  # the holder has its own now
        if job.request.log is not None:
            job.request.log.close()


if __name__ == "__main__":
    name_fork_server()
    sys.exit(serve(socket.socket(fileno=int(sys.argv[1]))))

"""Runs in the fork server, `python -m safe_run.processes.fork_server FD`, started by the MCP server
or the Python API (`session.forkserver.ForkServer.open`): it forks their sessions' holders.

Single-threaded, safe-run imported, so that every fork is safe and cheap. Each request is a
session's directory, whose request file holds the `processes.holder.Job` with its caller, and the
session's listening socket (and the request's log) passed beside it; the answer is the holder's
pid. One holder waits forked ahead (`session.launch.Fork`), its shell started where the last
request came from and with its variables. It exits when its caller closes its end of the channel.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import socket
import sys
from pathlib import Path

from ..session.forkserver import MESSAGE_BYTES
from ..session.launch import Fork
from .caller import Caller
from .holder import read_job
from .holder_ahead import shell_ahead
from ..process_title import name_fork_server


def serve(channel: socket.socket) -> int:
    """Start a holder for each request until the caller closes its end, one forked ahead each time."""
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel collects the holders
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()  # what was imported stays shared with the holders, not copied on the first collection
    forks = Fork()
    last: Caller | None = None
    try:
        while True:
            # The next request likely comes from where the last came: its shell starts there.
            forks.prepare(functools.partial(shell_ahead, last))
            message, fds, _, _ = socket.recv_fds(channel, MESSAGE_BYTES, 2)
            if not message:
                return 0
            pid, last = _start_holder(forks, Path(message.decode()), fds[0], fds[1] if len(fds) > 1 else -1)
            channel.send(str(pid).encode())
    finally:
        forks.abandon()


def _start_holder(forks: Fork, path: Path, listen_fd: int, log_fd: int) -> tuple[int, Caller | None]:
    """The holder of the session at `path` (the one forked ahead, or a fork now), and its caller."""
    listener = socket.socket(fileno=listen_fd)
    try:
        job = read_job(path, log_fd)
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

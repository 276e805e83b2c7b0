"""The caller's side of a fork server: one single-threaded process that forks session holders from
its own copy of safe-run, already imported, for a process that cannot fork itself (the MCP server,
the Python API); the server's own body is `processes.fork_server`.

A holder started as a new interpreter costs about 0.1 s of CPU before it does anything; fifty
clients of the MCP server starting their shells at once then queue for the CPU for seconds. A
many-threaded server cannot fork itself safely (a lock held by another thread stays held in the
child), so it starts this process once and asks it for each holder. The fork server forks ahead
as the command line's warm process does (`session.launch.Fork`): one holder waits for the next request,
with the shell a plain request needs started and its rc files loaded (`shell_start.KeptShell`),
so that a request that comes later costs neither a fork nor the shell's start. Each holder takes
the variables and directory its caller had when it asked.

The server process holds its end of a socket pair; when the caller goes (however it ends), the
server reads the end of it and exits. Its children are holders in sessions of their own, which
the kernel collects for it (SIGCHLD ignored), so nothing piles up even without an init.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

from ..core.request import RunRequest
from ..processes.caller import Caller
from ..processes.holder import Job
from .holder import ShellPlan
from .launch import Launcher, Spawn
from .store import Session

# How long a holder's fork may take to be answered before the fork server counts as stuck.
ANSWER_S = 10.0
# How long the fork server gets to exit once its caller closes its end.
EXIT_S = 2.0
MESSAGE_BYTES = 4096
# The largest job sent over the socket: its caller's variables are most of it, a few kilobytes.
# A larger one goes in a file to a new interpreter (`Spawn`), as a caller without a fork server's.
JOB_BYTES = 1 << 18


class ForkServer:
    """Starts holders by asking the fork server process; a new interpreter while it is not there.

    Safe to call from many threads: one request at a time goes over the socket, and each takes
    about a millisecond.
    """

    def __init__(self, fallback: Launcher | None = None) -> None:
        self._fallback = fallback or Spawn()
        self._lock = threading.Lock()
        self._channel: socket.socket | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def open(self) -> ForkServer:
        """Start the process; it imports safe-run while the caller goes on."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, JOB_BYTES + MESSAGE_BYTES)  # one job fits in one message
        with theirs:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "safe_run.processes.fork_server", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
        ours.settimeout(ANSWER_S)
        self._channel = ours
        return self

    def start(self, session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> None:
        with self._lock:
            job = Job(session, request, plan, Caller.here()).encoded()
            if self._channel is None or len(job) > JOB_BYTES:
                self._fallback.start(session, listener, request, plan)
                return
            passed = [listener.fileno()] + ([request.log.fileno()] if request.log is not None else [])
            try:
                socket.send_fds(self._channel, [job], passed)
            except OSError:
                # Gone before it read the request (nothing was forked for it): a new interpreter.
                self._lost()
                self._fallback.start(session, listener, request, plan)
                return
            try:
                answer = self._channel.recv(MESSAGE_BYTES)
            except OSError:
                answer = b""
            if not answer.isdigit():
                self._lost()  # stuck or gone after the request: it may have forked, so no second holder
                raise OSError(f"the holder of session {session.id} could not be started (the fork server did not answer)")
        # The fork server recorded the holder's pid before it answered (`session.launch.Fork.start`).

    def close(self, within: float = EXIT_S) -> bool:
        """Let the process go (it exits when its end of the socket closes) and collect it, killed
        if it has not exited within `within` seconds; whether it exited by itself."""
        with self._lock:
            return self._lost(within)

    def _lost(self, within: float = EXIT_S) -> bool:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        ended = True
        if self._process is not None:
            try:
                self._process.wait(within)
            except subprocess.TimeoutExpired:
                ended = False
                self._process.kill()
                self._process.wait()
            self._process = None
        return ended

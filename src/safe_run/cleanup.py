"""Stopping a command and everything it started, the way a careful person at the terminal would.

First Ctrl-C (the program may clean up after itself), then SIGTERM to its process group, then
SIGKILL. Background jobs (`cmd &`) live in other process groups of the same session, so the
whole session is swept at the end. What had to be killed is reported, so a caller learns that
its command left something running. A process that left the session (`setsid`, a daemon) is out
of reach of this sweep, as it is of a closed terminal.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from .kernel import KernelObserver, ProcessInfo
from .result import Killed
from .terminal import Terminal

# How long each step of the escalation waits for the processes to go.
GRACE_S = 0.5
POLL_S = 0.01
CTRL_C = b"\x03"


class Reaper:
    """Carries out the stopping and the sweeping for one run."""

    def __init__(self, terminal: Terminal, kernel: KernelObserver) -> None:
        self._terminal = terminal
        self._kernel = kernel
        self._shell_pgrp = terminal.pid

    def stop_foreground(self) -> list[Killed]:
        """Interrupt the foreground command; escalate while its process group stays."""
        pgrp = self._foreground_pgrp()
        if pgrp is None:
            return []
        victims = self._members(pgrp)
        self._terminal.write(CTRL_C)
        if pgrp == self._shell_pgrp:
            return []  # a shell builtin (`read`): Ctrl-C brings the shell back, which is closed next
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if _group_gone(pgrp, GRACE_S):
                break
            _signal_group(pgrp, signum)
        return victims

    def kill_session(self) -> list[Killed]:
        """End every process left in the shell's session: background jobs and their children."""
        leftovers = [p for p in self._kernel.session_processes() if p.pid != self._terminal.pid]
        groups = {p.pgrp for p in leftovers if p.pgrp != self._shell_pgrp}
        for pgrp in groups:
            _signal_group(pgrp, signal.SIGTERM)
            _signal_group(pgrp, signal.SIGCONT)
        # Without job control a background job stays in the shell's own group, which is not
        # signalled as a whole: the shell is closed separately.
        strays = [p.pid for p in leftovers if p.pgrp == self._shell_pgrp]
        for pid in strays:
            _signal_pid(pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_S
        for pgrp in groups:
            if not _group_gone(pgrp, max(0.0, deadline - time.monotonic())):
                _signal_group(pgrp, signal.SIGKILL)
        for pid in strays:
            if not _process_gone(pid, max(0.0, deadline - time.monotonic())):
                _signal_pid(pid, signal.SIGKILL)
        return [_killed(p) for p in leftovers]

    def _foreground_pgrp(self) -> int | None:
        try:
            return os.tcgetpgrp(self._terminal.fd)
        except OSError:
            return None

    def _members(self, pgrp: int) -> list[Killed]:
        return [_killed(p) for p in self._kernel.session_processes() if p.pgrp == pgrp]


def _killed(process: ProcessInfo) -> Killed:
    return Killed(pid=process.pid, command=process.comm)


def _group_gone(pgrp: int, within: float) -> bool:
    """Wait up to `within` seconds for a process group to have no members left."""
    return _gone(lambda: os.killpg(pgrp, 0), within)


def _process_gone(pid: int, within: float) -> bool:
    return _gone(lambda: os.kill(pid, 0), within)


def _gone(probe: Callable[[], None], within: float) -> bool:
    """Wait up to `within` seconds for `probe` (a signal 0) to find nobody."""
    deadline = time.monotonic() + within
    while True:
        try:
            probe()
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_S)


def _signal_group(pgrp: int, signum: int) -> None:
    try:
        os.killpg(pgrp, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_pid(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass

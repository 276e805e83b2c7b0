"""A holder adopts and collects the processes its shell's commands leave behind.

A command that detaches a process (`(job &)`, `setsid job &`, a daemon's double fork) leaves an
orphan, which the kernel hands to the nearest subreaper, else to PID 1. In a container started
without an init, PID 1 is the container's program (`sleep infinity`, a server) and never collects
its children: every such orphan stays a zombie once it ends. A holder marks itself a child
subreaper, so its shell's orphans come to it, and collects them between steps of the run loop and
between commands; a SIGCHLD handler (which does nothing itself) makes each end wake that loop
through the process's signal wake-up descriptor.

The shell is the holder's child too, and its exit status belongs to the run (`Terminal` waits for
it by pid): the shell's pid is only ever looked at, never collected here.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from ..engine import polling

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
PR_SET_CHILD_SUBREAPER = 36
# How long a killed child gets to be collected (SIGKILL ends a process at once, unless it is
# stuck in the kernel).
KILLED_EXIT_S = 1.0


def adopt_orphans() -> bool:
    """Become the subreaper of everything started below this process; whether the kernel agreed."""
    if not sys.platform.startswith("linux") or not _subreaper(1):
        return False
    signal.signal(signal.SIGCHLD, _wake)
    return True


@contextmanager
def adopting() -> Iterator[None]:
    """This process is the subreaper of what is started below it while the block runs, collects
    what came to it at the end, and then is as it was (no subreaper, its own SIGCHLD handler):
    a foreground run's call in a container whose PID 1 never collects (see the module)."""
    if not sys.platform.startswith("linux"):
        yield
        return
    previous = signal.getsignal(signal.SIGCHLD)
    adopted = adopt_orphans()
    try:
        yield
    finally:
        if adopted:
            collect_adopted(None)
            _subreaper(0)
            signal.signal(signal.SIGCHLD, previous)


def _subreaper(on: int) -> bool:
    return _prctl(PR_SET_CHILD_SUBREAPER, on)


def _prctl(option: int, value: int) -> bool:
    """prctl(2) with one argument; whether the kernel agreed. One libc handle for the process
    and every process it forks: each new one makes a class of its own, pages that a forked
    process would otherwise write anew each time."""
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
        return bool(_LIBC.prctl(option, value, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


_LIBC: ctypes.CDLL | None = None


def _wake(signum: int, frame: FrameType | None) -> None:
    """Nothing: the signal's byte on the wake-up descriptor is what wakes the loop."""


def collect_adopted(shell: int | None) -> list[int]:
    """Collect every ended child but `shell`; the pids collected. Never waits.

    Each ended child is looked at first without being collected, so the shell's status stays for
    its own wait; once the shell is the ended child seen, the rest wait for the next call (the
    run collects the shell right away, and the next turn gets the others).
    """
    collected: list[int] = []
    while True:
        try:
            seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return collected
        if seen is None or seen.si_pid == 0 or seen.si_pid == shell:
            return collected
        try:
            os.waitpid(seen.si_pid, 0)
        except ChildProcessError:
            return collected
        collected.append(seen.si_pid)


def ended_children() -> Iterator[tuple[int, int]]:
    """Collect each child of this process that has ended, never waiting: its pid and wait status."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        yield pid, status


def collect_at_exit(pid: int, timeout: float) -> None:
    """Collect the child `pid` as this process ends (waiting at most `timeout` seconds), not now,
    so that the answer goes out first: at its exit, or where it ends by os._exit after
    `collect_pending` (the command line's own quick exit). A warm process's child, which ends by
    os._exit at once, leaves it to the subreaper above it: the warm process is one."""
    if not _PENDING:
        import atexit

        atexit.register(collect_pending)
    _PENDING.append((pid, timeout))


def collect_pending() -> None:
    """Collect the children `collect_at_exit` left for this process's end."""
    while _PENDING:
        collect_child(*_PENDING.pop())


# The children to collect as this process ends (`collect_at_exit`): a process's own, as its exit
# handlers are.
_PENDING: list[tuple[int, float]] = []


def end_child(pid: int, grace: float) -> None:
    """Collect the child `pid` once it ends, killing it if it has not within `grace` seconds: a
    child told to go (its channel closed) or found unreachable, never left as a zombie."""
    if not collect_child(pid, grace):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        collect_child(pid, KILLED_EXIT_S)


def set_parent_death_signal(signum: int) -> None:
    """The signal this process gets when its parent ends (0: none): what a child forked to serve
    its parent alone must not outlive, and what it clears once it is to outlive it."""
    _prctl(PR_SET_PDEATHSIG, signum)


def collect_child(pid: int, timeout: float) -> bool:
    """Wait at most `timeout` seconds for the child `pid` to end, and collect it; whether it did.

    A caller that forked a holder collects it once the holder has given the final answer (it
    exits right after), so that the holder's own end is not left to a PID 1 that never collects.
    """
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        fd = -1
    try:
        if fd >= 0:
            polling.readable([fd], timeout)
        else:  # no pidfd (Linux before 5.3): look again every few milliseconds
            deadline = time.monotonic() + timeout
            while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None and time.monotonic() < deadline:
                time.sleep(0.005)
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)

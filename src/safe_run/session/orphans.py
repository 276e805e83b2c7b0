"""What a killed holder leaves running, found and ended by the next session call.

A holder killed with SIGKILL cannot clean up after its command: its terminal closes, the shell
hangs up its jobs and exits, and a job that ignores SIGHUP (`nohup`, `trap '' HUP`) goes on in the
shell's session. The holder records the shell's pid, which is the session id of everything the
command started, and the shell's start time. What is still in that session and started no earlier
than the shell is the command's: a session id can only name another session once every process of
the first one is gone and the pid space has wrapped around.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.evidence import GONE_STATES, ProcessInfo, parse_stat
from ..engine.kernel import read_stat
from ..core.result import Killed

# How long the leftovers get to end after SIGTERM before SIGKILL.
GRACE_S = 0.5
POLL_S = 0.02


@dataclass(frozen=True)
class Process:
    pid: int
    comm: str
    session: int
    start: int  # clock ticks since boot


def parse_process(text: str) -> Process | None:
    """A /proc/<pid>/stat line, or None for a zombie, a dead process, or something unreadable."""
    try:
        return _alive(parse_stat(text))
    except ValueError:
        return None


def _alive(info: ProcessInfo | None) -> Process | None:
    if info is None or info.state in GONE_STATES:
        return None
    return Process(info.pid, info.comm, info.session, info.start)


def left_behind(processes: Iterable[Process], shell_pid: int, shell_start: int) -> list[Process]:
    """The processes of the shell's session that started no earlier than the shell."""
    return sorted((p for p in processes if p.session == shell_pid and p.start >= shell_start), key=lambda p: p.pid)


def process(pid: int) -> Process | None:
    return _alive(read_stat(pid))


def end_left_behind(shell_pid: int, shell_start: int) -> list[Killed]:
    """End what the command left (SIGTERM, then SIGKILL), and say what that was."""
    victims = left_behind(_all_processes(), shell_pid, shell_start)
    for victim in victims:
        _signal(victim.pid, signal.SIGTERM)
        _signal(victim.pid, signal.SIGCONT)
    deadline = time.monotonic() + GRACE_S
    remaining = victims
    while remaining and time.monotonic() < deadline:
        time.sleep(POLL_S)
        remaining = [v for v in remaining if _same(v)]
    for victim in remaining:
        _signal(victim.pid, signal.SIGKILL)
    return [Killed(pid=v.pid, command=v.comm) for v in victims]


def _same(victim: Process) -> bool:
    """Still there, and still the same process (not a new one that got its pid)."""
    now = process(victim.pid)
    return now is not None and now.start == victim.start


def _all_processes() -> list[Process]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    found = (process(int(name)) for name in names if name.isdigit())
    return [p for p in found if p is not None and p.pid != os.getpid()]


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass

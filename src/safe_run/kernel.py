"""What the kernel says about the shell's terminal, without trusting anything printed on it.

Output can lie: a command may print something that looks like a prompt, and a password prompt may
print nothing at all. The kernel does not: the terminal's foreground process group says whether
the shell or a command owns the terminal, and the system call a task sleeps in says whether it is
waiting for a key.

This is Linux only and best effort. Processes come and go between two reads of /proc, so any read
may find nothing; that is an answer ("gone", "unknown"), never an exception for the caller. The
rules work on strings and are pure, so each one can be tested without a terminal.
"""

from __future__ import annotations

import os
import platform
import sys
import termios
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# A decoded system call: its name and its six raw arguments.
Syscall = tuple[str, tuple[int, ...]]

# Only the calls the rules look at. Numbers from the kernel's uapi headers (asm/unistd_64.h for
# x86_64, asm-generic/unistd.h for the rest); the generic table has no poll, select or epoll_wait.
_X86_64 = {
    0: "read", 19: "readv", 7: "poll", 23: "select", 270: "pselect6", 271: "ppoll",
    232: "epoll_wait", 281: "epoll_pwait", 441: "epoll_pwait2", 61: "wait4", 247: "waitid",
    35: "nanosleep", 230: "clock_nanosleep",
}
_GENERIC = {
    63: "read", 65: "readv", 72: "pselect6", 73: "ppoll", 22: "epoll_pwait", 441: "epoll_pwait2",
    260: "wait4", 95: "waitid", 101: "nanosleep", 115: "clock_nanosleep",
}
SYSCALL_TABLES: dict[str, dict[int, str]] = {
    "x86_64": _X86_64,
    "aarch64": _GENERIC,
    "riscv64": _GENERIC,
    "loongarch64": _GENERIC,
}

READ_CALLS = frozenset({"read", "readv"})
POLL_CALLS = frozenset({"poll", "select", "pselect6", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2"})

# Whatever terminal a process opened through /dev/tty is its controlling one: for a process of the
# foreground group, that is the shell's terminal.
CONTROLLING_TTY = "/dev/tty"
# Zombies and the dead hold no terminal and run nothing.
GONE_STATES = frozenset({"Z", "X", "x"})
# Finding the other members of a process group means reading every /proc/<pid>/stat; the result is
# reused for this long while the foreground group stays the same.
RESCAN_INTERVAL_S = 1.0


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    comm: str
    state: str  # R, S, D, T, Z ...
    pgrp: int
    session: int


@dataclass(frozen=True)
class Observation:
    shell_in_foreground: bool  # the terminal's foreground group is the shell's own
    foreground_pgrp: int | None
    waiting_for_terminal: bool  # a task of the foreground group is blocked reading the terminal
    canonical: bool  # ICANON of the terminal
    foreground_command: str | None  # comm of the group's leader, or of the first member found


def parse_stat(text: str) -> ProcessInfo:
    """Read /proc/<pid>/stat, whose comm may itself hold spaces and parentheses.

    Raises ValueError when the text is not a stat line.
    """
    head, closing, tail = text.rpartition(")")
    pid_text, opening, comm = head.partition(" (")
    fields = tail.split()
    if not closing or not opening or len(fields) < 4:
        raise ValueError(f"not a /proc stat line: {text[:80]!r}")
    return ProcessInfo(
        pid=int(pid_text), comm=comm, state=fields[0], pgrp=int(fields[2]), session=int(fields[3])
    )


def parse_syscall(text: str, arch: str) -> Syscall | None:
    """Decode /proc/<pid>/syscall; None when the task runs, is not in a call, or the call is not one we know.

    The number is decimal and the arguments hex; a task stopped outside a call shows "-1 sp pc".
    """
    table = SYSCALL_TABLES.get(arch)
    fields = text.split()
    if table is None or len(fields) < 7:
        return None
    try:
        number = int(fields[0])
        args = tuple(int(field, 16) for field in fields[1:7])
    except ValueError:
        return None
    name = table.get(number)
    return None if name is None else (name, args)


def parse_tty_index(fdinfo: str) -> int | None:
    """The pts number of a PTY master, from its /proc/<pid>/fdinfo/<fd> (Linux 5.x and later)."""
    for line in fdinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "tty-index":
            try:
                return int(value.strip())
            except ValueError:
                return None
    return None


def is_terminal(path: str | None, terminal: str | None) -> bool:
    """Whether an fd's target (readlink of /proc/<pid>/fd/<n>) is the shell's terminal."""
    if path is None:
        return False
    return path == CONTROLLING_TTY or (terminal is not None and path == terminal)


def blocked_on_terminal(
    call: Syscall | None, canonical: bool, fd_target: Callable[[int], str | None], terminal: str | None
) -> bool:
    """Whether a task sleeping in `call` waits for input from the terminal.

    A read says which fd it reads. A poll, select or epoll does not (the fd set is in the task's
    memory), and servers sleep in them on sockets all day: those count only when the terminal is in
    non-canonical mode, which REPLs, pagers and editors switch on to read key by key, and the task
    has the terminal on stdin. `fd_target` resolves an fd number of the task to its target.
    """
    if call is None:
        return False
    name, args = call
    if name in READ_CALLS:
        return bool(args) and is_terminal(fd_target(args[0]), terminal)
    if name in POLL_CALLS:
        return not canonical and is_terminal(fd_target(0), terminal)
    return False


def session_members(processes: list[ProcessInfo], session: int, excluded: set[int]) -> list[ProcessInfo]:
    """What a sweep of the session must still end: zombies are dead already, and `excluded` holds
    what the caller ends another way (the shell, closed with its terminal) or must not end (itself)."""
    return sorted(
        (p for p in processes if p.session == session and p.pid not in excluded and p.state not in GONE_STATES),
        key=lambda p: p.pid,
    )


class KernelObserver:
    """Asks /proc and the PTY master about the shell and whatever owns its terminal.

    `available` is False off Linux, without /proc, when the master cannot report its foreground
    group, or on an architecture whose system call numbers are not in SYSCALL_TABLES: callers then
    fall back to timers rather than act on half an answer.
    """

    def __init__(self, master_fd: int, shell_pid: int, *, rescan_interval: float = RESCAN_INTERVAL_S) -> None:
        self._master_fd = master_fd
        self._shell_pid = shell_pid
        self._rescan_interval = rescan_interval
        self._arch = platform.machine()
        self._terminal: str | None = None
        self._scanned_pgrp: int | None = None
        self._scanned_at = 0.0
        self._scanned_pids: list[int] = []
        self._proc = sys.platform.startswith("linux") and _read(f"/proc/{os.getpid()}/stat") is not None
        self._available = self._proc and self._arch in SYSCALL_TABLES and self._foreground_pgrp_answers()

    @property
    def available(self) -> bool:
        return self._available

    def observe(self) -> Observation | None:
        """One look at the terminal; None when it cannot be had or the shell is gone."""
        if not self._available:
            return None
        shell = _read_stat(f"/proc/{self._shell_pid}/stat")
        canonical = self._canonical()
        if shell is None or shell.state in GONE_STATES or canonical is None:
            return None
        pgrp = self._foreground_pgrp()
        command, waiting = self._inspect_group(pgrp, canonical) if pgrp is not None else (None, False)
        return Observation(
            shell_in_foreground=pgrp == shell.pgrp,
            foreground_pgrp=pgrp,
            waiting_for_terminal=waiting,
            canonical=canonical,
            foreground_command=command,
        )

    def session_processes(self) -> list[ProcessInfo]:
        """Every live process of the shell's session but the shell, background jobs included.

        The shell leads its session, so the session id is its pid, which still names the session
        after the shell has gone. A shell that is not a session leader yields nothing here, rather
        than the caller's own session.
        """
        if not self._proc:
            return []
        return session_members(_scan_proc(), self._shell_pid, excluded={self._shell_pid, os.getpid()})

    def _foreground_pgrp_answers(self) -> bool:
        try:
            os.tcgetpgrp(self._master_fd)
        except OSError:
            return False
        return True

    def _foreground_pgrp(self) -> int | None:
        """The terminal's foreground group; 0 (no group yet, or the session is over) is None."""
        try:
            pgrp = os.tcgetpgrp(self._master_fd)
        except OSError:
            return None
        return pgrp if pgrp > 0 else None

    def _canonical(self) -> bool | None:
        try:
            lflag = termios.tcgetattr(self._master_fd)[3]
        except (OSError, termios.error):
            return None
        return bool(lflag & termios.ICANON)

    def _terminal_path(self) -> str | None:
        """The slave's path as other processes' fd links show it, found once."""
        if self._terminal is None:
            self._terminal = self._terminal_from_master() or self._terminal_from_shell()
        return self._terminal

    def _terminal_from_master(self) -> str | None:
        index = parse_tty_index(_read(f"/proc/{os.getpid()}/fdinfo/{self._master_fd}") or "")
        if index is None:
            return None
        path = f"/dev/pts/{index}"
        return path if os.path.exists(path) else None

    def _terminal_from_shell(self) -> str | None:
        target = _readlink(f"/proc/{self._shell_pid}/fd/0")
        return target if target and target.startswith("/dev/") and target != "/dev/null" else None

    def _inspect_group(self, pgrp: int, canonical: bool) -> tuple[str | None, bool]:
        """The group's command name, and whether any of its tasks waits for the terminal."""
        terminal = self._terminal_path()
        command = None
        for proc in self._group_members(pgrp):
            if command is None:
                command = proc.comm
            if self._process_waiting(proc.pid, canonical, terminal):
                return command, True
        return command, False

    def _group_members(self, pgrp: int) -> Iterator[ProcessInfo]:
        """The leader first, found without a scan and usually enough; the others only if asked for.

        The leader may be gone while the group lives on (`echo hi | less`), and a member may be a
        grandchild of the shell (`npm run` starting node), so the others come from a scan of /proc.
        """
        leader = _live_member(pgrp, pgrp)
        if leader is not None:
            yield leader
        for pid in self._other_member_pids(pgrp):
            member = _live_member(pid, pgrp)
            if member is not None:
                yield member

    def _other_member_pids(self, pgrp: int) -> list[int]:
        now = time.monotonic()
        if pgrp != self._scanned_pgrp or now - self._scanned_at >= self._rescan_interval:
            self._scanned_pids = [
                proc.pid
                for proc in _scan_proc()
                if proc.pgrp == pgrp and proc.pid != pgrp and proc.state not in GONE_STATES
            ]
            self._scanned_pgrp = pgrp
            self._scanned_at = now
        return self._scanned_pids

    def _process_waiting(self, pid: int, canonical: bool, terminal: str | None) -> bool:
        """Whether any thread of the process waits for the terminal: node may read in a worker."""
        for tid in _listdir(f"/proc/{pid}/task"):
            task = f"/proc/{pid}/task/{tid}"
            call = parse_syscall(_read(f"{task}/syscall") or "", self._arch)
            if blocked_on_terminal(call, canonical, _fd_resolver(task), terminal) and _asleep(task):
                return True
        return False


def _fd_resolver(task: str) -> Callable[[int], str | None]:
    def target(fd: int) -> str | None:
        return _readlink(f"{task}/fd/{fd}")

    return target


def _asleep(task: str) -> bool:
    """Still asleep after its call was read: a task just woken by input is no longer waiting."""
    info = _read_stat(f"{task}/stat")
    return info is not None and info.state == "S"


def _live_member(pid: int, pgrp: int) -> ProcessInfo | None:
    info = _read_stat(f"/proc/{pid}/stat")
    if info is None or info.pgrp != pgrp or info.state in GONE_STATES:
        return None
    return info


def _scan_proc() -> list[ProcessInfo]:
    found = []
    for name in _listdir("/proc"):
        if name.isdigit():
            info = _read_stat(f"/proc/{name}/stat")
            if info is not None:
                found.append(info)
    return found


def _read_stat(path: str) -> ProcessInfo | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return parse_stat(text)
    except ValueError:
        return None


def _read(path: str) -> str | None:
    """A small /proc file, or None when its process is gone or hidden from us."""
    try:
        with open(path, "rb", buffering=0) as handle:
            data = handle.read(4096)
    except OSError:
        return None
    return data.decode("utf-8", "replace")


def _readlink(path: str) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []

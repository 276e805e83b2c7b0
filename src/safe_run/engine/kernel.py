"""Asking the kernel what the command does, without trusting anything printed on the terminal.

Output can lie: a command may print something that looks like a prompt, and a password prompt may
print nothing at all. The kernel does not: the terminal's foreground process group says whether
the shell or a command owns the terminal, and the system call each task sleeps in says what it
waits for. This module only reads (/proc, the pty master); what the answers mean, and the rule for
an input wait, are `evidence`'s.

This is Linux only and best effort. Processes come and go between two reads of /proc, so any read
may find nothing; that is an answer ("gone", "unknown"), never an exception for the caller.
"""

from __future__ import annotations

import os
import stat
import struct
import sys
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol

from ..core.evidence import (
    GONE_STATES, MAX_POLL_FDS, POLL_CALLS, READ_CALLS, STOPPED_STATES, SYSCALL_TABLES, Observation,
    PidCounters, ProcessInfo, Syscall, TaskWait, Verdict, Wait, classify_call, descendants, ending, has_marker,
    is_terminal, judge, made_since, parse_epoll_targets, parse_stat, parse_syscall, parse_tty_index,
    run_members, session_members, task_count,
)

# Finding the processes of the command means reading every /proc/<pid>/stat; the list is reused for
# this long, and read again before any answer other than "working" is given.
RESCAN_INTERVAL_S = 1.0


def boot_ticks() -> int:
    """Now, in the unit and from the origin of a process's start time in /proc/<pid>/stat."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


def current_umask() -> int:
    """This process's umask, read without setting it: os.umask can only read it by changing it,
    for every thread of the process at once (the MCP server and library callers have threads)."""
    for line in (_read("/proc/self/status", 1 << 16) or "").splitlines():
        if line.startswith("Umask:"):
            return int(line.split()[1], 8)
    mask = os.umask(0o022)  # a kernel older than 4.7: the only way left
    os.umask(mask)
    return mask


class ObserverLike(Protocol):
    """What a run and its clean-up ask of the kernel: `KernelObserver`, or a stand-in with scripted answers."""

    @property
    def available(self) -> bool: ...

    def program(self) -> str | None: ...

    def argv(self) -> bytes | None: ...

    def directory(self) -> str | None: ...

    def observe(self, since: int | None = None, settled: bool = False) -> Observation | None: ...

    def shell_at_prompt(self) -> bool | None: ...

    def session_processes(self) -> list[ProcessInfo]: ...

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]: ...

    @property
    def whole_look(self) -> bool: ...

    def name_now(self, process: ProcessInfo) -> str: ...


class KernelObserver:
    """Asks /proc and the PTY master about the shell and whatever owns its terminal.

    `available` is False off Linux, without /proc, when the master cannot report its foreground
    group, or on an architecture whose system call numbers are not in SYSCALL_TABLES: callers then
    fall back to timers rather than act on half an answer. `marker` is the value of MARKER_VAR in
    the shell's environment, by which processes the command moved out of reach are found.
    """

    def __init__(
        self, master_fd: int, shell_pid: int, *, marker: str | None = None, rescan_interval: float = RESCAN_INTERVAL_S,
        inputs: frozenset[str] = frozenset(), clock: Callable[[], float] = time.monotonic,
        read: Callable[[str, int], bytes | None] | None = None,
    ) -> None:
        """`clock`: the run's, which paces the full scan of /proc (`rescan_interval`). Process start
        times stay in the kernel's own unit, clock ticks since boot (`boot_ticks`). `read`: how a
        process's command line and variables are read (one read of its /proc file, or None)."""
        self._master_fd = master_fd
        self._clock = clock
        self._read_bytes = read or _read_bytes
        self._inputs = inputs  # what the caller gave the command as its standard input (evidence.fd_kind)
        self._shell_pid = shell_pid
        self._marker = marker
        self._rescan_interval = rescan_interval
        self._arch = os.uname().machine  # what platform.machine() says, without importing platform
        self._terminal: str | None = None
        self._processes: list[ProcessInfo] = []
        self._listed: frozenset[str] = frozenset()  # the pids of the last `run_processes`
        self._whole_look = False  # see `whole_look`
        self._made_by_look: int | None = None  # the tasks made by the end of the last look
        self._counters = pid_counters()  # just after the shell was made: see `made_since`
        self._elsewhere: list[int] = []
        self._scanned_at: float | None = None
        self._marked: dict[tuple[int, int], bool] = {}
        self._confirmed: tuple[object, ...] = ()
        self._proc = sys.platform.startswith("linux") and _read(f"/proc/{os.getpid()}/stat") is not None
        self._shell = _read_stat(f"/proc/{shell_pid}/stat") if self._proc else None
        self._available = self._proc and self._arch in SYSCALL_TABLES and self._foreground_pgrp_answers()

    @property
    def available(self) -> bool:
        return self._available

    def program(self) -> str | None:
        """The program the shell's process runs now (a command may `exec` another); None off /proc."""
        return _readlink(f"/proc/{self._shell_pid}/exe") if self._proc else None

    def argv(self) -> bytes | None:
        """The shell process's argv now, as /proc holds it: a command that `exec`s a shell, even the
        same program, changes it. None off /proc."""
        return self._read_bytes(f"/proc/{self._shell_pid}/cmdline", 1 << 16) if self._proc else None

    def directory(self) -> str | None:
        """The shell's working directory now; None off /proc or once it is gone."""
        return _readlink(f"/proc/{self._shell_pid}/cwd") if self._proc else None

    def observe(self, since: int | None = None, settled: bool = False) -> Observation | None:
        """One look at the terminal; None when it cannot be had or the shell is gone.

        `since` (clock ticks since boot, as `boot_ticks`): when the command line was typed. While
        the shell itself is in front, what shares its process group but started before that is the
        shell's own (fish's completion indexer at a first start), not the command's work.

        Membership comes from a scan of /proc at most once a second, of the processes made since
        the shell (`evidence.made_since`); a new answer other than "working" is checked against a
        fresh scan, so a process started since cannot be missed by it, while an answer that stays
        costs no more than the cached scan. `settled`: the looks before found the input wait a
        session holds, and this one only sees whether it stays, so the last scan stands however
        old while the same group is in front (a held wait is looked at seldom, and each scan reads
        every process made since the shell). A caller's look is not.
        """
        found = self._shell_and_modes()
        if found is None:
            return None
        shell, lflag = found
        canonical = bool(lflag & termios.ICANON)
        pgrp = self._foreground_pgrp()
        cached = self._scanned_at
        kept = settled and cached is not None and self._confirmed[:1] == (pgrp,)
        seen = self._look(shell, pgrp, canonical, since, fresh=False, kept=kept)
        answer = (seen.foreground_pgrp, seen.waiting_for_terminal, seen.stopped, seen.hidden, seen.listening)
        # A look that had to scan just now is as fresh as a second scan would be.
        rescanned = self._scanned_at != cached
        if answer != self._confirmed and not rescanned and (
            seen.waiting_for_terminal or seen.stopped or seen.hidden or seen.listening
        ):
            seen = self._look(shell, pgrp, canonical, since, fresh=True)
            answer = (seen.foreground_pgrp, seen.waiting_for_terminal, seen.stopped, seen.hidden, seen.listening)
        self._confirmed = answer
        return replace(seen, echo=bool(lflag & termios.ECHO))

    def shell_at_prompt(self) -> bool | None:
        """Whether the shell is in front and its own main thread waits for a key: its prompt is up.

        A look at the shell alone, for a caller that knows the command is over and waits for the
        prompt hooks to finish: `observe` would confirm the changed answer with a scan of every
        process. None when no look can be had (the shell is gone).
        """
        found = self._shell_and_modes()
        if found is None:
            return None
        shell, lflag = found
        if self._foreground_pgrp() != shell.pgrp:
            return False
        waits = self._process_waits(shell.pid, bool(lflag & termios.ICANON), main_only=True)
        return judge(waits)[0] is Verdict.INPUT

    def _shell_and_modes(self) -> tuple[ProcessInfo, int] | None:
        """The shell's stat line and the terminal's lflag; None when no look can be had or the shell is gone."""
        if not self._available:
            return None
        shell = _read_stat(f"/proc/{self._shell_pid}/stat")
        lflag = self._local_modes()
        if shell is None or shell.state in GONE_STATES or lflag is None:
            return None
        return shell, lflag

    def session_processes(self) -> list[ProcessInfo]:
        """Every live process of the shell's session but the shell, background jobs included.

        The shell leads its session, so the session id is its pid, which still names the session
        after the shell has gone. A shell that is not a session leader yields nothing here, rather
        than the caller's own session.
        """
        if not self._proc:
            return []
        return session_members(_scan_proc(), self._shell_pid, excluded={self._shell_pid, os.getpid()})

    def name_now(self, process: ProcessInfo) -> str:
        """What `process` runs now, or ran when it ended: a subshell seen as `bash` may have become
        `sleep` since (an ended one keeps its name until it is collected). Its name when seen, once
        it is collected or its pid was given to another."""
        now = _read_stat(f"/proc/{process.pid}/stat") if self._proc else None
        return now.comm if now is not None and now.start == process.start else process.comm

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]:
        """Every live process the run started but the shell: its session, and what left it.

        `new_only`: only those not listed at the previous call, for a look again after ending what
        that one found. A process listed then and known not to be the run's cannot have become the
        run's since (a session is left, never joined), nor its pid have gone to a new process (that
        takes the pid counter round all of pid_max): it is not read again, which halves a run's last
        sweep. One whose environment could not be read then (in the middle of an exec: the
        `setsid` of `setsid sleep 9 &` becoming sleep) is not known, and is read again. After a
        whole look (`whole_look`), with no task made since, there is nothing new to read.
        """
        shell = self._shell
        made_before = self._tasks_made()
        if new_only and self._whole_look and made_before is not None and made_before == self._made_by_look:
            return []
        self._whole_look = False
        if not self._proc or shell is None:
            return []
        pids = _pids()
        earlier, self._listed = (self._listed if new_only else frozenset()), frozenset(pids)
        younger = made_since(pids, self._shell_pid, self._counters, pid_counters())
        found = _scan_proc([pid for pid in younger if pid not in earlier])
        members = run_members(found, shell, {self._shell_pid, os.getpid()}, self._is_marked)
        not_known = self._not_known(found, members, shell)
        self._listed -= not_known
        self._made_by_look = self._tasks_made()
        self._whole_look = not not_known and made_before is not None and self._made_by_look == made_before
        return members

    def _tasks_made(self) -> int | None:
        """The kernel's count of tasks made, where /proc keeps one (`evidence.task_count`)."""
        return task_count(tasks_made(), self._shell_pid) if self._proc else None

    @property
    def whole_look(self) -> bool:
        """Whether the last `run_processes` missed nothing: no task was made while it looked (a
        process that forks and exits while /proc is read is missing from the look, and so is its
        child), and it knows of every process it read whether it is the run's. A look again
        then finds nothing it did not."""
        return self._whole_look

    def _not_known(self, found: list[ProcessInfo], members: list[ProcessInfo], shell: ProcessInfo) -> set[str]:
        """The pids of `found` younger than the shell, left out of `members` without an answer
        about their environment: they may yet prove the run's."""
        taken = {member.pid for member in members}
        return {str(p.pid) for p in found if p.pid not in taken and p.start >= shell.start
                and (p.pid, p.start) not in self._marked}

    # ---- one look -----------------------------------------------------------------------------

    def _look(
        self, shell: ProcessInfo, pgrp: int | None, canonical: bool, since: int | None, fresh: bool, kept: bool = False,
    ) -> Observation:
        """Who is in front, and what each of its processes waits on, judged by `evidence`.

        The scan comes first whatever the answer, so that a look that had to scan is as fresh as
        the second look `observe` would otherwise take to confirm it."""
        processes = self._processes if kept else self._scan(fresh)
        in_front = pgrp == shell.pgrp
        if shell.state in STOPPED_STATES:
            return Observation(in_front, pgrp, False, canonical, shell.comm, stopped=shell.comm)
        if pgrp is None:
            return Observation(False, None, False, canonical, None)
        if in_front:
            members = _shell_group(processes, shell.pid, pgrp, since)
        else:
            members = descendants(processes, {p.pid for p in processes if p.pgrp == pgrp} | {pgrp}) - {shell.pid}
        front = self._front(members, pgrp, shell.pid, canonical)
        reader = None if in_front else self._reader_elsewhere(members, canonical, front.activity)
        return front.observation(in_front, pgrp, canonical, reader)

    def _front(self, members: set[int], pgrp: int, shell_pid: int, canonical: bool) -> _Front:
        """The waits of every live member's tasks, the group's leader first, so that its name is
        the command's."""
        front = _Front()
        for pid in sorted(members, key=lambda pid: (pid != pgrp, pid)):
            info = _read_stat(f"/proc/{pid}/stat")
            if info is not None and info.state not in GONE_STATES:
                # The shell's own helper threads (fish polls with a timeout from one after each prompt)
                # are not what it waits on: at its prompt, or in a builtin, its main thread is.
                front.add(pid, info, self._process_waits(pid, canonical, main_only=pid == shell_pid))
        return front

    def _scan(self, fresh: bool) -> list[ProcessInfo]:
        now = self._clock()
        if fresh or self._scanned_at is None or now - self._scanned_at >= self._rescan_interval:
            # Only what can have been made since the shell: the run's processes all were, and the
            # rest of the machine (hundreds of processes on a desktop) is never read.
            self._processes = _scan_proc(made_since(_pids(), self._shell_pid, self._counters, pid_counters()))
            self._scanned_at = now
            shell = self._shell
            self._elsewhere = [] if shell is None else [
                p.pid for p in run_members(self._processes, shell, {shell.pid, os.getpid()}, self._is_marked)
                if p.session != shell.pid
            ]
        return self._processes

    def _reader_elsewhere(self, members: set[int], canonical: bool, activity: list[tuple[int, int]]) -> str | None:
        """A process of the run outside the foreground (pinentry) that waits for a key on our terminal."""
        terminal = self._terminal_path()
        found = None
        for pid in self._elsewhere:
            if pid in members:
                continue
            info = _read_stat(f"/proc/{pid}/stat")
            if info is None or info.state in GONE_STATES:
                continue
            if found is None and any(self._reads_our_terminal(pid, tid, canonical, terminal) for tid in _tasks(pid)):
                found = info.comm
                activity.append((pid, info.cpu))
        return found

    def _reads_our_terminal(self, pid: int, tid: str, canonical: bool, terminal: str | None) -> bool:
        task = f"/proc/{pid}/task/{tid}"
        call = parse_syscall(_read(f"{task}/syscall") or "", self._arch)
        if call is None or not _asleep(task):
            return False
        targets, timeout = self._targets(pid, task, call)
        wait = classify_call(call, targets, timeout, canonical, _readlink(f"{task}/fd/0"))
        return wait.kind is Wait.TERMINAL and any(is_terminal(t, terminal) for t in targets or ())

    def _process_waits(self, pid: int, canonical: bool, main_only: bool = False) -> list[TaskWait]:
        waits = []
        for tid in [str(pid)] if main_only else _tasks(pid):
            wait = self._task_wait(pid, f"/proc/{pid}/task/{tid}", canonical)
            if wait is not None:
                waits.append(wait)
        return waits

    def _task_wait(self, pid: int, task: str, canonical: bool) -> TaskWait | None:
        info = _read_stat(f"{task}/stat")
        if info is None or info.state in GONE_STATES:
            return None
        if info.state in STOPPED_STATES:
            return TaskWait(Wait.STOPPED)
        if info.state != "S":
            return TaskWait(Wait.RUNNING)
        text = _read(f"{task}/syscall")
        if text is None:
            return TaskWait(Wait.HIDDEN)
        if text.startswith("running"):
            return TaskWait(Wait.RUNNING)
        call = parse_syscall(text, self._arch)
        targets, timeout = self._targets(pid, task, call) if call is not None else (None, None)
        wait = classify_call(call, targets, timeout, canonical, _readlink(f"{task}/fd/0"), self._inputs)
        # Still asleep after its call was read: a task just woken is no longer waiting.
        return wait if _asleep(task) else TaskWait(Wait.RUNNING)

    def _targets(self, pid: int, task: str, call: Syscall) -> tuple[list[str | None] | None, float | None]:
        """What the call waits on (fd targets), and its own timeout in seconds (None: none)."""
        name, args = call
        if name in READ_CALLS:
            return [_fd_target(task, args[0])], None
        if name not in POLL_CALLS:
            return None, None
        fds, timeout = _polled(pid, task, name, args)
        if fds is None:
            return None, timeout
        return [_fd_target(task, fd) for fd in fds], timeout

    def _is_marked(self, proc: ProcessInfo) -> bool:
        if self._marker is None:
            return False
        key = (proc.pid, proc.start)
        if key not in self._marked:
            environ = self._read_bytes(f"/proc/{proc.pid}/environ", 1 << 20)
            if not environ:
                # None yet, or none to read: a process in the middle of an exec shows an empty
                # environment, and the answer it gives a moment later is the one that counts.
                return False
            self._marked[key] = has_marker(environ, self._marker)
        return self._marked[key]

    # ---- the terminal -------------------------------------------------------------------------

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

    def _local_modes(self) -> int | None:
        """The terminal's lflag (on Linux the master reports the slave's settings)."""
        try:
            return int(termios.tcgetattr(self._master_fd)[3])
        except (OSError, termios.error):
            return None

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


class _Front:
    """What the foreground's members were found doing, gathered one member at a time."""

    __slots__ = ("waits", "activity", "command", "keyed", "stopped")

    def __init__(self) -> None:
        self.waits: list[TaskWait] = []
        self.activity: list[tuple[int, int]] = []
        self.command: str | None = None  # the first member's name
        self.keyed: str | None = None  # the first member that waits for a key: the one that asks
        self.stopped: str | None = None  # the first member with a stopped task

    def add(self, pid: int, info: ProcessInfo, waits: list[TaskWait]) -> None:
        self.command = self.command or info.comm
        self.activity.append((pid, info.cpu))
        self.waits.extend(waits)
        for wait in waits:
            if wait.kind is Wait.STOPPED and self.stopped is None:
                self.stopped = info.comm
            if wait.kind is Wait.TERMINAL and self.keyed is None:
                self.keyed = info.comm

    def observation(self, in_front: bool, pgrp: int, canonical: bool, reader: str | None) -> Observation:
        """The verdict on these waits, with the names and the reader that explain it: none of them
        goes with a verdict it does not explain."""
        verdict, wake_in = judge(self.waits, reader is not None)
        waiting = verdict is Verdict.INPUT
        return Observation(
            shell_in_foreground=in_front,
            foreground_pgrp=pgrp,
            waiting_for_terminal=waiting,
            canonical=canonical,
            foreground_command=(self.keyed or self.command) if waiting else self.command,
            stopped=self.stopped if verdict is Verdict.STOPPED else None,
            hidden=verdict is Verdict.HIDDEN,
            wake_in=wake_in,
            activity=tuple(sorted(self.activity)),
            reader=reader if waiting else None,
            listening=verdict is Verdict.LISTENING,
            keyless=waiting and reader is None and not any(
                wait.kind is Wait.TERMINAL and wait.keyboard for wait in self.waits),
        )


def _shell_group(processes: list[ProcessInfo], shell_pid: int, pgrp: int, since: int | None) -> set[int]:
    """The shell and what shares its group, but for what started before the command line was typed
    (the shell's own, as fish's completion indexer)."""
    return {p.pid for p in processes if p.pgrp == pgrp and (since is None or p.start >= since)} | {shell_pid}


def _polled(pid: int, task: str, name: str, args: Sequence[int]) -> tuple[list[int] | None, float | None]:
    """The descriptors a poll, select or epoll call watches (None: unknown), and its timeout: each
    family keeps them in its own place and unit."""
    if name in ("poll", "ppoll"):
        fds = _poll_fds(pid, args[0], args[1])
        return fds, (_milliseconds(args[2]) if name == "poll" else _time_struct(pid, args[2], 1e-9))
    if name in ("select", "pselect6"):
        fds = _select_fds(pid, args[0], args[1:4])
        return fds, _time_struct(pid, args[4], 1e-6 if name == "select" else 1e-9)
    fdinfo = _read(f"{task}/fdinfo/{args[0]}", 1 << 16)
    fds = None if fdinfo is None else parse_epoll_targets(fdinfo)
    return fds, (_time_struct(pid, args[3], 1e-9) if name == "epoll_pwait2" else _milliseconds(args[3]))


def _milliseconds(raw: int) -> float | None:
    """A poll or epoll timeout argument: a signed int, negative for none."""
    value = raw & 0xFFFFFFFF
    value = value - (1 << 32) if value >= 1 << 31 else value
    return None if value < 0 else value / 1000


def _time_struct(pid: int, address: int, fraction: float) -> float | None:
    """A timeval or timespec in the task's memory; a null pointer means no timeout."""
    if address == 0:
        return None
    data = _read_memory(pid, address, 16)
    if data is None or len(data) < 16:
        return None
    seconds, part = struct.unpack("qq", data)
    return float(seconds + part * fraction)


def _poll_fds(pid: int, address: int, count: int) -> list[int] | None:
    """The descriptors of a poll's `struct pollfd` array (negative ones are ignored by poll)."""
    if count > MAX_POLL_FDS:
        return None
    data = _read_memory(pid, address, 8 * count) if count else b""
    if data is None or len(data) < 8 * count:
        return None
    return [fd for (fd,) in (struct.unpack_from("i", data, 8 * i) for i in range(count)) if fd >= 0]


def _select_fds(pid: int, count: int, addresses: Sequence[int]) -> list[int] | None:
    """The union of a select's read, write and exception sets."""
    if count > MAX_POLL_FDS:
        return None
    size = (count + 63) // 64 * 8
    fds: set[int] = set()
    for address in addresses:
        if address == 0:
            continue
        data = _read_memory(pid, address, size)
        if data is None or len(data) < size:
            return None
        fds.update(fd for fd in range(count) if data[fd // 8] >> (fd % 8) & 1)
    return sorted(fds)


def _read_memory(pid: int, address: int, size: int) -> bytes | None:
    """Bytes of a task's memory; allowed for our own descendants, refused for setuid programs."""
    try:
        fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.pread(fd, size, address)
    except (OSError, OverflowError, ValueError):
        return None
    finally:
        os.close(fd)


def _fd_target(task: str, fd: int) -> str | None:
    """An fd's target, with named pipes spelled like the anonymous ones (fish's notifier FIFO)."""
    link = f"{task}/fd/{fd}"
    target = _readlink(link)
    if target is None or not target.startswith("/"):
        return target
    try:
        fifo = stat.S_ISFIFO(os.stat(link).st_mode)
    except OSError:
        return target
    return f"pipe:{target}" if fifo else target


def _tasks(pid: int) -> list[str]:
    return _listdir(f"/proc/{pid}/task")


def _asleep(task: str) -> bool:
    info = _read_stat(f"{task}/stat")
    return info is not None and info.state == "S"


def pid_counters() -> PidCounters | None:
    """The kernel's pid counters now; None when /proc does not say."""
    made = tasks_made()
    load = _read_bytes("/proc/loadavg", 256) or b""
    pid_max = _read_bytes("/proc/sys/kernel/pid_max", 64) or b""
    try:
        return None if made is None else PidCounters(made, int(load.split()[3].split(b"/")[1]), int(pid_max))
    except (ValueError, IndexError):
        return None


def tasks_made() -> int | None:
    """How many tasks (processes and threads) the system has made since it booted, in every pid
    namespace (/proc/stat's `processes`); None when /proc does not say."""
    stat = _read_bytes("/proc/stat", 1 << 16) or b""
    try:
        return int(stat[stat.index(b"\nprocesses ") + 11:].split(b"\n", 1)[0])
    except ValueError:
        return None


def last_pid() -> int | None:
    """The last pid the system gave out; None when /proc does not say."""
    text = _read_bytes("/proc/sys/kernel/ns_last_pid", 64) or b""
    return int(text) if text.strip().isdigit() else None


def pid_max() -> int | None:
    """Where the pid counter comes round; None when /proc does not say."""
    text = _read_bytes("/proc/sys/kernel/pid_max", 64) or b""
    return int(text) if text.strip().isdigit() else None


def _pids() -> list[str]:
    return [name for name in _listdir("/proc") if name.isdigit()]


def _scan_proc(pids: list[str] | None = None) -> list[ProcessInfo]:
    """Every process's stat line (or those of `pids`): the costliest read here (three system calls
    per process), so it is kept to bare reads, and callers share one scan where they can."""
    found = []
    for pid in _pids() if pids is None else pids:
        info = _read_stat(f"/proc/{pid}/stat")
        if info is not None:
            found.append(info)
    return found


def read_stat(pid: int) -> ProcessInfo | None:
    """What /proc says of process `pid`; None when it is gone or cannot be read. The one reader of
    a process's stat line outside this class (but the warm client's, which imports nothing)."""
    return _read_stat(f"/proc/{pid}/stat")


def group_made_by(parent: int, group: int) -> bool | None:
    """Whether `parent` made process group `group`: its leader is a child of `parent`, or, the
    leader gone already (the first program of a pipeline done), a child of `parent` is in it.
    None: the leader is gone and no child of `parent` is in the group, so that /proc cannot tell
    (a subshell that left a job behind, or a group made elsewhere)."""
    leader = read_stat(group)
    if leader is not None:
        return leader.ppid == parent
    listed = _read_bytes(f"/proc/{parent}/task/{parent}/children", 65536) or b""
    return True if any(child.pgrp == group for child in _scan_proc(listed.decode("ascii").split())) else None


def already_ending(process: ProcessInfo) -> bool:
    """Whether `process` is on its way out: exiting, or sent a signal that will end it once it
    runs (see `evidence.ending`); a stopped one goes nowhere until continued."""
    if process.exiting:
        return True
    if process.state in STOPPED_STATES:
        return False
    status = _read(f"/proc/{process.pid}/status")
    return status is not None and ending(status)


def _read_stat(path: str) -> ProcessInfo | None:
    text = _read(path)
    if text is None:
        return None
    try:
        return parse_stat(text)
    except ValueError:
        return None


def _read(path: str, limit: int = 4096) -> str | None:
    """A small /proc file, or None when its process is gone or hidden from us."""
    data = _read_bytes(path, limit)
    return None if data is None else data.decode("utf-8", "replace")


def _read_bytes(path: str, limit: int) -> bytes | None:
    """One read of a /proc file, without the file object (and its fstat) that open() would add."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


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

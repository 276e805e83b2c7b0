"""What the kernel's answers mean: the evidence of what a command does, and the rules over it.

Pure: strings and numbers in, verdicts out, so each rule is tested without a terminal and an
observer for another platform (macOS, a container's view) can reuse them. `kernel` reads the
answers from /proc and the terminal; the tracker decides on the `Observation` it builds.

The rule for an input wait. A command waits for input only when nothing it runs could make
progress without a key: every task of its foreground work (the foreground process group and all
their descendants, whatever session they moved to) is classified from its state and the call it
sleeps in, and
  - a task on a CPU or in uninterruptible sleep, or asleep with a deadline (`sleep`, a timed poll
    that does not include the terminal), is working: never an input wait;
  - a task asleep on a socket, a file, a lock or a call the rules do not know waits on the world
    outside: it may go on any moment, so not an input wait either;
  - a task waiting for a child, another thread, a pipe or a signal waits on the others: it
    decides nothing by itself;
  - a task blocked reading a terminal, or polling a set of descriptors that holds a terminal and
    nothing from the outside world, waits for a key. Any terminal counts, so a relay (`script`,
    `sudo` with use_pty, apt's dpkg pty: a process polling our terminal and a pty master) is
    judged by what runs on its inner terminal, which is part of its descendants.
It is an input wait when at least one task waits for a key and all the others wait on the others;
the tracker then also requires that the whole foreground work used no CPU (utime + stime in
/proc/PID/stat) and printed nothing for its idle window, and that the window outlasts the timeout
of any timed keyboard poll (a program polling the keyboard between steps goes on by itself). A
keyboard poll of LOOP_POLL_S or less is such a step in itself: the program listens, and is working.
A process the command started in another session that reads our terminal (pinentry, started by
gpg-agent for gpg) is a reader too: while it waits for a key and the foreground only waits on
other processes, that is an input wait.

A foreground that waits on the keyboard among other things (an event loop polling the terminal
and a socket or a timer descriptor; a thread reading the terminal while another waits on the
world) and does nothing else listens to the keyboard: not an input wait, since it may go on by
itself, but typing reaches it.

What cannot be seen is said as such: a stopped task (state T) is `stopped`; a task whose system
call is hidden (setuid or non-dumpable programs, seen by another user) is `hidden`, and only the
screen can then tell a prompt from work.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

# A decoded system call: its name and its six raw arguments.
Syscall = tuple[str, tuple[int, ...]]

# Only the calls the rules look at. Numbers from the kernel's uapi headers (asm/unistd_64.h for
# x86_64, asm-generic/unistd.h for the rest); the generic table has no poll, select or epoll_wait.
_X86_64 = {
    0: "read", 19: "readv", 7: "poll", 23: "select", 270: "pselect6", 271: "ppoll",
    232: "epoll_wait", 281: "epoll_pwait", 441: "epoll_pwait2", 61: "wait4", 247: "waitid",
    35: "nanosleep", 230: "clock_nanosleep", 202: "futex", 449: "futex_waitv", 34: "pause",
    130: "rt_sigsuspend", 128: "rt_sigtimedwait",
}
_GENERIC = {
    63: "read", 65: "readv", 72: "pselect6", 73: "ppoll", 22: "epoll_pwait", 441: "epoll_pwait2",
    260: "wait4", 95: "waitid", 101: "nanosleep", 115: "clock_nanosleep", 98: "futex", 449: "futex_waitv",
    133: "rt_sigsuspend", 137: "rt_sigtimedwait",
}
SYSCALL_TABLES: dict[str, dict[int, str]] = {
    "x86_64": _X86_64,
    "aarch64": _GENERIC,
    "riscv64": _GENERIC,
    "loongarch64": _GENERIC,
}

READ_CALLS = frozenset({"read", "readv"})
POLL_CALLS = frozenset({"poll", "select", "pselect6", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2"})
# Waiting on another task: a child, a thread (futex), a signal.
RELATIVE_CALLS = frozenset({"wait4", "waitid", "futex", "futex_waitv", "pause", "rt_sigsuspend"})
SLEEP_CALLS = frozenset({"nanosleep", "clock_nanosleep"})

# Whatever terminal a process opened through /dev/tty is its controlling one: for a process of the
# foreground group, that is the shell's terminal.
CONTROLLING_TTY = "/dev/tty"
TERMINAL_PREFIXES = ("/dev/pts/", "/dev/tty", "/dev/ptmx", "/dev/console")
RELATIVE_INODES = ("anon_inode:[eventfd]", "anon_inode:[signalfd]", "anon_inode:[pidfd]", "anon_inode:[eventpoll]")
# Zombies and the dead hold no terminal and run nothing.
GONE_STATES = frozenset({"Z", "X", "x"})
# <linux/sched.h>: the task has begun to exit; it was forked and has not exec'd since.
PF_EXITING, PF_FORKNOEXEC = 0x4, 0x40
# The signals whose default is to be ignored or to stop the process: all others end it.
NOT_ENDING_MASK = sum(1 << (signum - 1) for signum in (
    signal.SIGCHLD, signal.SIGCONT, signal.SIGURG, signal.SIGWINCH,
    signal.SIGSTOP, signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU,
))
STOPPED_STATES = frozenset({"T", "t"})
# Running, or in a wait the kernel finishes by itself (a disk): working, not waiting for anyone.
BUSY_STATES = frozenset({"R", "D"})
# The variable each run puts in its shell's environment, so that what the command started in
# other sessions (daemons, `setsid`, `tmux new -d`) can be found again.
MARKER_VAR = "SAFE_RUN_RUN"
# A keyboard poll this short is a step of a loop that goes on by itself (a game, a progress loop
# polling for a key between steps): the program listens to the keyboard, it does not wait on it.
LOOP_POLL_S = 1.0
# More descriptors than this in one poll is not an interactive program's keyboard wait.
MAX_POLL_FDS = 1024


class Wait(Enum):
    """What one task is doing, as far as progress without a key goes."""

    RUNNING = "running"  # on a CPU, or in uninterruptible sleep
    TIMED = "timed"  # asleep with a deadline, away from the terminal: goes on by itself
    EXTERNAL = "external"  # waits on the outside world: a socket, a file, a lock, an unknown call
    RELATIVE = "relative"  # waits on another task: a child, a thread, a pipe, a signal
    TERMINAL = "terminal"  # waits for a key (possibly with a timeout)
    STOPPED = "stopped"  # state T: goes nowhere until continued
    HIDDEN = "hidden"  # asleep, on something the kernel does not show us


@dataclass(frozen=True)
class TaskWait:
    kind: Wait
    wake_in: float | None = None  # a timed keyboard poll ends by itself within this many seconds
    keyboard: bool = False  # the terminal is among what it waits on


class Verdict(Enum):
    WORKING = "working"
    INPUT = "input"
    LISTENING = "listening"  # waits on the keyboard among other things, and works at nothing
    STOPPED = "stopped"
    HIDDEN = "hidden"


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    comm: str
    state: str  # R, S, D, T, Z ...
    pgrp: int
    session: int
    ppid: int = 0
    cpu: int = 0  # utime + stime, in clock ticks
    start: int = 0  # start time, in clock ticks since boot
    tty: int = 0  # the controlling terminal's device number (0: none)
    flags: int = 0  # the kernel's flags for the task (PF_EXITING: on its way out)

    @property
    def exiting(self) -> bool:
        return bool(self.flags & PF_EXITING)

    @property
    def forked_only(self) -> bool:
        """It runs the program its parent ran: it was forked and has not exec'd since."""
        return bool(self.flags & PF_FORKNOEXEC)


@dataclass(frozen=True)
class Observation:
    shell_in_foreground: bool  # the terminal's foreground group is the shell's own
    foreground_pgrp: int | None
    waiting_for_terminal: bool  # the foreground waits for a key (see the module's rule)
    canonical: bool  # ICANON of the terminal
    foreground_command: str | None  # comm of the member waiting for a key, else of the leader or first member
    echo: bool = True  # ECHO of the terminal: line editors echo for themselves
    stopped: str | None = None  # comm of a stopped task of the foreground (or the stopped shell)
    hidden: bool = False  # part of the foreground sleeps on something the kernel does not show us
    wake_in: float | None = None  # the longest timeout of a timed keyboard poll among the waiters
    activity: tuple[tuple[int, int], ...] = ()  # (pid, CPU ticks) of the foreground work: changes when it works
    reader: str | None = None  # comm of a process in another session that waits on our terminal
    listening: bool = False  # the foreground waits on the keyboard among other things (see the module)
    keyless: bool = False  # its input wait is on the caller's standard input alone: keys do not reach it


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
        pid=int(pid_text), comm=comm, state=fields[0], pgrp=int(fields[2]), session=int(fields[3]),
        ppid=int(fields[1]), cpu=_field(fields, 11) + _field(fields, 12), start=_field(fields, 19),
        tty=_field(fields, 4), flags=_field(fields, 6),
    )


def ending(status: str) -> bool:
    """Whether /proc/PID/status says a signal that ends the process is already on its way to it:
    pending, neither blocked, caught nor ignored, and not one whose default is to be ignored or to
    stop. `kill %1` as a command's last act leaves its job so, still listed until the kernel
    runs it."""
    masks = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt"):
            masks[name] = int(value.strip() or "0", 16)
    pending = masks.get("SigPnd", 0) | masks.get("ShdPnd", 0)
    handled = masks.get("SigBlk", 0) | masks.get("SigIgn", 0) | masks.get("SigCgt", 0)
    return bool(pending & ~handled & ~NOT_ENDING_MASK)  # SIGKILL is never blocked, caught nor ignored


def _field(fields: list[str], index: int) -> int:
    """A numeric stat field that short fixture lines may leave out."""
    return int(fields[index]) if len(fields) > index else 0


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


def parse_epoll_targets(fdinfo: str) -> list[int]:
    """The descriptors an epoll instance watches, from its /proc/<pid>/fdinfo/<fd>."""
    fds = []
    for line in fdinfo.splitlines():
        if line.startswith("tfd:"):
            try:
                fds.append(int(line.split()[1]))
            except (IndexError, ValueError):
                continue
    return fds


def is_terminal(path: str | None, terminal: str | None) -> bool:
    """Whether an fd's target (readlink of /proc/<pid>/fd/<n>) is the shell's own terminal."""
    if path is None:
        return False
    return path == CONTROLLING_TTY or (terminal is not None and path == terminal)


def fd_kind(target: str | None, inputs: frozenset[str] = frozenset()) -> str:
    """What waiting on a descriptor means: `terminal` (any tty, either side), `input` (one of
    `inputs`: the caller's standard input given to the command, `--stdin`), `relative` (a pipe or
    an event between tasks), `timer`, `gone`, or `outside` (sockets, files, everything else)."""
    if target is None:
        return "gone"
    if target in inputs:
        return "input"
    if target.startswith(TERMINAL_PREFIXES):
        return "terminal"
    if target.startswith("pipe:") or target in RELATIVE_INODES:
        return "relative"
    if target == "anon_inode:[timerfd]":
        return "timer"
    return "outside"


def classify_call(
    call: Syscall | None, targets: Sequence[str | None] | None, timeout: float | None, canonical: bool,
    stdin: str | None, inputs: frozenset[str] = frozenset(),
) -> TaskWait:
    """What a task asleep in `call` waits for.

    `targets` are what the call waits on (the fd it reads; the descriptors of a poll, select or
    epoll, read from the task's memory), None when they could not be read; `timeout` is the call's
    own deadline in seconds, None when it has none. Without the descriptor set, a poll counts as a
    keyboard wait only when the terminal is raw and on stdin, as REPLs and pagers do it. A wait on
    one of `inputs` (the caller's standard input, given to the command) is a wait for input, as a
    wait on the terminal is, but not for a key: what is typed does not reach it.
    """
    if call is None:
        return TaskWait(Wait.EXTERNAL)
    name, args = call
    if name in READ_CALLS:
        kind = fd_kind(targets[0], inputs) if targets else "outside"
        if kind in ("terminal", "input"):
            return TaskWait(Wait.TERMINAL, keyboard=kind == "terminal")
        return TaskWait(Wait.RELATIVE if kind == "relative" else Wait.EXTERNAL)
    if name in POLL_CALLS:
        return _classify_poll(targets, timeout, canonical, stdin, inputs)
    if name in RELATIVE_CALLS:
        return TaskWait(Wait.RELATIVE)
    if name in SLEEP_CALLS:
        return TaskWait(Wait.TIMED)
    if name == "rt_sigtimedwait":
        return TaskWait(Wait.RELATIVE if args[2] == 0 else Wait.TIMED)
    return TaskWait(Wait.EXTERNAL)


def _classify_poll(
    targets: Sequence[str | None] | None, timeout: float | None, canonical: bool, stdin: str | None,
    inputs: frozenset[str],
) -> TaskWait:
    if targets is None:
        keyboard = not canonical and fd_kind(stdin) == "terminal"
        if keyboard and timeout is not None and timeout <= LOOP_POLL_S:
            return TaskWait(Wait.TIMED, keyboard=True)
        if keyboard:
            return TaskWait(Wait.TERMINAL, timeout, keyboard=True)
        return TaskWait(Wait.EXTERNAL if timeout is None else Wait.TIMED)
    kinds = {fd_kind(target, inputs) for target in targets} - {"gone"}
    keyboard = "terminal" in kinds
    if kinds & {"terminal", "input"} and not kinds & {"outside", "timer"}:
        if timeout is not None and timeout <= LOOP_POLL_S:
            return TaskWait(Wait.TIMED, keyboard=keyboard)
        return TaskWait(Wait.TERMINAL, timeout, keyboard=keyboard)
    if timeout is not None or "timer" in kinds:
        return TaskWait(Wait.TIMED, keyboard=keyboard)
    if kinds <= {"relative"}:
        return TaskWait(Wait.RELATIVE)
    return TaskWait(Wait.EXTERNAL, keyboard=keyboard)


def judge(foreground: Iterable[TaskWait], reader_elsewhere: bool = False) -> tuple[Verdict, float | None]:
    """The module's rule over the foreground's tasks: an input wait, listening, work, stopped, or hidden.

    The second value is the longest timeout among the keyboard waits: the caller's quiet window
    must outlast it, or a program polling the keyboard between steps is taken for waiting.
    """
    waits = list(foreground)
    kinds = {wait.kind for wait in waits}
    wake_in = max((w.wake_in for w in waits if w.kind is Wait.TERMINAL and w.wake_in is not None), default=None)
    listening = any(wait.keyboard for wait in waits)
    if Wait.STOPPED in kinds:
        return Verdict.STOPPED, None
    if Wait.RUNNING in kinds:
        return Verdict.WORKING, None
    if Wait.TIMED in kinds:
        return (Verdict.LISTENING if listening else Verdict.WORKING), None
    if reader_elsewhere:
        return Verdict.INPUT, wake_in
    if Wait.EXTERNAL in kinds:
        return (Verdict.LISTENING if listening else Verdict.WORKING), None
    if Wait.HIDDEN in kinds:
        return Verdict.HIDDEN, None
    if Wait.TERMINAL in kinds:
        return Verdict.INPUT, wake_in
    return Verdict.WORKING, None


def descendants(processes: Iterable[ProcessInfo], roots: set[int]) -> set[int]:
    """The pids of `roots` and of every process below them, whatever session they moved to."""
    children: dict[int, list[int]] = {}
    for proc in processes:
        children.setdefault(proc.ppid, []).append(proc.pid)
    found = set(roots)
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def session_members(processes: list[ProcessInfo], session: int, excluded: set[int]) -> list[ProcessInfo]:
    """What a sweep of the session must still end: zombies are dead already, and `excluded` holds
    what the caller ends another way (the shell, closed with its terminal) or must not end (itself)."""
    return sorted(
        (p for p in processes if p.session == session and p.pid not in excluded and p.state not in GONE_STATES),
        key=lambda p: p.pid,
    )


@dataclass(frozen=True)
class PidCounters:
    """How far the kernel's pid counter can have moved: the tasks made since boot (/proc/stat's
    `processes`), the tasks there are (/proc/loadavg), and the pid it comes round at (pid_max)."""

    made: int
    alive: int
    pid_max: int


# Tasks that may be made between a shell's fork and the first reading of the counters after it.
COUNTER_MARGIN = 1000
# Where the kernel's pid counter starts again once it reaches pid_max (RESERVED_PIDS in its pid.c,
# in every pid namespace): the pids below are only ever a namespace's first tasks'.
PID_RESTART = 300


def task_count(made: int | None, shell_pid: int) -> int | None:
    """`made` (/proc/stat's `processes`) where it is the count of tasks the kernel has made: every
    pid it gave out was one, so such a count is at least the shell's pid. Some kernels' /proc
    only says 0 (gVisor's), which would make every look seem to have missed nothing."""
    return made if made is not None and made >= shell_pid else None


def made_since(pids: list[str], shell_pid: int, then: PidCounters | None, now: PidCounters | None) -> list[str]:
    """Of a listing of /proc, the pids that can name a task made after the shell: those above its
    pid, and those the counter can have reached since it came round (`then`, read just after the
    shell was made; `now`, read after the listing); all of them if it can have come round as far
    as the shell's. Each task made moves the counter on by one, and past at most each task that
    was there, so it has moved at most twice the tasks made since, plus the tasks there were then
    (a few pids here, against tens of processes to read: pid_max 32768 comes round about every half
    hour on a busy machine, and a shell started in the last thousand pids before it would
    otherwise read them all). Without counts to go by (`task_count`), all of them."""
    if then is None or now is None or task_count(now.made, shell_pid) is None:
        return pids
    moved = 2 * (now.made - then.made) + then.alive + COUNTER_MARGIN
    reached = PID_RESTART + shell_pid + moved - now.pid_max  # the furthest it can be after coming round
    if reached >= shell_pid:
        return pids
    return [pid for pid in pids if int(pid) > shell_pid or PID_RESTART <= int(pid) <= reached]


def run_members(
    processes: list[ProcessInfo], shell: ProcessInfo, excluded: set[int], marked: Callable[[ProcessInfo], bool]
) -> list[ProcessInfo]:
    """Everything the run started: the shell's session, the shell's descendants in other sessions,
    and processes started since the shell that carry the run's marker (daemons re-parented to init)."""
    below = descendants(processes, {shell.pid})
    return sorted(
        (
            p for p in processes
            if p.pid not in excluded and p.state not in GONE_STATES
            and (p.session == shell.pid or p.pid in below or (p.start >= shell.start and marked(p)))
        ),
        key=lambda p: p.pid,
    )


def pid_after(pid: int, mark: int, pid_max: int) -> bool:
    """Whether `pid` was given out after `mark`, the last pid given out at some moment: pids go up
    one by one and come round at `pid_max`, and half of it is far more than a run can use."""
    return 0 < (pid - mark) % pid_max < pid_max // 2


class Owner(str, Enum):
    """Whose a process of the run is, by when and from where it was made (see `owners`)."""

    SHELL = "shell"  # made before the command started (start-up, a preexec hook, an earlier prompt, their workers)
    COMMAND = "command"  # made by the command, or by what it started, at any time
    PROMPT = "prompt"  # made by the shell after the command's line ended (its prompt hooks)


# One command of a shell: the last pid given out as it started (its C), and as its line ended
# (the line's record; None: not yet, or not known).
Span = tuple[int, int | None]


def owners(
    processes: list[ProcessInfo], shell_pid: int, spans: Sequence[Span], pid_max: int, shell: ProcessInfo | None = None,
) -> dict[int, Owner]:
    """Whose each of the run's processes is: the pids given out as each command started and as
    its line ended (`spans`, oldest first, at least one) split the shell's life, and a process is
    its maker's.

    What the shell itself makes is the command's within a command's span, its prompt's after the
    last one ended (a theme's async workers, `(autojump --add &)`, a prompt's git), and its own
    before the first and between two (a named shell's theme restarts its worker at any prompt):
    for the last command, that was there before it started. What another process makes is that
    one's maker's: a worker the shell started before the command (zsh-async's, in a session of
    its own) still runs jobs for the prompt while the command runs, and a job of the command
    forks for the command after the end. One whose parent let it go (re-parented to a subreaper
    or init) is told by its own birth and by its process group, whose leader's maker made it
    too: a group made outside every command, in the shell's session, is one the shell made for a
    hook; a session made between two commands whose leader is gone is a worker's of the shell's
    (zsh-async's, whose jobs a theme that restarted its worker lets go), while a session made
    after the last one may be a command's daemon, forked as its line ended (`setsid` as a job);
    a group made before the first command started is a worker's too (but the shell's own, where
    a command that turned job control off leaves its jobs).
    One the shell made on a terminal of its own (zsh's `zpty`, which zsh-async's worker runs on,
    restarted by a theme's `chpwd` hook as the command's `cd` runs), or let go on one (that
    worker's job, once the worker was restarted), is the shell's own whenever it was made: a
    command's program starts no terminal for its shell (`shell`: the shell's own stat, whose
    terminal `setsid -c` keeps; None tells nothing). So is a fork of the shell's own program
    (one that ran no other) in a session not the shell's, that leads it or whose leader is gone:
    `zpty`'s fork between its setsid() and the opening of its terminal, and a restarted worker's
    job, whose session lost its terminal with the worker. A command puts a program in a session of
    its own (`setsid`, a daemon), not a fork of the shell. One let go whose group's leader is
    listed is that leader's maker's.
    """
    by_pid = {p.pid: p for p in processes}
    found: dict[int, Owner] = {}
    first, last_end = spans[0][0], spans[-1][1]

    def made_after(pid: int, mark: int | None) -> bool:
        return mark is not None and pid_after(pid, mark, pid_max)

    def in_a_command(pid: int) -> bool:
        return any(made_after(pid, start) and (end is None or not made_after(pid, end)) for start, end in spans)

    def on_a_terminal_of_its_own(process: ProcessInfo) -> bool:
        """Or about to be, or was until its session's leader ended (see above)."""
        if shell is None or process.session == shell_pid:
            return False
        if process.tty == 0:
            return process.forked_only and process.comm == shell.comm and (
                process.session == process.pid or process.session not in by_pid)
        return shell.tty != 0 and process.tty != shell.tty

    def outside_commands(pid: int) -> bool:
        return made_after(pid, first) and not in_a_command(pid)

    def between_commands(pid: int) -> bool:
        return outside_commands(pid) and not made_after(pid, last_end)

    def owner(process: ProcessInfo) -> Owner:
        line: list[ProcessInfo] = []
        who: Owner | None = None
        while who is None:
            line.append(process)
            if process.pid in found:
                who = found[process.pid]
            elif not made_after(process.pid, first):
                who = Owner.SHELL
            elif process.ppid in by_pid:
                process = by_pid[process.ppid]
            elif on_a_terminal_of_its_own(process):
                who = Owner.SHELL
            elif process.ppid != shell_pid and process.pgrp in by_pid and by_pid[process.pgrp] not in line:
                process = by_pid[process.pgrp]
            elif process.ppid == shell_pid:
                who = Owner.COMMAND if in_a_command(process.pid) else \
                    Owner.PROMPT if made_after(process.pid, last_end) else Owner.SHELL
            elif process.session == shell_pid and outside_commands(process.pid) and outside_commands(process.pgrp):
                who = Owner.PROMPT if made_after(process.pgrp, last_end) else Owner.SHELL
            elif process.session not in (shell_pid, process.pid) and process.session not in by_pid \
                    and between_commands(process.session):
                who = Owner.SHELL
            elif process.pgrp != shell_pid and not made_after(process.pgrp, first):
                who = Owner.SHELL
            else:
                who = Owner.COMMAND
        for member in line:
            found[member.pid] = who
        return who

    return {p.pid: owner(p) for p in processes}


def shell_at_work(processes: list[ProcessInfo], whose: dict[int, Owner]) -> bool:
    """Whether the shell's own processes are in the middle of something a hang-up would cut short.

    A prompt hook's process (made after the line ended: atuin ending its history entry, autojump
    recording the directory) is at work until it ends; so is a process of the shell's that runs,
    or one working for another of them (a zsh-async worker's job, whose temporary file the worker
    removes once the job is done). A worker that sleeps with nothing of its own running, or an
    agent the rc started, waits for something that will not come before the shell ends: it is idle.
    """
    own = {p.pid for p in processes if whose.get(p.pid) in (Owner.SHELL, Owner.PROMPT) and p.state not in GONE_STATES}
    return any(
        whose[p.pid] is Owner.PROMPT or p.state in BUSY_STATES or p.ppid in own
        for p in processes if p.pid in own
    )


def has_marker(environ: bytes, marker: str) -> bool:
    """Whether a process's /proc/<pid>/environ holds this run's marker."""
    return f"{MARKER_VAR}={marker}".encode() in environ.split(b"\0")

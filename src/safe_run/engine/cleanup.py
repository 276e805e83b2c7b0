"""Stopping a command and everything it started, the way a careful person at the terminal would.

First Ctrl-C (the program may clean up after itself), then SIGTERM to its process group, then
SIGKILL. Background jobs (`cmd &`) live in other process groups of the same session, and what the
command moved out of the session (`setsid`, daemons such as gpg-agent, `tmux new -d`) is found by
ancestry or by the run's marker in its environment (see `evidence.run_members`): all of it is swept
at the end. What had to be killed is reported, so a caller learns that its command left something
running; only what the command started is reported, each process once: the shell's own helpers
started before the command are ended quietly, and what its prompt hooks start after the command's
line ended is not the command's at all, and is left to end with the shell (`kill_session`).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from ..core.evidence import Owner, ProcessInfo, Span, owners, shell_at_work
from .interrupts import KEYS
from .kernel import ObserverLike, already_ending, last_pid, pid_max, read_stat
from ..core.result import Killed
from .terminal import TerminalLike

# How long each step of the escalation waits for the processes to go.
GRACE_S = 0.5
# The most a stop may take: a loop of the command can put one program after another in front.
STOP_S = 4.0
# Once the shell is back in front, how long it must stay there before the stop is over (a loop
# that has not seen the interrupt yet starts its next program within this).
SETTLE_FRONT_S = 0.05
POLL_S = 0.01
# The first pause while the shell goes back to its prompt; each next one twice as long, up to 2 POLL_S.
FIRST_PAUSE_S = 0.0005
CTRL_C = KEYS[signal.SIGINT]
# `Reaper`'s `typed` for a shell no command line was ever typed into: all it started is its own.
NEVER_TYPED = 1 << 62
# How many times the sweep looks again for what it has not ended yet. A process that forks and
# exits while /proc is read (setsid as a job: the parent forks its child and exits) is missing
# from that scan, and so is its child: the next scan finds it.
SWEEP_ROUNDS = 4
# After a command ended by itself, how long the shell may take to run its prompt hooks before the
# sweep: their processes are the shell's, not the command's.
SETTLE_S = 0.5
# After a command ended by itself, how long the shell's own work (a prompt hook, a theme's async
# worker's job) may take to be done before the shell is hung up, and how many looks a few
# milliseconds apart must find it idle: a worker between two steps of a job sleeps with nothing
# running for a moment. pure's jobs take about 0.1 s here, and three times that on a loaded
# machine; under the whole test suite's load one outlasted a bound of 1 s in 3 of 16 runs of it.
# The wait comes after the answer, and ends as soon as the work does.
SHELL_WORK_S = 2.0
QUIET_LOOKS = 3
# How long a job the shell forked and had not started its program in yet (`sleep 30 &` as the
# line's last act) is given to start it before the sweep ends it: reported, it is that program.
EXEC_S = 0.1


@dataclass(frozen=True)
class Stopped:
    """What stopping the command ended, and whether only ending the shell stops what is left."""

    killed: list[Killed]
    shell_must_end: bool = False


class Reaper:
    """Carries out the stopping and the sweeping for one run.

    `shells_own` holds the pids that were already there when the command was typed. `typed` (the
    boot tick the first command line was typed at) lets the sweep tell the shell's own processes
    from the same scan of /proc that finds what to end, rather than from a scan of its own.
    """

    def __init__(
        self, terminal: TerminalLike, kernel: ObserverLike, shells_own: Collection[int] = (), typed: int | None = None,
        spans: Sequence[Span] = (),
    ) -> None:
        self._terminal = terminal
        self._kernel = kernel
        self._shell_pgrp = terminal.pid
        self._not_reported = set(shells_own)
        self._typed = typed
        # Each command's span of pids (see `evidence.owners`), the last one open until its line's
        # record ends it: what was made before the first is the shell's own, a preexec hook's
        # included (a start time in ticks of 10 ms cannot tell), and so is what the shell made
        # between two; what it made after the last is its prompt's.
        self._spans = list(spans)
        # The shell's own processes left for its hang-up to end (pid, start), swept after it; and
        # what the wait for their work needs (pid_max, the spans with the last line's end), once
        # they are left.
        self._left_to_hang_up: set[tuple[int, int]] = set()
        self._shell_work: tuple[int, list[Span]] | None = None
        # Whether the sweep left nothing of the run alive (what it found was the command's, and is
        # ended): the wait for the shell's work then looks only at what was made after it.
        self._swept_clean = False
        self._shell: ProcessInfo | None = None  # its stat, once read

    def stop_foreground(self, interrupt_shell: bool, line_over: Callable[[], bool]) -> Stopped:
        """Stop the command: every program it puts in front, escalating, until the shell is back.

        The shell itself in front before its command line is over (`line_over`: its prompt mark
        or the line's status came) runs the command: a builtin `read`, or a loop between two
        programs. Ctrl-C to the shell abandons the rest of the line where `interrupt_shell` says so
        (bash); elsewhere it would not (fish's `read` and zsh's `vared` return and the line goes
        on), and only ending the shell stops the command. A shell whose program was just stopped
        is first given a moment to say that its line is over: a loaded machine can take longer to
        let it draw its prompt than it took to stop the program. Once the line is over, nothing
        in front is the command's: a prompt hook's subshell (autojump's) is left to the shell.
        """
        killed: list[Killed] = []
        interrupted = False
        deadline = time.monotonic() + STOP_S
        while time.monotonic() < deadline:
            pgrp = self._foreground_pgrp()
            if pgrp is None or (killed and line_over()):
                break  # once its line is over, what the shell puts in front is its prompt's (a hook's subshell)
            if pgrp != self._shell_pgrp:
                if _group_gone(pgrp, 0.0):
                    time.sleep(POLL_S)  # gone: the shell takes its terminal back in a moment
                else:
                    killed += self._stop_group(pgrp)
            elif line_over() or (interrupted and self._shell_stays_in_front()):
                break
            elif killed and self._shell_moves_on(line_over):
                continue
            elif not interrupt_shell:
                return Stopped(killed, shell_must_end=True)
            elif not interrupted:
                self._terminal.write(CTRL_C)
                interrupted = True
        return Stopped(killed)

    def _stop_group(self, pgrp: int) -> list[Killed]:
        """Ctrl-C to the program in front, then SIGTERM and SIGKILL to its group while it stays."""
        victims = [p for p in self._kernel.session_processes() if p.pgrp == pgrp]
        self._terminal.write(CTRL_C)
        for signum in (signal.SIGTERM, signal.SIGKILL):
            if _group_gone(pgrp, GRACE_S):
                break
            _signal_group(pgrp, signum)
            _signal_group(pgrp, signal.SIGCONT)  # a stopped process acts on nothing until continued
        return self._report(victims)

    def _shell_moves_on(self, line_over: Callable[[], bool]) -> bool:
        """Wait (bounded) for the shell, back in front after its program was stopped, to end its
        line or put the line's next program in front; False if it stays there, running a builtin."""
        deadline = time.monotonic() + SETTLE_S
        while time.monotonic() < deadline:
            if line_over() or self._foreground_pgrp() != self._shell_pgrp:
                return True
            time.sleep(POLL_S)
        return False

    def _shell_stays_in_front(self) -> bool:
        deadline = time.monotonic() + SETTLE_FRONT_S
        while time.monotonic() < deadline:
            if self._foreground_pgrp() != self._shell_pgrp:
                return False
            time.sleep(POLL_S)
        return True

    def kill_session(self, settle: bool = False) -> list[Killed]:
        """End every process the run left: background jobs, their children, and what left the session.

        Each is ended as its maker's (see `evidence.owners`): the command's are ended and
        reported; the shell's own (its start-up's, a preexec hook's, their workers') are ended
        quietly. With `settle` (the command ended by itself), what the shell made after the
        command's line ended (the end of the last span, as the line recorded it) is its
        prompt's: it is left alone, to end with the shell as a closed terminal window ends it, or
        by itself (autojump recording the directory). The shell's own processes are then left to the
        shell's hang-up as well (`let_shell_work_end` first): ended while the shell lives, a
        zsh-async worker is started again by its prompt, and the hang-up cuts the new one's first
        job short, leaving its temporary file; what outlives the hang-up is ended after it
        (`sweep_after_hang_up`). Where the pids could not be had (no /proc), the prompt
        hooks get a moment to finish first, and whatever of theirs still holds the terminal is
        ended without being reported.
        """
        spans = self._spans
        wrap = pid_max() if spans else None
        to_hang_up = self._before_the_sweep(settle, wrap, spans)
        ended: list[ProcessInfo] = []
        known: dict[int, ProcessInfo] = {}
        seen: set[int] = {self._terminal.pid}
        left_alive = False
        for round_ in range(SWEEP_ROUNDS):
            leftovers = [p for p in self._kernel.run_processes(new_only=round_ > 0) if p.pid not in seen]
            if not leftovers and (round_ > 0 or self._kernel.whole_look):
                break  # two scans in a row found nothing new, or one that nothing can have slipped past
            seen.update(p.pid for p in leftovers)
            if wrap is not None and spans:
                known.update((p.pid, p) for p in leftovers)
                whose = self._owners(list(known.values()), spans, wrap)
                left_alive = left_alive or any(whose[p.pid] is not Owner.COMMAND for p in leftovers)
                leftovers = self._ended_now(leftovers, whose, to_hang_up)
            leftovers = _not_gone_by_themselves(leftovers)
            leftovers = self._let_forks_start(leftovers)
            ended += leftovers
            self._end(leftovers)
        self._swept_clean = to_hang_up and not left_alive
        return self._report(ended)

    def _let_forks_start(self, leftovers: list[ProcessInfo]) -> list[ProcessInfo]:
        """A job forked by the shell a moment before the line ended still runs as a copy of the
        shell, and was reported as `bash` or `zsh`: its program is given EXEC_S to start, and
        the job is known by that program's name (a subshell, which never starts one, keeps the
        shell's)."""
        if not leftovers:
            return leftovers
        shell = self._shell_stat()
        if shell is None:
            return leftovers
        forks = [p.pid for p in leftovers if p.ppid == shell.pid and p.comm == shell.comm]
        waiting = list(forks)
        deadline = time.monotonic() + EXEC_S
        while waiting and time.monotonic() < deadline:
            time.sleep(POLL_S / 10)
            waiting = [p.pid for p in leftovers if p.pid in waiting and self._kernel.name_now(p) == shell.comm]
        return [replace(p, comm=self._kernel.name_now(p)) if p.pid in forks else p for p in leftovers]

    def _owners(self, processes: list[ProcessInfo], spans: list[Span], wrap: int) -> dict[int, Owner]:
        return owners(processes, self._terminal.pid, spans, wrap, self._shell_stat())

    def _shell_stat(self) -> ProcessInfo | None:
        """The shell's own stat (its terminal, its program's name), read once."""
        if self._shell is None:
            self._shell = read_stat(self._terminal.pid)
        return self._shell

    def _before_the_sweep(self, settle: bool, wrap: int | None, spans: list[Span]) -> bool:
        """What comes before the sweep of a command that ended by itself; True when the shell's
        own processes are left to its hang-up (see `kill_session`)."""
        if not settle:
            return False
        if wrap is None or not spans or spans[-1][1] is None:
            self._not_reported.update(self._prompt_hooks())
            return False
        self._shell_work = (wrap, spans)
        return True

    def _ended_now(self, leftovers: list[ProcessInfo], whose: dict[int, Owner], to_hang_up: bool) -> list[ProcessInfo]:
        """Which of `leftovers` the sweep ends now: the command's, and the shell's own unless they
        are left to its hang-up; never what its prompt made."""
        shells = [p for p in leftovers if whose[p.pid] is Owner.SHELL]
        self._not_reported.update(p.pid for p in shells)
        if to_hang_up:
            self._left_to_hang_up.update((p.pid, p.start) for p in shells)
            return [p for p in leftovers if whose[p.pid] is Owner.COMMAND]
        return [p for p in leftovers if whose[p.pid] is not Owner.PROMPT]

    def sweep_after_hang_up(self) -> None:
        """End what of the shell's own outlived its hang-up (an agent its rc started, a worker that
        ignores it), quietly, as the sweep would have before it."""
        left = [(read_stat(pid), start) for pid, start in self._left_to_hang_up]
        self._left_to_hang_up.clear()
        # The same process, not a new one given its pid meanwhile.
        alive = [info for info, start in left if info is not None and info.start == start]
        if alive:
            self._end(alive)

    def let_idle_shell_work_end(self) -> None:
        """The same wait for a shell that ran no command (one kept ahead that no call took):
        everything there is its own, and what it makes from here is its prompt's."""
        wrap, now = pid_max(), last_pid()
        if wrap is not None and now is not None:
            self._shell_work = (wrap, [(now, now)])
            self.let_shell_work_end()

    def let_shell_work_end(self) -> None:
        """Wait (bounded) for what the shell itself does after the command to be done before it is
        hung up: a closed terminal window cuts nothing short a moment after its prompt, and a
        hang-up at once would (pure's worker leaves its temporary files). The shell itself is done
        once its prompt is up: until then a hook's group may hold the terminal, and the hang-up
        would reach it. Only after a command that ended by itself, whose line's end is known."""
        if self._shell_work is None:
            return  # the command did not end by itself, or its line's end is not known
        wrap, spans = self._shell_work
        deadline = time.monotonic() + SHELL_WORK_S
        quiet = 0
        # After a clean sweep, its listing holds nothing of the run's: only what was made since is
        # read (a look at every process costs a millisecond where pids came round).
        new_only, self._swept_clean = self._swept_clean, False
        while True:
            processes = self._kernel.run_processes(new_only=new_only)
            new_only = False
            whose = self._owners(processes, spans, wrap)
            at_prompt = self._kernel.shell_at_prompt() is not False
            if at_prompt and all(owner is Owner.COMMAND for owner in whose.values()):
                return
            quiet = quiet + 1 if at_prompt and not shell_at_work(processes, whose) else 0
            if quiet >= QUIET_LOOKS or time.monotonic() >= deadline:
                return
            time.sleep(POLL_S / 2)

    def _end(self, leftovers: list[ProcessInfo]) -> None:
        """SIGTERM to each leftover (and its job's group), SIGKILL to what is still there after GRACE_S.

        The shell's own (not reported) get SIGHUP first, as a closed terminal window ends them:
        an interactive zsh, such as a prompt theme's async worker, ignores SIGTERM, and would
        hold the answer for the whole grace time.
        """
        if self._typed is not None:
            self._not_reported.update(p.pid for p in leftovers if p.start < self._typed)
        session = [p for p in leftovers if p.session == self._terminal.pid]
        groups = {p.pgrp for p in session if p.pgrp != self._shell_pgrp}
        # A job's group is signalled as a whole, for what it starts meanwhile; the shell's own
        # group is not (without job control a background job stays in it, and the shell is closed
        # separately), nor the groups of what left the session, which are its own business. Every
        # process found is also signalled by itself: one that leaves its group between the look
        # and the signal (setsid's child calling setsid()) is still reached.
        singles = [p.pid for p in leftovers]
        for pid in singles:
            if pid in self._not_reported:
                _signal_pid(pid, signal.SIGHUP)
        for pgrp in groups:
            _signal_group(pgrp, signal.SIGTERM)
            _signal_group(pgrp, signal.SIGCONT)
        for pid in singles:
            _signal_pid(pid, signal.SIGTERM)
            _signal_pid(pid, signal.SIGCONT)
        # Each process found gets the grace time; a group's members found since then get none.
        for pid in _still_there(singles, GRACE_S):
            _signal_pid(pid, signal.SIGKILL)
        for pgrp in groups:
            if not _group_gone(pgrp, 0.0):
                _signal_group(pgrp, signal.SIGKILL)

    def _prompt_hooks(self) -> set[int]:
        """Wait (bounded) for the shell to be back at its prompt; what holds the terminal instead is a hook's."""
        deadline = time.monotonic() + SETTLE_S
        pause = FIRST_PAUSE_S
        while True:
            at_prompt = self._kernel.shell_at_prompt() if self._kernel.available else None
            if at_prompt is None or at_prompt:
                return set()
            if time.monotonic() >= deadline:
                break
            # Short at first: a shell that just printed its end mark is drawing its prompt, which
            # takes a millisecond or two, and a one-shot run answers only after this.
            time.sleep(pause)
            pause = min(pause * 2, POLL_S * 2)
        hook = self._foreground_pgrp()
        if hook is None or hook == self._shell_pgrp:
            return set()
        return {p.pid for p in self._kernel.session_processes() if p.pgrp == hook}

    def _report(self, processes: list[ProcessInfo]) -> list[Killed]:
        """The command's processes among these, each reported once over the whole run."""
        killed = []
        for process in processes:
            if process.pid not in self._not_reported:
                self._not_reported.add(process.pid)
                killed.append(Killed(pid=process.pid, command=self._kernel.name_now(process)))
        return killed

    def _foreground_pgrp(self) -> int | None:
        """The terminal's foreground group. 0 means none: the session's leader is gone (a shell
        replaced by `exec sleep` and then interrupted), and a signal to group 0 is one to our own."""
        try:
            pgrp = os.tcgetpgrp(self._terminal.fd)
        except OSError:
            return None
        return pgrp if pgrp > 0 else None


def _not_gone_by_themselves(leftovers: list[ProcessInfo]) -> list[ProcessInfo]:
    """`leftovers` but those already ending that go within GRACE_S: a job the command signalled as
    its last act (`kill %1`, with no `wait`), still listed until the kernel runs it, was ended by
    the command, not by the sweep, and is not reported."""
    ending = [p.pid for p in leftovers if already_ending(p)]
    if not ending:
        return leftovers
    gone = set(ending) - set(_still_there(ending, GRACE_S))
    return [p for p in leftovers if p.pid not in gone]


def _still_there(pids: list[int], within: float) -> list[int]:
    """Those of `pids` not gone (see `_process_gone`) within `within` seconds, all waited for
    together: the first takes what it needs of them, the rest what is left."""
    deadline = time.monotonic() + within
    return [pid for pid in pids if not _process_gone(pid, max(0.0, deadline - time.monotonic()))]


def _group_gone(pgrp: int, within: float) -> bool:
    """Wait up to `within` seconds for a process group to have no members left."""
    return _gone(lambda: os.killpg(pgrp, 0), within)


def _process_gone(pid: int, within: float) -> bool:
    """A zombie is gone too: it has ended, and whoever collects it (this process, as a subreaper,
    or an init) may do so only after the sweep."""

    def probe() -> None:
        os.kill(pid, 0)
        if _zombie(pid):
            raise ProcessLookupError(pid)

    return _gone(probe, within)


def _zombie(pid: int) -> bool:
    info = read_stat(pid)
    return info is not None and info.state == "Z"


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

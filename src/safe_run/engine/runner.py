"""One run, start to finish: private directory, shell, loop, clean-up, result.

`Run` owns the terminal and can be driven step by step from any process; `execute` is the plain
foreground use of it. All decisions are the tracker's; this module only moves bytes and time,
asks the kernel what it sees, and carries out the stopping and the cleaning up.
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import tempfile
import termios
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from .. import shells
from .cleanup import Reaper
from .loop import Watcher, follow
from .interrupts import KEYS, Wakeup
from ..core.escapes import as_typed
from ..core.evidence import STOPPED_STATES, Observation, Span, pid_after
from .kernel import KernelObserver, ObserverLike, boot_ticks, group_made_by, last_pid, pid_max, read_stat
from ..core.output import HeadTail
from ..core.queries import Questions, answer
from ..core.reading import Reading, reading
from ..core.result import (
    Downgrade, Killed, Reason, Reinjection, Result, ShellInfo, Status, Strategy, error_result, not_started,
)
from ..core.screen import ScreenTail
from ..core.sequences import Osc, SequenceParser
from ..shells import posix
from ..shells.registry import is_shell, kind_of
from ..syntax import check_syntax
from .shell_start import KeptShell, RunFailed, command_text, run_setup, start_key, start_shell
from .terminal import Readiness, Terminal, TerminalError, TerminalLike, unread_input
from ..core.request import RunRequest
from ..core.tracker import (
    Action, CommandTracker, Config, Decision, Downgraded, EndCheck, Lines, Look, Output, Phase, Reinjected,
    Replacement, Send, Waiting,
)
from .transcript import Transcript
from .workdir import HeldDirectory

# Reads of what is already in the terminal before a decision on the kernel's look: bounded, since
# a command that prints without pause always has more (and then no quiet-time decision comes).
PENDING_READS = 16
# How long a stop waits for output the command wrote just before it (see `_take_written_before_the_stop`).
STOP_GRACE_S = 0.005
# How an end mark's OSC begins: the one OSC the loop asks the kernel about as it arrives.
END_MARK = b"633;D;"
# The prompt's marks: in the middle of a command they count only as the end mark does.
PROMPT_MARKS = (b"633;A;", b"633;B;")
# The status file is emptied when it has grown this big (a few bytes a command).
STATUS_FILE_MAX = 64 * 1024
# How long a person's Ctrl-Z waits for the shell to be stopped before its job is (see `Run.hold`).
HOLD_S = 0.2
# How long an end mark's check waits for the shell to take its terminal back from a group whose
# leader is gone already (see `Run._shells_front`).
FRONT_SETTLE_S = 0.1


class CommandRefused(Exception):
    """The command cannot run as given; found before anything was started."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.message)
        self.result = result


class Audience(Protocol):
    """Who sees the terminal besides the run (a session's recording, people attached): what it
    printed, without its OSC sequences, and what was typed while it echoed. `command`: the
    printing is the command's; the shell's prompt and echo of the lines safe-run types are not,
    and only the recording keeps them."""

    def output(self, data: bytes, command: bool = True) -> None: ...

    def input(self, data: bytes) -> None: ...


class Run:
    """A started run: the shell in its terminal and the tracker following the command.

    `start_terminal` and `observe_with` start the shell and watch it; the loop is tested with a
    stand-in for both that plays a shell (tests/test_run_loop.py). `kept`: a shell started ahead
    (`shell_start.KeptShell`), taken when it is the one this run would start, else closed.
    """

    def __init__(
        self,
        request: RunRequest,
        workdir: Path,
        clock: Callable[[], float],
        on_output: Callable[[bytes], None] | None = None,
        *,
        start_terminal: Callable[..., TerminalLike] = Terminal.spawn,
        observe_with: Callable[..., ObserverLike] = KernelObserver,
        audience: Audience | None = None,
        kept: KeptShell | None = None,
    ) -> None:
        self.request = request
        self._audience = audience
        self.last_seen: Observation | None = None  # what the kernel showed at the last look
        self._clock = clock
        self._on_output = on_output
        # When the first command line was typed: what ran before is the shell's own, and at the
        # end everything else is reported.
        self._first_typed: int | None = None
        self._first_typed_pid: int | None = None  # the last pid given out then (None: /proc did not say)
        # Each command's span of pids, as its C and its line's record said (see `evidence.owners`).
        self._spans: list[Span] = []
        self._secrets_on_disk = True  # files holding the nonce wait to be read (see `_note_start`)
        # A stop had to end the shell itself (it ran the command in one of its own reads).
        self.shell_ended = False
        # The shell process's argv when the first line was typed: another one later means a
        # command replaced the shell, even by the same program (`exec bash`).
        self._shell_argv: bytes | None = None
        self._program: str | None = None  # the program the shell's process ran at the last look
        # What the tracker decided to type and the terminal has not taken yet: typed as it takes
        # it, never waited for, so a caller of the holder is never held up by a full terminal.
        self._to_type = bytearray()
        self._reaper: Reaper | None = None  # once closed, until the shell is hung up (`hang_up`)
        # Which of the wake descriptors the last wait found readable: its caller looks at those
        # only (a drain, an accept) instead of asking the kernel about each again every turn.
        self.woken: frozenset[int] = frozenset()
        self._begin_command(request)
        self.transcript = Transcript(request.log)
        shell_path = shells.resolve_shell(request.shell, dict(os.environ))
        kind = kind_of(shell_path)
        self.shell = ShellInfo(name=kind.name, path=shell_path)
        taken = None if kept is None else kept.taken_for(start_key(request, shell_path))
        self._kept = kept if taken is not None else None
        # One kept ahead for another run (another directory): closed after this run's first
        # answer (`close_unused`), since it is given time to finish its own start-up work first.
        self._unused = kept if taken is None else None
        setup = taken.setup if taken is not None else run_setup(request, shell_path, workdir)
        try:
            self._check(command_text(request, kind), setup.command_file)
            started = taken or start_shell(request, kind, setup, start_terminal, observe_with, clock)
        except BaseException:
            if kept is not None:
                kept.close()
            raise
        self._setup, launch = setup, started.launch
        rows, cols = request.size
        self.tracker = CommandTracker(
            config=_config(setup.nonce, launch.lines, request, started.kernel.available, launch.exit_word),
            capture=_capture(request),
            screen=ScreenTail(cols, rows),
            strategy=_first_strategy(request.strategy, launch.integrated),
            integrated=launch.integrated,
            timers=request.timers,
        )
        self._parser = SequenceParser()
        self._questions = Questions()
        self._status_file = posix.status_file(setup)
        self._status_from = 0  # where the status of the line typed last begins in the file
        self._record: tuple[int, int | None] | None = None  # that line's record, once read
        self.terminal, self.kernel = started.terminal, started.kernel
        self.tracker.start(clock())

    def _begin_command(self, request: RunRequest) -> None:
        """What each command of the shell reports for itself alone."""
        self.request = request
        self.started_at = self._clock()
        self.finish: Decision | None = None
        self.killed: list[Killed] = []
        self.signal_name: str | None = None
        self.downgrades: list[Downgrade] = []
        self.reinjected: list[Reinjection] = []
        self.waiting: Decision | None = None
        self._typed: int | None = None  # when the command line was typed (clock ticks since boot)
        self._echo: bytes | None = None  # the typed line as the shell will echo it, until it has
        self._stopped = False

    def _check(self, command: str, command_file: Path) -> None:
        """Write the command where the typed line reads it, once the shell's own parser accepts it."""
        _overwrite(command_file, command.encode("utf-8"))
        problem = check_syntax(self.shell.name, self.shell.path, command_file, written=command)
        if problem is not None:
            raise CommandRefused(Result(
                status=Status.SYNTAX_ERROR, exit_code=None, strategy=None, completion_reason=Reason.SYNTAX_CHECK,
                command=self.request.command, shell=self.shell, duration_s=self._clock() - self.started_at,
                message=problem.message(),
            ))

    def next_command(self, request: RunRequest, command: str | None = None) -> None:
        """Start the next command in the same live shell, once the last one is decided.

        `command` is the text to run when it differs from the one reported (a per-command --cwd
        or --env wraps it). Raises CommandRefused for a command the shell would not parse (nothing
        is typed), and RunFailed when the shell was replaced by a program that is no shell.
        """
        assert self.finish is not None, "next_command() before the last command was decided"
        previous = self.finish
        self._begin_command(request)
        try:
            replaced = self._replacement(previous.reason is Reason.SHELL_INTEGRATION)
            self._check(command or request.command, self._setup.command_file)
        except (CommandRefused, RunFailed):
            self.finish = previous  # nothing was typed: the shell still waits for a command
            raise
        config, by = replaced if replaced is not None else (None, None)
        self._end_span(self._line_record()[1])
        self._act(self.tracker.start_next_cycle(self.started_at, request.timers, _capture(request), config, by))

    def _end_span(self, end: int | None) -> None:
        """The last command's span ends where its line recorded its end (`end`), once it has (else
        at the next command's start): what the shell makes at its prompt meanwhile is its own."""
        if end is not None and self._spans and self._spans[-1][1] is None:
            self._spans[-1] = (self._spans[-1][0], end)

    def _replacement(self, ended_by_its_line: bool = False) -> tuple[Config, str] | None:
        """The shell's config anew when a command replaced the shell by another (`exec zsh`, or
        `exec bash` in bash), from the program its process runs now. A program that is no shell
        gets nothing typed: RunFailed.

        `ended_by_its_line`: the last line's own end mark ended it, so the process that read that
        line ran it to its end; then the same program means the same shell, and its argv (a file
        to read each time) is not looked at.
        """
        program = self.kernel.program()
        if program is None or (ended_by_its_line and program == self._program):
            return None
        self._program, argv = program, self.kernel.argv()
        kind = kind_of(program)
        anew = argv is not None and self._shell_argv is not None and argv != self._shell_argv
        if kind.name == self.shell.name and not anew:
            return None
        if not is_shell(kind):
            raise RunFailed(
                f"the shell was replaced by {os.path.basename(program)}, which is not a shell; nothing was typed. "
                "Close this shell and start a fresh one"
            )
        self.shell = ShellInfo(name=kind.name, path=program)
        self._shell_argv = argv
        setup = replace(self._setup, shell_path=program)
        live_lines = kind.live_lines if self.request.strategy != "none" else None
        lines = live_lines(setup) if live_lines is not None else posix.lines(setup, b"", prompt_mark=kind.prompt_mark)
        return _config(setup.nonce, lines, self.request, self.kernel.available), kind.name

    def step(
        self, timeout: float | None, wake_fds: Sequence[int] = (), wake_writers: Sequence[int] = (),
    ) -> Decision | None:
        """Wait at most `timeout` seconds for something to happen (or a wake fd) and act on it."""
        if self.finish is not None:
            return self.finish
        now = self._clock()
        deadline = self.tracker.next_deadline(now)
        wait = _earliest(timeout, None if deadline is None else max(0.0, deadline - now))
        ready = self._wait_and_read(wait, wake_fds, wake_writers)
        if ready.exited and self.finish is None:
            for chunk in self.terminal.drain():
                self._consume(chunk)
            if self.finish is None:
                self._consume_tail()
                self._act(self.tracker.shell_exited(self.terminal.exit_status(), self.terminal.killed_by_signal()))
        if self.finish is None and deadline is not None and self._clock() >= deadline:
            self.take_a_look(settled=self.tracker.holds_a_wait)
        return self.finish

    def take_a_look(self, settled: bool = False) -> Observation | None:
        """Gather one evidence record and hand it to the tracker; what the kernel saw in it.

        Always in this order. The kernel first. Then what is already in the terminal, fed before
        the record: written before the look, it must count as output (and restart the quiet time)
        before anything is decided on that look. Then the typed line's status file: one written
        after the look means the line was over; none means it still ran when the kernel was asked,
        so a shell seen reading then was in the command's own read. Last, when the shell's process
        waits on the terminal, what runs in it now (a program or another shell `exec`ed there).
        `settled`: a look only at whether a held input wait stays (see `KernelObserver.observe`).
        """
        seen = self.kernel.observe(self._typed, settled) if self.kernel.available else None
        self.last_seen = seen
        self._take_written_before_the_look()
        if self.finish is not None:
            return seen
        program, replaced = None, None
        if seen is not None and seen.shell_in_foreground and seen.waiting_for_terminal:
            program, replaced = self._in_the_shells_process()
        look = Look(seen, self._status_in_file(), program, replaced)
        self._act(self.tracker.look(self._clock(), look))
        return seen

    def _take_written_before_the_look(self) -> None:
        """What the command wrote before the kernel was looked at is in the terminal by now, though
        the wait may have returned before it came: it is taken first, so that a decision on a quiet
        terminal counts it as output (and it restarts the quiet time) rather than losing it."""
        for chunk in self.terminal.drain(PENDING_READS):
            self._consume(chunk)

    def _take_written_before_the_stop(self) -> None:
        """What the command wrote before a stop was asked for is its output too: the stop may
        come right after it (`echo done; kill -INT $PPID`), before the terminal showed it, since
        the kernel hands a pseudo-terminal's output to its reader a moment after the write. So
        it is read first, waiting that moment (STOP_GRACE_S) only when nothing is there yet."""
        if self.finish is not None:
            return
        self.terminal.wait(STOP_GRACE_S)  # at once when something is there
        self._take_written_before_the_look()

    def _in_the_shells_process(self) -> tuple[str | None, Replacement | None]:
        """The shell's process waits on the terminal: is it still the shell?

        A command that replaced it by a program (`exec python3`) is still running, and the program
        is what waits (its name is the first answer): it is never mistaken for a prompt to type
        into. One that replaced it by another shell (`exec dash`) has ended once that one waits.
        """
        program = self.kernel.program()
        if program is not None and not is_shell(kind_of(program)):
            return os.path.basename(program), None
        if self.tracker.phase is not Phase.RUNNING:
            return None, None
        replaced = self._replacement()
        return None, None if replaced is None else Replacement(*replaced)

    def wait_between_commands(
        self, timeout: float | None, wake_fds: Sequence[int] = (), wake_writers: Sequence[int] = (),
    ) -> bool:
        """Between two commands of a live shell: take what it prints (its prompt, background jobs'
        output, which belongs to no command) so that nothing blocks on a full terminal; False once
        the shell has exited."""
        return not self._wait_and_read(timeout, wake_fds, wake_writers).exited

    def _wait_and_read(
        self, timeout: float | None, wake_fds: Sequence[int], wake_writers: Sequence[int],
    ) -> Readiness:
        """One wait on the terminal (and the wake descriptors), then what it allows: the text
        waiting to be typed, as far as the terminal takes it, and what the shell printed."""
        ready = self.terminal.wait(timeout, wake_fds, typing=bool(self._to_type), wake_writers=wake_writers)
        self.woken = ready.woken
        self._type_what_fits()
        if ready.readable:
            self._consume(self.terminal.read())
        return ready

    def set_output(self, on_output: Callable[[bytes], None] | None) -> None:
        """Where the next command's output goes as it arrives."""
        self._on_output = on_output

    def directory(self) -> str | None:
        """The shell's working directory now."""
        return self.kernel.directory()

    def interrupt(self, signum: int, typed: bool = False) -> bool:
        """safe-run itself was told to stop: stop the command and report what there is; False.

        At a person's own run, their Ctrl-C (SIGINT to safe-run, which is in the foreground of their
        terminal) is the command's: it goes to the command's terminal as its interrupt character,
        and the command decides what it means (a REPL goes on); True: passed on. `typed`: such a
        Ctrl-C, or Ctrl-\\ (SIGQUIT), from a person whose call asks a named shell."""
        if typed:
            key = KEYS.get(signum)
        else:  # a person's own run: its display gives Ctrl-\\ to the command itself
            key = KEYS[signum] if signum == signal.SIGINT and self.request.interactive else None
        if key is not None and self.finish is None and self.tracker.phase is Phase.RUNNING:
            self.terminal.write(key, timeout=0.0)
            return True
        self.signal_name = signal.Signals(signum).name
        self._take_written_before_the_stop()
        if self.finish is None:
            self._act(self.tracker.interrupted(self.signal_name))
        return False

    def reading(self, fresh: bool = True) -> Reading:
        """Whether what is typed should go to the command now, by the one rule of `reading`: on a
        fresh look (handed to the tracker too, so that an input wait it shows is held), or on the
        last one. Between its start mark and its end only (a shell without integration gives no
        start mark: once its line is typed)."""
        phase = self.tracker.phase
        running = self.finish is None and (
            phase is Phase.RUNNING or (phase is Phase.TYPED and not self.tracker.integrated))
        seen = None
        if running:
            seen = self.take_a_look() if fresh and self.kernel.available else self.last_seen
        waiting = self.waiting
        return reading(seen, waiting is not None, running and self.finish is None, waiting is not None and waiting.secret)

    def hold(self, stopped: bool, size: tuple[int, int] | None = None) -> None:
        """A person's Ctrl-Z stops safe-run, and the command with it, as at their terminal: its job
        gets SIGTSTP (a full-screen program leaves its screen first), and `fg` lets both go on.
        The shell is stopped first, and its job only once it is (a shell waiting for its job would
        otherwise see it stop, say so and go on with the rest of the line), and let go last.

        `size`: the person's terminal's when they let it go on, given to the job (and its SIGWINCH
        to draw its screen anew, see `resize`) while it is still stopped: it gets that signal as it
        goes on, before it reads a key. Sent once it has drawn, the signal could cost the key the
        person typed on seeing that screen (less drops a key read as a signal comes)."""
        shell, front = self.terminal.pid, self.terminal.foreground()
        job = front if front not in (None, 0, shell) else None
        if not stopped:
            if size is not None:
                self.resize(*size)
            _signalled(job, signal.SIGCONT, os.killpg)
            _signalled(shell, signal.SIGCONT, os.kill)
            return
        _signalled(shell, signal.SIGSTOP, os.kill)
        deadline = time.monotonic() + HOLD_S
        while (seen := read_stat(shell)) is not None and seen.state not in STOPPED_STATES \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        _signalled(job, signal.SIGTSTP, os.killpg)

    def resize(self, rows: int, columns: int) -> None:
        """Give the terminal its size (a person attached with theirs, or back at their terminal
        after `fg`), and tell the foreground with SIGWINCH, as the kernel does only when the size
        changed: a full-screen program draws its screen anew for whoever looks now. The shell at
        its prompt is left alone (its line editor would draw the prompt again)."""
        size = struct.pack("HHHH", rows, columns, 0, 0)
        try:
            unchanged = fcntl.ioctl(self.terminal.fd, termios.TIOCGWINSZ, bytes(8))[:4] == size[:4]
            fcntl.ioctl(self.terminal.fd, termios.TIOCSWINSZ, size)
        except OSError:
            return
        self.tracker.screen.resize(rows, columns)
        if not unchanged:
            return  # the kernel tells the foreground itself; a second signal can cost a key (less)
        try:
            front = os.tcgetpgrp(self.terminal.fd)
            if front > 0 and front != self.terminal.pid:
                os.killpg(front, signal.SIGWINCH)
        except OSError:
            pass  # no foreground, or it is gone: nobody to draw

    def redraw(self, rows: int, columns: int) -> bytes:
        """What draws the terminal's screen as it is now, for a person who attaches."""
        return self.tracker.screen.redraw(rows, columns)

    def unread_input(self) -> int | None:
        """How many typed bytes wait in the command's terminal, unread; None when unknown."""
        return unread_input(self.terminal.fd)

    def answer(self, data: bytes) -> int:
        """Type into the command, as the person at a terminal would; how much the terminal took.

        Never waits: a terminal whose input is full takes nothing, and the caller keeps the rest.
        """
        if self.finish is not None:
            return 0
        echoed = self._audience is not None and self._echoes()
        taken = self.terminal.write(data, timeout=0.0)
        if taken and echoed:
            assert self._audience is not None
            self._audience.input(data[:taken])
        if taken:
            self.waiting = None
            self.tracker.answered(self._clock())
        return taken

    def stop(self, why: str | None = None) -> None:
        """End the command at its owner's request, or for `why` (the same escalation as a timeout)."""
        self._take_written_before_the_stop()
        if self.finish is None:
            self._act(self.tracker.stop_requested(why))

    def expire_wait(self, after: float) -> None:
        """End a held input wait that nobody asked about for `after` seconds."""
        if self.finish is None and self.waiting is not None:
            self._take_written_before_the_stop()
            if self.finish is None:
                self.take_a_look()  # a held wait is looked at seldom: it may have ended by itself
        if self.finish is None and self.waiting is not None:  # output read just now: it no longer waits
            self._act(self.tracker.unattended(self.waiting, after))

    def progress(self) -> Result:
        """Where a run that has not finished stands: running, or waiting for input."""
        waiting = self.waiting
        return Result(
            status=waiting.status if waiting else Status.RUNNING,
            exit_code=None,
            strategy=self.tracker.strategy,
            completion_reason=waiting.reason if waiting and not waiting.reads_keyboard else None,
            command=self.request.command,
            shell=self.shell,
            duration_s=self._clock() - self.started_at,
            message=self.transcript.noted(waiting.message if waiting else None),
            downgrades=tuple(self.downgrades),
            reinjected=tuple(self.reinjected),
            prompt=waiting.prompt if waiting else None,
            alternate_screen=self.tracker.screen.used_alternate,
            reads_keyboard=waiting is not None and waiting.reads_keyboard,
            secret=waiting is not None and waiting.secret,
        )

    def close(self) -> list[Killed]:
        """Stop what must be stopped, then make sure nothing the run started is left; what that
        ended (also in `killed`): the commands' leftovers, a named shell's servers included. The
        shell is hung up by `hang_up`, which the caller calls once the answer is out: the answer
        waits for the command, not for the prompt's work (a theme's worker, a hook) nor for the
        shell's own end, which take a few milliseconds even when there is none.
        """
        before = len(self.killed)
        self.end_command()
        reported = {process.pid for process in self.killed}
        line_end = self._line_record()[1]
        self._end_span(line_end)
        spans = self._spans or ([(self._first_typed_pid, line_end)] if self._first_typed_pid is not None else [])
        reaper = Reaper(self.terminal, self.kernel, reported, typed=self._first_typed, spans=spans)
        stop = self.finish is not None and self.finish.stop
        # A stopped command whose line then ended (it recorded its end) has nothing left to start:
        # what the shell made after that is its prompt's (a theme's async workers), not the command's.
        settle = not stop or line_end is not None
        if not self.request.keep_background:
            self.killed += reaper.kill_session(settle=settle)
        self._reaper = reaper
        return self.killed[before:]

    @property
    def owes_hang_up(self) -> bool:
        """Closed, with the shell still to be hung up (`hang_up`), or one kept ahead to close."""
        return self._reaper is not None or self._unused is not None

    def close_unused(self) -> None:
        """Close the shell kept ahead that this run did not take, once an answer is out."""
        unused, self._unused = self._unused, None
        if unused is not None:
            unused.close()

    def hang_up(self, meanwhile: Callable[[], None] | None = None) -> None:
        """After `close`: hang the shell up as a closed terminal window does, once its own work is
        done (bounded), and end what of its own outlived that. Changes nothing in the result.
        `meanwhile`: see `Terminal.close`."""
        self.close_unused()
        reaper, self._reaper = self._reaper, None
        if reaper is None:
            return
        sweep = not self.request.keep_background
        if sweep:
            reaper.let_shell_work_end()
        self.terminal.close(hang_up=sweep, meanwhile=meanwhile)
        if sweep:
            reaper.sweep_after_hang_up()
        if self._kept is not None:
            self._kept.close(taken=True)  # its directory held this run's files

    def end_command(self) -> None:
        """Stop the command itself when its decision says so; the shell and its jobs stay, unless
        only ending the shell stops the command (see `Reaper.stop_foreground`)."""
        if self.finish is not None and self.finish.stop and not self._stopped:
            self._stopped = True
            reaper = Reaper(self.terminal, self.kernel, self._older_than(self._typed))
            stopped = reaper.stop_foreground(kind_of(self.shell.path).interrupt_ends_line, self._line_over)
            if stopped.shell_must_end:
                self.terminal.end_shell()
                self.shell_ended = True
            self.killed += stopped.killed

    def _write_heal_file(self) -> None:
        """The file the heal line sources, written again: it was removed as the last command started."""
        kind = kind_of(self.shell.path)
        if kind.live_lines is not None:
            kind.live_lines(replace(self._setup, shell_path=self.shell.path))
        self._secrets_on_disk = True

    def _line_over(self) -> bool:
        """Whether the typed line is over: the shell's prompt mark came (read from the terminal now),
        or the line left its status."""
        self._take_written_before_the_look()
        return self.tracker.prompt_drawn or self._status_in_file() is not None

    def _older_than(self, typed: int | None) -> set[int]:
        """The shell's own processes: those that were there before a command line was typed. They
        are ended quietly; only what the commands started is reported."""
        if typed is None:
            return set()
        return {p.pid for p in self.kernel.run_processes() if p.start < typed}

    def shell_alive(self) -> bool:
        """Whether the shell is still there to take another command."""
        return not self.terminal.exited()

    def result(self) -> Result:
        finish = self.finish
        assert finish is not None, "result() before the run finished"
        duration = self._clock() - self.started_at
        if finish.status is Status.ERROR and finish.strategy is None:
            return error_result(self.request.command, self.transcript.noted(finish.message) or "", self.shell)
        capture = self.tracker.capture
        return Result(
            status=finish.status,
            exit_code=finish.exit_code,
            strategy=finish.strategy,
            completion_reason=finish.reason,
            command=self.request.command,
            shell=self.shell,
            output=self.tracker.output_text(),
            output_truncated=capture.dropped > 0,
            output_dropped_bytes=capture.dropped,
            duration_s=duration,
            message=self.transcript.noted(finish.message),
            downgrades=tuple(self.downgrades),
            reinjected=tuple(self.reinjected),
            prompt=finish.prompt,
            alternate_screen=self.tracker.screen.used_alternate,
            secret=finish.secret,
            killed=tuple(self.killed),
            signal=self.signal_name,
        )

    def _status_in_file(self) -> int | None:
        """The exit status the typed line wrote, once it is there: the line is over."""
        return self._line_record()[0]

    def _line_record(self) -> tuple[int | None, int | None]:
        """What the typed line recorded at its end: its exit status, and the last process id the
        system had given out then (None where /proc did not say): what the shell started after
        it is its prompt's (see `close`). Once there, it is kept: the line writes it once."""
        if self._record is not None:
            return self._record
        try:
            fd = os.open(self._status_file, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None, None
        try:  # read twice a command: a file object would add four calls to the system each time
            text = os.pread(fd, 64, self._status_from).decode("ascii", "replace")
        except OSError:
            return None, None
        finally:
            os.close(fd)
        line, whole, _ = text.partition("\n")
        fields = line.split()
        if not fields or not fields[0].isdigit():
            return None, None
        record = int(fields[0]), int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
        if whole:
            self._record = record
        return record

    def _end_check(self) -> EndCheck:
        """What the kernel says as an end mark arrives (see `tracker.EndCheck`): the line's record,
        and whose the terminal is. The shell is the leader of its own process group. No foreground
        group at all (0) means the shell, the session's leader, is leaving: no program of the line
        can make that so, and the shell's exit (`exit 3`) sends its D on the way out."""
        status, ended_pid = self._line_record()
        front = self.terminal.foreground()
        if front is None:
            return EndCheck(status, None)
        return EndCheck(status, self._shells_front(front, ended_pid))

    def _shells_front(self, front: int, end: int | None) -> bool:
        """Whether the terminal's foreground is the shell's: its own group, none at all, or one its
        prompt made (see `_prompts_front`). A group whose leader is gone already is asked about
        again, for at most FRONT_SETTLE_S: a prompt hook's subshell that leaves a job behind in its
        group (bash's autojump, `(autojump --add "$(pwd)" &)`) ends at once, and the shell takes
        its terminal back a moment later, a longer one on a busy machine."""
        if front in (0, self.terminal.pid):
            return True  # the common case, with nothing more to read
        deadline, wrap = time.monotonic() + FRONT_SETTLE_S, pid_max()
        while front not in (0, self.terminal.pid):
            made = self._prompts_front(front, end, wrap)
            if made is not None or time.monotonic() >= deadline:
                return bool(made)
            time.sleep(0.001)
            now = self.terminal.foreground()
            front = front if now is None else now
        return True

    def _prompts_front(self, front: int, end: int | None, wrap: int | None) -> bool | None:
        """Whether the terminal's foreground is a group the shell made after the line's recorded end
        (`end`, the last pid given out then): the mark is read a moment after the shell sent it,
        and a prompt hook (autojump's, a theme's renderer) may hold the terminal by then. The
        command's own groups were all made before that end (`wrap`: where pids come round). None:
        made after it, by whom /proc cannot tell (see `group_made_by`)."""
        if wrap is None or end is None or not pid_after(front, end, wrap):
            return False
        return group_made_by(self.terminal.pid, front)

    def _note_the_shell(self) -> None:
        """What runs the first command line: the shell asked for, or the one its start-up files
        `exec`ed (`exec dash` in .bashrc). Only a change after this is a command replacing it."""
        self._shell_argv = self.kernel.argv()
        program = self._program = self.kernel.program()
        if program is not None and kind_of(program).name != self.shell.name and is_shell(kind_of(program)):
            self.shell = ShellInfo(name=kind_of(program).name, path=program)

    def _type_what_fits(self) -> None:
        if self._to_type:
            del self._to_type[: self.terminal.write(bytes(self._to_type), timeout=0.0)]

    def _clear_line_status(self) -> None:
        """The last line's status is no evidence for the next: each line appends its own, and only
        what comes after the file's present end is read.

        Appending rather than emptying the file: on ext4, emptying a file that holds data costs a
        flush (0.1 ms a command). It is emptied only once it has grown to STATUS_FILE_MAX, and
        never removed, so that it keeps the mode it was made with, whatever umask a command set.
        """
        self._record = None
        try:
            size = os.stat(self._status_file, follow_symlinks=False).st_size
        except FileNotFoundError:
            size = STATUS_FILE_MAX  # made now
        except OSError:
            return
        if size < STATUS_FILE_MAX:
            self._status_from = size
            return
        try:
            fd = os.open(self._status_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return  # the line still writes it, or nothing does and the line is judged without it
        os.close(fd)
        self._status_from = 0

    def _consume(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.transcript.write(chunk)
        self._feed(self._parser.feed(chunk))
        asked = self._questions.find(chunk)
        if asked and self._raw() and not self.request.interactive:  # a person's terminal answers for itself
            cursor = self.tracker.screen.cursor()
            self.terminal.write(b"".join(answer(kind, cursor) for kind in asked), timeout=0.0)

    def _raw(self) -> bool:
        """Whether the terminal is in raw (non-canonical) mode, where a question's answer is read
        by the program that asked (see `queries`)."""
        return not self._local_modes() & termios.ICANON

    def _echoes(self) -> bool:
        """Whether the terminal shows what is typed (echo off: a password is being read)."""
        return bool(self._local_modes() & termios.ECHO)

    def _local_modes(self) -> int:
        try:
            return int(termios.tcgetattr(self.terminal.fd)[3])
        except (OSError, termios.error):
            return termios.ICANON  # unknown: the cautious answer to both questions

    def _consume_tail(self) -> None:
        self._feed(self._parser.flush())

    def _feed(self, items: Iterable[bytes | Osc]) -> None:
        """Parsed output to the tracker, in order, and to the audience (the command's, marked so)."""
        now = self._clock()
        for item in items:
            if isinstance(item, bytes):
                if self._audience is not None:
                    self._audience.output(self._as_typed(item), self.tracker.phase is Phase.RUNNING)
                self._act(self.tracker.feed(item, now))
            elif item.body.startswith(END_MARK) or (item.body.startswith(PROMPT_MARKS) and
                                                    self.tracker.phase is Phase.RUNNING):
                self._act(self.tracker.feed(item, now, self._end_check()))
            else:
                typed = self.tracker.phase is Phase.TYPED
                self._act(self.tracker.feed(item, now))
                if typed and self.tracker.phase is Phase.RUNNING:
                    self._note_start(item)

    def _as_typed(self, data: bytes) -> bytes:
        """The shell's echo of the line safe-run typed, as the command that line runs: a recording
        shows what ran where the shell showed ` __sr_c`. Once a command, and only where the echo
        came whole (a line editor that colours what is typed echoes something else)."""
        echo = self._echo
        if echo is None or self.tracker.phase is not Phase.TYPED or echo not in data:
            return data
        self._echo = None
        return data.replace(echo, as_typed(self.request.command), 1)

    def _note_start(self, start_mark: Osc) -> None:
        """C began a command: the shell has read its integration, whose files are removed now (see
        `shells.SECRET_FILES`). The last pid each C carries (given out as its command started)
        begins that command's span: it tells the shell's own processes (its start-up's, its
        preexec hooks', its prompts' between commands) from the commands'."""
        if self._secrets_on_disk:
            self._secrets_on_disk = False
            shells.forget_secrets(self._setup.workdir)
        fields = start_mark.body.split(b";")
        if len(fields) > 3 and fields[2].isdigit():
            started = int(fields[2])
            self._end_span(started)  # where the last line's end went unrecorded
            self._spans.append((started, None))

    def _act(self, actions: list[Action]) -> None:
        for action in actions:
            if isinstance(action, Output):
                self.waiting = None
                if self._on_output is not None:
                    self._on_output(action.data)
            elif isinstance(action, Send):
                if self._typed is None:
                    self._typed = boot_ticks()
                    if self._first_typed is None:
                        self._first_typed, self._first_typed_pid = self._typed, last_pid()
                if action.command_line:
                    self._clear_line_status()
                    # its echo, which the audience sees as the command (see `_as_typed`)
                    integrated = action.data == self.tracker.config.lines.integrated
                    self._echo = action.data.rstrip(b"\r") if integrated else None
                    if action.data == self.tracker.config.lines.heal:
                        self._write_heal_file()
                    if self._shell_argv is None:
                        self._note_the_shell()
                self._to_type += action.data
                self._type_what_fits()
            elif isinstance(action, Downgraded):
                self.downgrades.append(action.downgrade)
            elif isinstance(action, Waiting):
                self.waiting = action.decision
            elif isinstance(action, Reinjected):
                self.reinjected.append(Reinjection(action.reason, action.at_s))
            elif self.finish is None:
                self.finish = action


class Follower(Watcher, Protocol):
    """What follows a foreground run besides the loop (a display, `display.shown.Shown`): made once
    the run has started, and stopped however the run ends."""

    def stop(self) -> None: ...


def execute(
    request: RunRequest,
    clock: Callable[[], float] = time.monotonic,
    wakeup: Wakeup | None = None,
    on_output: Callable[[bytes], None] | None = None,
    follower: Callable[[Run, Callable[[], float]], Follower] | None = None,
    answer: Callable[[Result], None] | None = None,
    later: Callable[[Callable[[], None]], None] | None = None,
) -> Result:
    """Run one command in the foreground and return its result; never raises for the command's sake.

    A stop request on `wakeup` (the command line's SIGINT, SIGTERM and SIGHUP, or any thread's
    `trigger`) stops the command and still produces a result; one pending before this call means
    the command is not started at all. Without a `wakeup` nothing can ask for a stop, and no
    signal handler is installed either way: this runs in any thread. A display follows the run
    as it goes (live output, a status line, jsonl events): it takes the output (`on_output`) and a
    turn between steps (the `follower` made for the run, which is stopped, and the terminal left
    as it was, however the run ends). Without one (JSON), the loop does no work per chunk of
    output. The engine knows displays only by these two: what shows a run is the front end's.
    `answer` takes the result as soon as it is known, before the shell is hung up once its own
    work after the command is done (`Run.hang_up`): the caller's answer does not wait for that.
    The shell is hung up, and its private directory removed, by `later` where one is given (a
    library's thread: its caller has the result at once), else before returning.
    """
    with ExitStack() as stack:
        result, run = _to_the_end(request, clock, wakeup, on_output, follower, stack)
        if answer is not None:
            answer(result)
        if later is not None and run is not None and run.owes_hang_up:
            rest = stack.pop_all()
            try:
                later(rest.close)
            except RuntimeError:  # no thread to be had: done here
                rest.close()
        return result  # and then the shell is hung up (`stack`), and its private directory goes


def _to_the_end(
    request: RunRequest, clock: Callable[[], float], wakeup: Wakeup | None, on_output: Callable[[bytes], None] | None,
    follower: Callable[[Run, Callable[[], float]], Follower] | None, stack: ExitStack,
) -> tuple[Result, Run | None]:
    """`execute`'s run, up to its result (and the run, once started): what is still to be done
    then is left on `stack`."""
    if wakeup is None:
        wakeup = Wakeup()
        stack.callback(wakeup.close)
    try:
        held = HeldDirectory.make()
    except OSError as exc:
        where = os.environ.get("TMPDIR") or tempfile.gettempdir()
        message = f"cannot create a private directory in {where}: {exc.strerror or exc}"
        return error_result(request.command, message), None
    stack.callback(held.remove)
    workdir = held.path
    if wakeup.pending:
        return not_started(request.command, signal.Signals(wakeup.pending[0]).name), None
    try:
        run = Run(request, workdir, clock, on_output)
    except (shells.ShellNotFound, TerminalError, RunFailed) as exc:
        return error_result(request.command, str(exc)), None
    except CommandRefused as refused:
        return refused.result, None
    except OSError as exc:  # the private directory's file system is full, or refuses writes
        message = f"cannot prepare the run in {workdir.parent}: {exc.strerror or exc}"
        return error_result(request.command, message), None
    stack.callback(run.hang_up, held.remove)  # after the answer; the private directory goes as the shell does
    shown = None if follower is None else follower(run, clock)
    try:
        follow(run, wakeup, shown)
    finally:
        try:
            if shown is not None:
                shown.stop()
        finally:
            run.close()
    return run.result(), run


def _config(nonce: str, lines: Lines, request: RunRequest, kernel_view: bool, exit_word: bytes = b"") -> Config:
    return Config(
        nonce=nonce,
        lines=lines,
        allow_downgrade=request.strategy == "auto",
        hold_on_input=request.hold_on_input,
        exit_word=exit_word,
        kernel_view=kernel_view,
    )


def _capture(request: RunRequest) -> HeadTail:
    rows, columns = request.size
    return HeadTail(request.max_output // 2, request.max_output - request.max_output // 2, screen=(columns, rows))


def _first_strategy(requested: str, integrated: bool) -> Strategy:
    if not integrated:
        return Strategy.NONE
    return Strategy.BASIC if requested == "basic" else Strategy.RICH


def _signalled(target: int | None, signum: int, send: Callable[[int, int], None]) -> None:
    if target is not None:
        try:
            send(target, signum)
        except OSError:
            pass  # gone meanwhile


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def _overwrite(path: Path, data: bytes) -> None:
    """Write `data` over the file's old contents, then cut what is left of them: truncating first
    (O_TRUNC) costs a flush of the old data on ext4, ten times the write itself."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)

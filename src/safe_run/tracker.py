"""Following one command through the shell, from evidence to a decision.

Pure: the run loop feeds parsed output and marks, kernel observations, the shell's exit, signals
and the current time; the tracker answers with actions. Nothing here reads a clock or a file
descriptor, so every order of events can be tested in microseconds.

The evidence, strongest first:
  rich   this run's nonce-marked C and D frame the command and carry its exit code;
  basic  a nonce-marked prompt comes back but D did not: the exit code is asked for afterwards;
  none   no integration: the line typed brackets the command with nonce-marked C and D itself;
  and under all three, the typed line's own end: every line leaves the command's exit status in
  a file once the command is over (`status_written`), whatever the command did to the hooks.
The run is called completed only on such evidence. Timers alone never complete a run: when they
fire they stop the command and say so (status timeout, with the timer as the reason).

What is never typed into. The shell's own `read -n1 -s`, `read -e`, `select`, zsh's `read -k` and
`vared` and every fish `read` read the terminal exactly as the shell's prompt does: the kernel, the
terminal's mode and the screen cannot tell them apart. So nothing is typed after the command
unless a trusted prompt mark (A or B with the nonce) says the shell draws its prompt. A shell that
reads its terminal while its typed line has left no exit status is still inside that line: its
read is the command's own, an input wait. A line's status is there even when the command broke
the integration (cleared PROMPT_COMMAND, a new PS1, output sent elsewhere), so that end is still
seen without asking.

Input waits follow the rule in `kernel`: every task of the foreground waits on a key or on the
others, and the whole foreground stayed silent (no output, no CPU) for the idle window, and for
longer than the timeout of any keyboard poll among them. A stopped foreground or shell is an answer
of its own; a foreground the kernel cannot see into (setuid programs) is an input wait only with
a question on the cursor line.

One tracker follows every command of one shell: after a `Finish`, `start_next_cycle` takes the
next. Before typing it, the tracker knows whether the last command left the integration whole
(its D came, then the next prompt's B); if not, the command's line first loads the integration
into the live shell again (`Lines.heal`, which announces itself with an R mark), and a shell
replaced by another (`exec zsh`) gets that shell's own lines.

Marks without this run's nonce (a command printing `ESC ] 633 ; D ; 0 BEL`, a prompt theme's own
133 sequences) are escape sequences in the output and are dropped with the other escapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from .evidence import Observation
from .request import Timers
from .output import HeadTail
from .result import Downgrade, Reason, Status, Strategy
from .screen import ScreenTail, continuation_prompt, input_prompt, looks_like_prompt
from .sequences import Mark, Osc, decode_mark

# Kept from the shell's start-up so that a shell that dies early can say why.
STARTUP_TAIL_BYTES = 4096


class Phase(Enum):
    STARTING = "starting"  # waiting for the shell to be ready for the command
    TYPED = "typed"  # the run line was sent, waiting for C
    RUNNING = "running"  # between C and the end: output belongs to the command
    FETCHING = "fetching"  # the command ended without D; its exit code was asked for
    DONE = "done"  # this command is decided; the shell may take the next one (`start_next_cycle`)


@dataclass(frozen=True)
class Lines:
    """What to type: the command under integration, without it, and the exit-status question.

    `heal` runs the command after loading the integration into the live shell again, for a shell
    whose last command broke it; it announces itself with an R mark before C.
    """

    integrated: bytes
    fallback: bytes
    status_query: bytes
    heal: bytes = b""


@dataclass(frozen=True)
class Config:
    """What stays the same for every command of one shell (replaced only when the shell is)."""

    nonce: str
    lines: Lines
    allow_downgrade: bool = True
    # In a session an input wait is reported with `Waiting` and the command goes on, to be answered.
    hold_on_input: bool = False


@dataclass(frozen=True)
class Send:
    """Type these bytes into the terminal. `command_line`: the line that runs the next command, whose
    end the status file will tell, so the loop empties that file first."""

    data: bytes
    command_line: bool = False


@dataclass(frozen=True)
class Finish:
    """The run is decided. `stop` asks the loop to end the foreground command first."""

    status: Status
    reason: Reason
    exit_code: int | None
    strategy: Strategy | None
    message: str | None = None
    stop: bool = False
    prompt: str | None = None


@dataclass(frozen=True)
class Output:
    """Bytes of the command's own output (not the shell's prompt or echo)."""

    data: bytes


@dataclass(frozen=True)
class Downgraded:
    """The command is now followed with less evidence than it started with."""

    downgrade: Downgrade


@dataclass(frozen=True)
class Waiting:
    """A held input wait (sessions): the command goes on and waits for an answer; any output ends it."""

    wait: Finish


@dataclass(frozen=True)
class Reinjected:
    """The integration was loaded into the live shell again before this command, and why."""

    reason: str
    at_s: float


Action = Send | Finish | Output | Downgraded | Waiting | Reinjected

# What a reader is told when the end was not the integration's own D (or the shell's exit).
FALLBACK_ENDS = {
    Reason.SENTINEL: "no shell integration: the end and the exit code came from a marked status echo "
    "typed after the command",
    Reason.PROMPT_IDLE: "the prompt came back without the command-finished mark; the exit code was asked "
    "for afterwards",
    Reason.FOREGROUND_RETURNED: "the command replaced the shell by another shell, which the kernel shows "
    "waiting in the foreground; nothing is typed into a shell whose prompt was never seen",
}


@dataclass
class Clocks:
    """When things last happened, in the caller's clock."""

    started: float
    last_output: float
    typed: float | None = None
    fetch_sent: float | None = None
    output_since_typed: bool = False
    answered: float | None = None
    last_activity: float | None = None  # the foreground's CPU time last changed
    activity: tuple[tuple[int, int], ...] = ()
    ticked: float | None = None  # the last look; the next one is due a fixed time after it


@dataclass
class CommandTracker:
    """Decides when the command ran, when it ended, how, and with which exit code."""

    config: Config
    capture: HeadTail
    screen: ScreenTail
    strategy: Strategy
    integrated: bool
    timers: Timers
    started_integrated: bool = False
    phase: Phase = Phase.STARTING
    startup: HeadTail = field(default_factory=lambda: HeadTail(0, STARTUP_TAIL_BYTES))
    clocks: Clocks | None = None
    ready_prompt: str = ""
    _prompt_after: str = ""  # a prompt seen only on the screen, so it went into the capture
    _status_written: int | None = None  # the exit status the typed line wrote to its file
    _pending: list[Action] = field(default_factory=list)  # effects decided on the way, returned next
    # Between commands: the shell's next prompt mark came, and whether the integration held.
    _cycle: int = 1
    _first_strategy: Strategy = Strategy.RICH
    _prompt_ready: bool = False
    _broken: str | None = None  # why the integration must be loaded again before the next command
    _healing: str | None = None  # the reason given to the heal line typed for this command
    _lost: str | None = None  # why a shell that started with integration has none any more

    @property
    def prompt_drawn(self) -> bool:
        """The shell's trusted prompt mark came after the last command line: it waits for the next."""
        return self._prompt_ready

    def output_text(self) -> str:
        """The command's output, without a prompt that only the screen told apart from it."""
        text = self.capture.text()
        if self._prompt_after and text.endswith(self._prompt_after):
            return text[: -len(self._prompt_after)]
        return text

    # ---- inputs -------------------------------------------------------------------------------

    @property
    def nonce(self) -> str:
        return self.config.nonce

    def start(self, now: float) -> None:
        self.clocks = Clocks(started=now, last_output=now)
        self.started_integrated = self.integrated
        self._first_strategy = self.strategy

    def start_next_cycle(
        self, now: float, timers: Timers, capture: HeadTail, config: Config | None = None,
        replaced_by: str | None = None,
    ) -> list[Action]:
        """Follow the next command in the same shell, once the last one is decided.

        A new `config` means the shell was replaced (`exec zsh`): its own lines, and its own
        integration to load. A shell whose last command left the integration broken gets it
        back before this command runs; one whose prompt has not come back yet is waited for.
        """
        assert self.phase is Phase.DONE, "start_next_cycle() before the last command was decided"
        was_integrated = self.integrated
        if config is not None:
            self.config = config
            self.integrated = bool(config.lines.heal)
            self._broken = f"the shell was replaced by {replaced_by or 'another shell'}" if self.integrated else None
        self._cycle += 1
        self.timers = timers
        self.capture = capture
        self.phase = Phase.STARTING
        self._prompt_after = ""
        self._status_written = None
        self._healing = None
        self.strategy = self._first_strategy if self.integrated else Strategy.NONE
        self.started_integrated = self.integrated
        self.clocks = Clocks(started=now, last_output=now)
        if not self.integrated:
            if was_integrated and self._lost is None:
                self._lost = f"the shell was replaced by {replaced_by or 'a shell'}, which has no integration"
            if self._lost is not None:
                # Every later command is followed without integration, and each says why.
                lost = Downgrade(self._first_strategy.value, Strategy.NONE.value, self._lost, 0.0)
                self._pending.append(Downgraded(lost))
            return self._flush([])  # the fallback line is typed when the kernel shows the shell waiting
        if self._broken is not None:
            return self._heal(now, self._broken)
        if self._prompt_ready:
            return self._type_command(now, self.config.lines.integrated)
        return []

    def shell_replaced(self, now: float, config: Config, by: str) -> list[Action]:
        """The command replaced the shell (`exec dash`), and the new one waits on the terminal: the
        command has ended. Whether the new shell waits at its prompt or in a `read` of its start-up
        files is not known, so nothing is asked of it: the exit code stays unknown."""
        if self.phase is not Phase.RUNNING:
            return []
        self.config = config
        if self.strategy is not Strategy.NONE:
            why = f"the shell was replaced by {by} without any integration mark"
            if not self.config.allow_downgrade:
                return [self._finish_lost(why)]
            self._downgrade(Strategy.NONE, why, now)
        self.integrated = bool(config.lines.heal)
        if not self.integrated and self._first_strategy is not Strategy.NONE:
            self._lost = f"the shell was replaced by {by}, which has no integration"
        self._prompt_after = self.screen.before_cursor()
        return self._flush(self._finish_completed(Reason.FOREGROUND_RETURNED, None))

    def feed(self, item: bytes | Osc, now: float) -> list[Action]:
        if isinstance(item, bytes):
            return self._on_output(item, now)
        mark = decode_mark(item)
        if mark is None or not self._trusted(mark):
            return []
        return self._flush(self._on_mark(mark, now))

    def tick(self, now: float, seen: Observation | None) -> list[Action]:
        """Time passed, and here is what the kernel sees now (None where it cannot tell)."""
        if self.phase is Phase.DONE:
            return []
        clocks = self._clocks()
        clocks.ticked = now
        if self.timers.timeout is not None and now - clocks.started >= self.timers.timeout:
            return self._finish_timeout()
        if self.phase is Phase.STARTING:
            return self._flush(self._tick_starting(now, seen))
        if self.phase is Phase.FETCHING:
            return self._tick_fetching(now)
        return self._flush(self._tick_command(now, seen))

    def shell_exited(self, exit_code: int) -> Finish:
        """The shell is gone: once the command started, that is the command's own end."""
        before = self.phase
        self.phase = Phase.DONE
        if before in (Phase.RUNNING, Phase.FETCHING):
            return Finish(Status.COMPLETED, Reason.SHELL_EXITED, exit_code, self.strategy)
        last_words = self.startup.text().strip()
        detail = f": {last_words.splitlines()[-1]}" if last_words else ""
        when = "before the command started" if before is Phase.STARTING else "before it ran the command"
        return Finish(Status.ERROR, Reason.ERROR, None, None, f"the shell exited with status {exit_code} {when}{detail}")

    def interrupted(self, signal_name: str) -> Finish:
        """safe-run itself was asked to stop."""
        self.phase = Phase.DONE
        return Finish(
            Status.INTERRUPTED, Reason.INTERRUPTED, None, self.strategy,
            f"safe-run received {signal_name} and stopped the command; the output so far is included",
            stop=True,
        )

    def status_written(self, exit_code: int) -> None:
        """The typed line is over and left the command's exit status in its file.

        Taken once the output has been quiet for the idle window, so that the terminal's D, sent
        just after, wins when it arrives: the file decides only when the command broke the
        integration or sent the marks elsewhere. Until it is there, the line still runs.
        """
        if self.phase in (Phase.TYPED, Phase.RUNNING):
            self._status_written = exit_code

    def answered(self, now: float) -> None:
        """Someone typed into a held input wait: whatever waits next is a new wait."""
        self._clocks().answered = now

    def stop_requested(self, why: str | None = None) -> Finish:
        """The session's owner asked to end the command (or its holder must: `why`)."""
        self.phase = Phase.DONE
        return Finish(
            Status.INTERRUPTED, Reason.STOPPED, None, self.strategy,
            f"{'stopped: ' + why if why else 'stopped by `safe-run stop`'}; the output so far is included", stop=True,
        )

    def unattended(self, wait: Finish, after: float) -> Finish:
        """A held input wait (`Waiting`) that nobody asked about for `after` seconds ends as an input
        wait outside a session does: stopped, and said why."""
        self.phase = Phase.DONE
        message = f"{wait.message}; nobody asked about it for {after:g} s while it waited for input, so it was stopped"
        return replace(wait, stop=True, message=message)

    def next_deadline(self, now: float) -> float | None:
        """When the loop must call `tick` even if nothing arrives."""
        if self.phase is Phase.DONE:
            return None
        clocks = self._clocks()
        quiet_for = now - clocks.last_output
        # Look often while a wait may have just begun, then less: idle CPU stays near zero. The
        # next look is counted from the last one, so a loop woken more often than this (a status
        # line's spinner, a caller polling) still looks on time.
        poll = 0.1 if quiet_for < 2 else 0.25
        deadline = (clocks.started if clocks.ticked is None else clocks.ticked) + poll
        if self._settling_after_answer(now):
            deadline = min(deadline, clocks.last_output + self.timers.answer)
        if self.timers.timeout is not None:
            deadline = min(deadline, clocks.started + self.timers.timeout)
        return deadline

    # ---- marks --------------------------------------------------------------------------------

    def _trusted(self, mark: Mark) -> bool:
        """This run's nonce; its case may have been changed on the way (`stty olcuc`)."""
        return mark.family == 633 and bool(mark.args) and mark.args[-1].lower() == self.nonce.lower()

    def _on_mark(self, mark: Mark, now: float) -> list[Action]:
        if self.phase is Phase.DONE:
            self._between_commands(mark)
            return []
        if self.phase is Phase.STARTING and mark.kind == "B":
            if self._broken is not None:
                return self._heal(now, self._broken)
            return self._type_command(now, self.config.lines.integrated)
        if self.phase is Phase.TYPED and mark.kind == "R":
            why = self._healing or "the integration's functions were gone when the command was typed"
            self._broken = None
            return [Reinjected(why, round(now - self._clocks().started, 3))]
        if self.phase is Phase.TYPED and mark.kind == "C":
            self.phase = Phase.RUNNING
            self.screen.reset()
            return []
        if self.phase is Phase.RUNNING:
            return self._mark_while_running(mark, now)
        if self.phase is Phase.FETCHING and mark.kind == "D":
            return self._finish_completed(Reason.PROMPT_IDLE, _exit_code(mark.args[:-1]))
        return []

    def _between_commands(self, mark: Mark) -> None:
        """The prompt after a command: its B says the shell is ready for the next one."""
        if mark.kind == "B":
            self._prompt_ready = True
        elif mark.kind == "A":
            self._prompt_ready = False

    def _mark_while_running(self, mark: Mark, now: float) -> list[Action]:
        if mark.kind == "D" and (self.strategy is not Strategy.BASIC or not self.integrated):
            reason = Reason.SHELL_INTEGRATION if self.integrated else Reason.SENTINEL
            return self._finish_completed(reason, _exit_code(mark.args[:-1]))
        if mark.kind in ("A", "B"):
            # The prompt is back: whatever follows is the shell's, not the command's.
            if mark.kind == "B":
                self._prompt_ready = True
            if self.strategy is Strategy.RICH:
                if not self.config.allow_downgrade:
                    return [self._finish_lost("the prompt came back without the command-finished mark")]
                self._downgrade(Strategy.BASIC, "the prompt came back without the command-finished mark", now)
            return self._ask_exit_status(now)
        return []

    # ---- output -------------------------------------------------------------------------------

    def _on_output(self, data: bytes, now: float) -> list[Action]:
        clocks = self._clocks()
        clocks.last_output = now
        self.screen.feed(data)
        if clocks.typed is not None:
            clocks.output_since_typed = True
        if self.phase is Phase.RUNNING:
            self.capture.write(data)
            return [Output(data)]
        if self.phase is Phase.STARTING and self._cycle == 1:
            self.startup.write(data)
        return []

    # ---- time and the kernel ------------------------------------------------------------------

    def _tick_starting(self, now: float, seen: Observation | None) -> list[Action]:
        clocks = self._clocks()
        # An integrated shell that waits without having sent its prompt mark may just not have
        # been read yet: give it the idle time. Without integration, waiting is all there is.
        settle = self.timers.idle if self.integrated else min(self.timers.idle, 0.05)
        quiet = now - clocks.last_output >= settle
        waiting = seen is not None and seen.shell_in_foreground and seen.waiting_for_terminal
        if seen is not None and quiet and waiting:
            return self._start_without_integration(now, "the shell waits at its prompt without integration marks")
        if seen is None and quiet and looks_like_prompt(self.screen.before_cursor()):
            return self._start_without_integration(now, "a prompt is on the screen without integration marks")
        if now - clocks.started < self.timers.activation:
            return []
        if seen is not None:
            self.phase = Phase.DONE
            return [Finish(Status.ERROR, Reason.ERROR, None, None,
                           f"the shell did not become ready within {self.timers.activation:g} s "
                           "(its start-up files may be waiting or hanging)", stop=True)]
        return self._start_without_integration(now, f"nothing showed a prompt within {self.timers.activation:g} s")

    def _tick_command(self, now: float, seen: Observation | None) -> list[Action]:
        clocks = self._clocks()
        self._note_activity(now, seen)
        quiet_for = now - clocks.last_output
        answered = self.config.hold_on_input and clocks.answered is not None and seen is not None
        if quiet_for < (min(self.timers.idle, self.timers.answer) if answered else self.timers.idle):
            return []
        if self._status_written is not None:
            return self._finish_by_status_file(now, self._status_written)
        line = self.screen.before_cursor()
        if self.phase is Phase.TYPED:
            return self._judge_typed(line, seen)
        if seen is not None:
            return self._judge_by_kernel(now, seen, line, answered)
        return self._judge_by_screen(now, line, quiet_for)

    def _note_activity(self, now: float, seen: Observation | None) -> None:
        """The foreground's CPU time changed since the last look: it works, whatever it waits on now."""
        clocks = self._clocks()
        if seen is None:
            return
        if clocks.last_activity is None:
            # The first look has nothing to compare with: the output's clock is all there is.
            clocks.last_activity = clocks.last_output
        elif seen.activity != clocks.activity:
            clocks.last_activity = now
        clocks.activity = seen.activity

    def _idle_for(self, now: float) -> float:
        """How long neither output nor CPU time showed the foreground working."""
        clocks = self._clocks()
        last = max(clocks.last_output, clocks.last_activity or clocks.last_output)
        return now - last

    def _judge_typed(self, line: str, seen: Observation | None) -> list[Action]:
        """The line was typed but the command never announced its start."""
        at_prompt = seen is None or (seen.shell_in_foreground and seen.waiting_for_terminal)
        if not at_prompt:
            return []
        construct = continuation_prompt(line)
        if construct is not None:
            return [self._finish_continuation(construct, line)]
        if seen is None and not self._shows_prompt(line):
            return []
        self.phase = Phase.DONE
        shown = f"; the screen shows {line.strip()!r}" if line.strip() else ""
        message = f"the shell did not run the command line it was given{shown}"
        return [Finish(Status.ERROR, Reason.ERROR, None, self.strategy, message, stop=True, prompt=line)]

    def _judge_by_kernel(self, now: float, seen: Observation, line: str, answered: bool) -> list[Action]:
        if seen.stopped is not None:
            return self._finish_stopped(seen.stopped, seen.shell_in_foreground)
        window = min(self.timers.idle, self.timers.answer) if answered else self.timers.idle
        if seen.wake_in is not None:
            window = max(window, seen.wake_in + self.timers.idle)
        if self._idle_for(now) < window:
            return []
        if seen.hidden:
            return self._judge_hidden(now, seen, line)
        if not seen.waiting_for_terminal:
            return []  # working, or waiting on the world outside: never "done" for being quiet
        # The shell itself reading, with its line's status not written, is the command's own read.
        return self._finish_input(None if seen.shell_in_foreground else seen.reader or seen.foreground_command)

    def _judge_hidden(self, now: float, seen: Observation, line: str) -> list[Action]:
        """The kernel hides what part of the foreground waits on (a setuid program): a question at
        the cursor of a silent, idle foreground is taken as its prompt; otherwise the timers decide,
        counting from the last output or CPU time, so that a hidden program that works (dpkg under
        sudo) is never stopped for being quiet."""
        if input_prompt(line):
            return self._finish_input(seen.foreground_command)
        quiet_for = self._idle_for(now)
        if not self._clocks().output_since_typed and quiet_for >= self.timers.no_output:
            return [self._finish_unknown(Reason.NO_OUTPUT_FALLBACK, self.timers.no_output, "no output at all")]
        if quiet_for >= self.timers.silence:
            return [self._finish_unknown(Reason.EXECUTING_IDLE_FALLBACK, self.timers.silence, "no output")]
        return []

    def _judge_by_screen(self, now: float, line: str, quiet_for: float) -> list[Action]:
        clocks = self._clocks()
        # The typed line ends with its status file (and its own end mark without integration), none
        # of which came: the command still runs, and a prompt on the screen is its own.
        if self.screen.alternate or input_prompt(line) or self._shows_prompt(line):
            return self._finish_input(None)
        if not clocks.output_since_typed and quiet_for >= self.timers.no_output:
            return [self._finish_unknown(Reason.NO_OUTPUT_FALLBACK, self.timers.no_output, "no output at all")]
        if quiet_for >= self.timers.silence:
            return [self._finish_unknown(Reason.EXECUTING_IDLE_FALLBACK, self.timers.silence, "no output")]
        return []

    def _tick_fetching(self, now: float) -> list[Action]:
        clocks = self._clocks()
        if clocks.fetch_sent is not None and now - clocks.fetch_sent >= self.timers.fetch:
            return self._finish_completed(Reason.PROMPT_IDLE, None)
        return []

    def _settling_after_answer(self, now: float) -> bool:
        clocks = self._clocks()
        return self.config.hold_on_input and clocks.answered is not None and now - clocks.last_output < self.timers.answer

    def _shows_prompt(self, line: str) -> bool:
        """Whether the shell itself is asking for the next command.

        Typing the exit-status question into a `read` would feed the command a false answer, so
        after a start with integration only the very prompt seen at the start counts (a builtin
        `read` shows no prompt or its own: fish's is `read> `). Shells that never had
        integration have no such reference beyond the start, so a prompt shape counts there.
        """
        if self.ready_prompt and line.rstrip() == self.ready_prompt.rstrip():
            return True
        return not self.started_integrated and looks_like_prompt(line) and not input_prompt(line)

    # ---- transitions --------------------------------------------------------------------------

    def _type_command(self, now: float, line: bytes) -> list[Action]:
        clocks = self._clocks()
        self.ready_prompt = self.screen.before_cursor()
        self.phase = Phase.TYPED
        self._prompt_ready = False
        clocks.typed = now
        clocks.output_since_typed = False
        return [Send(line, command_line=True)]

    def _heal(self, now: float, why: str) -> list[Action]:
        """Load the integration into the live shell again, in the same line that runs the command."""
        self._healing = why
        return self._type_command(now, self.config.lines.heal)

    def _start_without_integration(self, now: float, why: str) -> list[Action]:
        if self.integrated and self._cycle > 1:
            return self._heal(now, f"no prompt mark came back after the last command ({why})")
        if self.integrated:
            if not self.config.allow_downgrade:
                self.phase = Phase.DONE
                return [self._finish_lost(f"shell integration did not start: {why}")]
            self._downgrade(Strategy.NONE, f"shell integration did not start: {why}", now)
            self.integrated = False
        return self._type_command(now, self.config.lines.fallback)

    def _ask_exit_status(self, now: float) -> list[Action]:
        """Only right after a trusted prompt mark: the shell itself reads the question."""
        clocks = self._clocks()
        self.phase = Phase.FETCHING
        clocks.fetch_sent = now
        return [Send(self.config.lines.status_query)]

    def _downgrade(self, to: Strategy, reason: str, now: float) -> None:
        at = round(now - self._clocks().started, 3)
        self._pending.append(Downgraded(Downgrade(self.strategy.value, to.value, reason, at)))
        self.strategy = to
        self._broken = reason

    def _flush(self, actions: list[Action]) -> list[Action]:
        """The effects decided on the way first (a downgrade before the line it leads to)."""
        if not self._pending:
            return actions
        pending, self._pending = self._pending, []
        return [*pending, *actions]

    # ---- results ------------------------------------------------------------------------------

    def _finish_completed(self, reason: Reason, exit_code: int | None) -> list[Action]:
        self.phase = Phase.DONE
        message = FALLBACK_ENDS.get(reason)
        if exit_code is None:
            message = f"{message or 'the command ended'}, but its exit code could not be recovered"
        return [Finish(Status.COMPLETED, reason, exit_code, self.strategy, message)]

    def _finish_by_status_file(self, now: float, exit_code: int) -> list[Action]:
        if self.strategy is not Strategy.NONE:
            why = "the command line ended without the command-finished mark (the command may have removed the shell's hooks)"
            if not self.config.allow_downgrade:
                return [self._finish_lost(why)]
            self._downgrade(Strategy.NONE, why, now)
        self.phase = Phase.DONE
        self._prompt_after = self.screen.before_cursor()  # drawn while the command was still followed
        message = ("the command ended but its end mark never reached the terminal (it may have sent the "
                   "shell's output elsewhere or removed its hooks); the exit code came from the status the typed "
                   "line wrote to a file")
        return self._flush([Finish(Status.COMPLETED, Reason.SENTINEL, exit_code, self.strategy, message)])

    def _finish_stopped(self, who: str, shell: bool) -> list[Action]:
        """A stopped process goes nowhere until someone continues it, and continuing it would run
        what the command meant to hold back: so it is reported and ended, never left hanging."""
        self.phase = Phase.DONE
        what = "the shell itself" if shell else who
        message = (f"{what} was stopped by a signal (kill -STOP, Ctrl-Z or suspend) and cannot go on by "
                   "itself; it was ended, output so far included")
        return [Finish(Status.INTERRUPTED, Reason.PROCESS_STOPPED, None, self.strategy, message, stop=True)]

    def _finish_input(self, program: str | None) -> list[Action]:
        """An input wait: the end of a run, or in a session a state to report while it goes on."""
        wait = self._input_wait(program)
        if self.config.hold_on_input:
            return [Waiting(wait)]
        self.phase = Phase.DONE
        return [wait]

    def _input_wait(self, program: str | None) -> Finish:
        line = self.screen.cursor_line()
        alternate = self.screen.used_alternate
        reason = Reason.ALTERNATE_SCREEN if alternate else Reason.INPUT_WAIT
        who = program or "the command"
        shown = f" at {line.strip()!r}" if line.strip() else ""
        what = "opened a full-screen program" if alternate else "is waiting for input"
        if self.config.hold_on_input:
            return Finish(Status.INPUT_REQUIRED, reason, None, self.strategy, f"{who} {what}{shown}", prompt=line)
        message = (f"{who} {what}{shown}; it was stopped. safe-run gives commands no input: "
                   "pass answers in the command (flags such as --yes, a pipe, a here-document) and retry")
        return Finish(Status.INPUT_REQUIRED, reason, None, self.strategy, message, stop=True, prompt=line)

    def _finish_continuation(self, construct: str, line: str) -> Finish:
        self.phase = Phase.DONE
        message = (f"syntax error: the shell is waiting for the rest of {construct} ({line.strip()!r}); "
                   "nothing was run. Fix the quoting and retry")
        return Finish(Status.SYNTAX_ERROR, Reason.CONTINUATION_PROMPT, None, self.strategy, message, stop=True,
                      prompt=line)

    def _finish_unknown(self, reason: Reason, after: float, what: str) -> Finish:
        self.phase = Phase.DONE
        message = (f"{what} for {after:g} s and no way to tell whether the command still runs, so it was "
                   "stopped; raise the limit if it needs longer")
        return Finish(Status.TIMEOUT, reason, None, self.strategy, message, stop=True)

    def _finish_timeout(self) -> list[Action]:
        self.phase = Phase.DONE
        limit = self.timers.timeout
        message = f"the command did not finish within --timeout {limit:g} s and was stopped; output so far included"
        return [Finish(Status.TIMEOUT, Reason.TIMEOUT, None, self.strategy, message, stop=True)]

    def _finish_lost(self, why: str) -> Finish:
        self.phase = Phase.DONE
        message = f"{why}, and --strategy {self.strategy.value} allows no fallback"
        return Finish(Status.ERROR, Reason.ERROR, None, self.strategy, message, stop=True)

    def _clocks(self) -> Clocks:
        assert self.clocks is not None, "start() first"
        return self.clocks


def _exit_code(args: tuple[str, ...]) -> int | None:
    """D's code field; absent or garbled means the shell did not say."""
    try:
        return int(args[0])
    except (IndexError, ValueError):
        return None

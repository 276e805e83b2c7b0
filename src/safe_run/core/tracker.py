"""Following one command through the shell, from evidence to a decision.

Pure: the run loop feeds parsed output and marks, one evidence record per look (`Look`: what the
kernel sees, the typed line's status, whether the shell's process was replaced), the shell's exit,
stop requests and the current time; the tracker answers with actions. Nothing here reads a clock
or a file descriptor, so every order of events is tested in microseconds.

The evidence, strongest first:
  rich   this run's nonce-marked C and D frame the command and carry its exit code;
  basic  a nonce-marked prompt comes back but D did not: the exit code is asked for afterwards;
  none   no integration: the line typed brackets the command with nonce-marked C and D itself,
         and marks the shell's prompt with a D that ends a line the shell abandoned;
  and under all three, the typed line's own end: every line leaves the command's exit status in
  a file once the command is over (`Look.status`), whatever the command did to the hooks.
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

How it is built (h11's shape): every input is an event of a kind (`output`, a mark's letter,
`look`, `exit`, `stop`...), and `HANDLERS` maps each (phase, kind) to the one method that handles
it, with the pairs ignored on purpose listed in `IGNORED`, each with its reason; any other pair
is a bug and raises. Phases move only through `_enter`, along `MOVES`. What one command needs is
a `Command`, made anew for each (`start_next_cycle`); what lasts for the shell (its config, the
health of its integration, whether its prompt is back) stays on the tracker.

Marks without this run's nonce (a command printing `ESC ] 633 ; D ; 0 BEL`, a prompt theme's own
133 sequences) are escape sequences in the output and are dropped with the other escapes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum

from .evidence import Observation
from .output import HeadTail
from .reading import password_read
from .request import Timers
from .result import Downgrade, Reason, Status, Strategy, exit_sentence
from .screen import NO_SHOT, ScreenTail, Shot, continuation_prompt, input_prompt, looks_like_prompt, program_prompt
from .sequences import Mark, Osc, decode_mark

# Kept from the shell's start-up so that a shell that dies early can say why.
STARTUP_TAIL_BYTES = 4096
# How often an input wait held in a session is looked at again while nothing happens.
HELD_LOOK_S = 10.0


class Phase(Enum):
    STARTING = "starting"  # waiting for the shell to be ready for the command
    TYPED = "typed"  # the run line was sent, waiting for C
    RUNNING = "running"  # between C and the end: output belongs to the command
    FETCHING = "fetching"  # the command ended without D; its exit code was asked for
    DONE = "done"  # this command is decided; the shell may take the next one (`start_next_cycle`)


# Where each phase may go next.
MOVES = {
    Phase.STARTING: {Phase.TYPED, Phase.DONE},
    Phase.TYPED: {Phase.RUNNING, Phase.DONE},
    Phase.RUNNING: {Phase.FETCHING, Phase.DONE},
    Phase.FETCHING: {Phase.DONE},
    Phase.DONE: {Phase.STARTING},
}


class TrackerError(Exception):
    """An event came in a phase where it cannot happen: a bug in the loop that drives the tracker."""


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
    # What the shell itself prints when the command exits it, announced right after by an X mark
    # so that it can be taken back out of the command's output (bash's "exit").
    exit_word: bytes = b""
    # Whether the kernel can be asked how the terminal stands (/proc, the pty's foreground group).
    kernel_view: bool = True


@dataclass(frozen=True)
class Replacement:
    """The shell's process now runs another shell (the command `exec`ed it): its config, its name."""

    config: Config
    by: str


@dataclass(frozen=True)
class Look:
    """One look at the evidence, gathered in this order: what was already in the terminal is read
    first (fed before this), then the kernel, then the typed line's status file.

    `seen`: the kernel's observation (None where it cannot tell). `status`: the exit status the
    typed line left (None: the line still runs, or never wrote one). `program`: a program that is
    no shell now runs in the shell's process (`exec python3`), seen waiting on the terminal.
    `replaced`: a new shell runs in the shell's process (`exec zsh`), seen waiting.
    """

    seen: Observation | None
    status: int | None = None
    program: str | None = None
    replaced: Replacement | None = None


@dataclass(frozen=True)
class EndCheck:
    """What the kernel says as an end mark (D) arrives, for the mark to count.

    The shell's own D comes from the typed line's end (or the hook that stands in for it) after
    the shell recorded the line's status (`status`, None: no record yet), with the terminal's
    foreground group the shell's own again (`shell_in_front`, None: the terminal could not say).
    A mark printed by a program of the line, with a nonce it found, comes while that program or
    the line's foreground holds the terminal, or before the line's record: it is ignored, and
    said. `asked`: False where nothing was asked (a loop that feeds a played shell); a mark whose
    foreground could not be told counts, and the result says it was not corroborated.
    """

    status: int | None
    shell_in_front: bool | None
    asked: bool = True


# Where the loop could ask nothing (the default for a mark fed without a check).
NOT_ASKED = EndCheck(None, None, asked=False)


@dataclass(frozen=True)
class Send:
    """Type these bytes into the terminal. `command_line`: the line that runs the next command, whose
    end the status file will tell, so the loop empties that file first."""

    data: bytes
    command_line: bool = False


@dataclass(frozen=True)
class Decision:
    """What the command came to: its end, an input wait (held in a session: see `Waiting`), or a
    stop. `stop` asks the loop to end the foreground command first."""

    status: Status
    reason: Reason
    exit_code: int | None
    strategy: Strategy | None
    message: str | None = None
    stop: bool = False
    prompt: str | None = None
    # Held in a session: the command still runs, listening to the keyboard among other things.
    reads_keyboard: bool = False
    # An input wait whose terminal does not echo: a password or passphrase, for a person to type.
    secret: bool = False


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

    decision: Decision


@dataclass(frozen=True)
class Reinjected:
    """The integration was loaded into the live shell again before this command, and why."""

    reason: str
    at_s: float


Action = Send | Decision | Output | Downgraded | Waiting | Reinjected

# What a reader is told when the end was not the integration's own D (or the shell's exit).
# The command's `kill $$` (a script's `die`) reached an interactive shell, which ignores SIGTERM.
TERM_IGNORED = ("the command sent its shell SIGTERM (`kill $$`), which an interactive shell ignores, as at a "
                "terminal, so the command went on; `bash -c` or a script run as `bash FILE` would have ended "
                "there with 143. End a command with `exit N`")

FALLBACK_ENDS = {
    Reason.SENTINEL: "no shell integration: the end and the exit code came from a marked status echo "
    "typed after the command",
    Reason.PROMPT_IDLE: "the prompt came back without the command-finished mark; the exit code was asked "
    "for afterwards",
    Reason.FOREGROUND_RETURNED: "the command replaced the shell by another shell, which the kernel shows "
    "waiting in the foreground; nothing is typed into a shell whose prompt was never seen",
}
# After a forged end mark was ignored, the integrated line's own end decided (see `_forged`).
LINE_ENDED = ("the end and the exit code came from the typed line's own end mark, sent by the shell with the "
              "terminal back in its hands after it recorded the command's status")
# Said when the end mark could not be checked against the kernel (see `EndCheck`).
UNCORROBORATED = ("the end mark was not corroborated: the terminal could not say whether the shell held it, so a "
                  "program of the command that found this run's nonce could have printed it")
# Said of every command followed without the kernel's view (no /proc: some containers hide it, and
# systems other than Linux have none): what it costs, so that an answer it shapes is not trusted blindly.
NO_KERNEL_VIEW = ("the kernel's view of the terminal is missing (no /proc here): input waits are judged from the "
                  "screen and the timers alone, so a program that waits for input without a prompt-like line "
                  "(read, cat, a REPL) is reported when a time bound runs out, not as input_required, and a quiet "
                  "command whose last line looks like a question may be taken for an input wait")
# When a plain shell's own prompt said the end (see `posix.marked_prompt`): the typed line printed
# no D of its own, as when the shell abandons a line on an error.
PROMPT_ENDED = ("no shell integration: the shell's marked prompt came back before the typed line's status "
                "echo, and carried the exit code (the shell abandons a line on Ctrl-C, and dash on errors such as "
                "${VAR:?})")


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
    held: float | None = None  # since when the looks have found the same input wait, held in a session
    status_seen: float | None = None  # when the status file the typed line writes first showed the status


@dataclass
class Command:
    """What following one command needs, made anew for each command of the shell."""

    timers: Timers
    capture: HeadTail
    strategy: Strategy
    started_integrated: bool
    clocks: Clocks
    phase: Phase = Phase.STARTING
    ready_prompt: Shot = NO_SHOT  # the screen when the command line was typed
    prompt_after: str = ""  # a prompt seen only on the screen, so it went into the capture
    status: int | None = None  # the exit status the typed line left in its file
    healing: str | None = None  # the reason given to the heal line typed for this command
    exit_word_end: int | None = None  # where the shell's own word on exit ends in the capture (X)
    held: bytes = b""  # output that may be the shell's word on exit, not passed on yet
    term_ignored: bool = False  # the interactive shell was sent SIGTERM and went on (T)
    forged: bool = False  # an end mark the shell did not send was ignored (said once)


class CommandTracker:
    """Decides when the command ran, when it ended, how, and with which exit code."""

    def __init__(
        self, config: Config, capture: HeadTail, screen: ScreenTail, strategy: Strategy, integrated: bool,
        timers: Timers,
    ) -> None:
        self.config = config
        self.screen = screen
        # The integration's health, which lasts across commands: whether the shell has it now,
        # why it must be loaded again before the next command, why it is gone for good.
        self.integrated = integrated
        self._first_strategy = strategy
        self._broken: str | None = None
        self._lost: str | None = None
        self._prompt_ready = False  # the shell's prompt mark came after the last command line
        self._cycle = 1
        self._pending: list[Action] = []  # effects decided on the way, returned next
        self.startup = HeadTail(0, STARTUP_TAIL_BYTES)
        self.command = Command(timers, capture, strategy, integrated, Clocks(0.0, 0.0))

    # ---- what callers read --------------------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self.command.phase

    @property
    def strategy(self) -> Strategy:
        return self.command.strategy

    @property
    def capture(self) -> HeadTail:
        return self.command.capture

    def passed_on(self) -> tuple[HeadTail, int]:
        """The command's output as kept, and how many of its last bytes are not passed on yet (the
        shell's possible word on exit, see `_command_output`): `Chunks` is cut from it."""
        return self.command.capture, len(self.command.held)

    @property
    def nonce(self) -> str:
        return self.config.nonce

    @property
    def prompt_drawn(self) -> bool:
        """The shell's trusted prompt mark came after the last command line: it waits for the next."""
        return self._prompt_ready

    @property
    def holds_a_wait(self) -> bool:
        """The looks find the same input wait, held in a session: the next look only sees whether it stays."""
        return self.command.clocks.held is not None

    def output_text(self) -> str:
        """The command's output, without a prompt that only the screen told apart from it."""
        text = self.command.capture.text()
        after = self.command.prompt_after
        return text[: -len(after)] if after and text.endswith(after) else text

    def next_deadline(self, now: float) -> float | None:
        """When the loop must call `look` even if nothing arrives."""
        command = self.command
        if command.phase is Phase.DONE:
            return None
        clocks = command.clocks
        quiet_for = now - clocks.last_output
        # Look often while a wait may have just begun, then less: idle CPU stays near zero. The
        # next look is counted from the last one, so a loop woken more often than this (a status
        # line's spinner, a caller polling) still looks on time.
        # An input wait held in a session changes only by itself or by an answer: output, the
        # command's exit and a caller's request all wake the loop, and a call about the wait gets
        # a fresh look first (the holder's `_handle`), so nobody is told of a wait that has ended. Scanning for it four times
        # a second would keep a core busy for a thousand such sessions.
        poll = 0.1 if quiet_for < 2 else HELD_LOOK_S if clocks.held is not None else 0.25
        deadline = (clocks.started if clocks.ticked is None else clocks.ticked) + poll
        if self._settling_after_answer(now):
            deadline = min(deadline, clocks.last_output + command.timers.answer)
        if command.timers.timeout is not None:
            deadline = min(deadline, clocks.started + command.timers.timeout)
        return deadline

    # ---- the events ---------------------------------------------------------------------------

    def start(self, now: float) -> None:
        self.command.clocks = Clocks(started=now, last_output=now)
        self._say_blind()

    def start_next_cycle(
        self, now: float, timers: Timers, capture: HeadTail, config: Config | None = None,
        replaced_by: str | None = None,
    ) -> list[Action]:
        """Follow the next command in the same shell, once the last one is decided.

        A new `config` means the shell was replaced (`exec zsh`): its own lines, and its own
        integration to load. A shell whose last command left the integration broken gets it
        back before this command runs; one whose prompt has not come back yet is waited for.
        """
        if self.phase is not Phase.DONE:
            raise TrackerError("start_next_cycle() before the last command was decided")
        was_integrated = self.integrated
        if config is not None:
            self.config = config
            self.integrated = bool(config.lines.heal)
            self._broken = f"the shell was replaced by {replaced_by or 'another shell'}" if self.integrated else None
        self._cycle += 1
        strategy = self._first_strategy if self.integrated else Strategy.NONE
        self.command = Command(timers, capture, strategy, self.integrated, Clocks(started=now, last_output=now))
        self._say_blind()
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

    def feed(self, item: bytes | Osc, now: float, end: EndCheck = NOT_ASKED) -> list[Action]:
        """Output bytes or an OSC, in the order the terminal gave them; `end`: what the kernel
        said as the OSC arrived, for an end mark (see `EndCheck`)."""
        if isinstance(item, bytes):
            return self._handle("output", now, item)
        if not item.is_mark():
            # Another program's sequence (a hyperlink, the clipboard, a colour): output like any,
            # which reaches a person's own terminal as it is, and which cleaning takes out.
            return self._handle("output", now, item.sequence())
        mark = decode_mark(item)
        if mark is None or not self._trusted(mark):
            return []  # a mark not of this run (forged, or another shell's): never passed on
        if mark.kind == "D" or (mark.kind in PROMPT_KINDS and self.phase is Phase.RUNNING):
            return self._handle(f"mark {mark.kind}", now, (mark, end))
        return self._handle(f"mark {mark.kind}" if mark.kind in _MARK_KINDS else "mark other", now, mark)

    def look(self, now: float, look: Look) -> list[Action]:
        """Time passed, and here is the evidence now."""
        actions = self._handle("look", now, look)
        clocks = self.command.clocks
        held = any(isinstance(action, Waiting) and not action.decision.reads_keyboard for action in actions)
        clocks.held = (now if clocks.held is None else clocks.held) if held else None
        return actions

    def shell_exited(self, status: int, by_signal: bool = False) -> list[Action]:
        """The shell is gone (`by_signal`: a signal ended it): once the command started, that is
        the command's own end."""
        return self._decision(self._handle("exit", 0.0, (status, by_signal)))

    def interrupted(self, signal_name: str) -> list[Action]:
        """safe-run itself was asked to stop."""
        return self._decision(self._handle("interrupt", 0.0, signal_name))

    def stop_requested(self, why: str | None = None) -> list[Action]:
        """The session's owner asked to end the command (or its holder must: `why`)."""
        return self._decision(self._handle("stop", 0.0, why))

    def unattended(self, wait: Decision, after: float) -> list[Action]:
        """A held input wait (`Waiting`) that nobody asked about for `after` seconds ends as an input
        wait outside a session does: stopped, and said why. Nothing: the command no longer waits."""
        actions = self._handle("unattended", 0.0, (wait, after))
        return self._decision(actions) if actions else []

    def answered(self, now: float) -> None:
        """Someone typed into a held input wait: whatever waits next is a new wait."""
        self._handle("answered", now, None)

    # ---- dispatch -----------------------------------------------------------------------------

    def _handle(self, kind: str, now: float, payload: object) -> list[Action]:
        phase = self.phase
        handler = HANDLERS.get((phase, kind))
        if handler is None:
            if (phase, kind) in IGNORED or (None, kind) in IGNORED:
                return []
            raise TrackerError(f"{kind!r} cannot happen while {phase.value}")
        return self._flush(self._release_held(handler(self, now, payload)))

    def _release_held(self, actions: list[Action]) -> list[Action]:
        """Output held back as a possible word on exit is the command's once the command is decided
        otherwise, and goes out before the decision."""
        if self.phase is not Phase.DONE or not self.command.held:
            return actions
        held, self.command.held = self.command.held, b""
        return [Output(held), *actions]

    def _enter(self, phase: Phase) -> None:
        if phase not in MOVES[self.command.phase]:
            raise TrackerError(f"no way from {self.command.phase.value} to {phase.value}")
        self.command.phase = phase

    @staticmethod
    def _decision(actions: list[Action]) -> list[Action]:
        """The actions of an event that always decides: exactly one of them a decision (output
        held back until then may come before it)."""
        if sum(isinstance(action, Decision) for action in actions) != 1:
            raise TrackerError(f"one decision expected, got {actions!r}")
        return actions

    def _trusted(self, mark: Mark) -> bool:
        """This run's nonce; its case may have been changed on the way (`stty olcuc`)."""
        return mark.family == 633 and bool(mark.args) and mark.args[-1].lower() == self.nonce.lower()

    # ---- output -------------------------------------------------------------------------------

    def _output(self, now: float, data: object) -> list[Action]:
        """Output that is not the command's: the shell's start-up, prompt and echo, or a job's."""
        assert isinstance(data, bytes)
        self._note_output(now, data)
        if self.phase is Phase.STARTING and self._cycle == 1:
            self.startup.write(data)
        return []

    def _command_output(self, now: float, data: object) -> list[Action]:
        """The command's output, passed on as it comes, except the shell's word on exit at its
        end (`Config.exit_word`), held until the next output or the command's end says whose it is."""
        assert isinstance(data, bytes)
        self._note_output(now, data)
        self.command.capture.write(data)
        word, shown = self.config.exit_word, self.command.held + data
        self.command.held = b""
        if word and shown.endswith(word):
            shown, self.command.held = shown[: -len(word)], word
        return [Output(shown)] if shown else []

    def _note_output(self, now: float, data: bytes) -> None:
        clocks = self.command.clocks
        clocks.last_output = now
        self.screen.feed(data)
        if clocks.typed is not None:
            clocks.output_since_typed = True

    # ---- marks --------------------------------------------------------------------------------

    def _prompt_drawn_first(self, now: float, mark: object) -> list[Action]:
        """STARTING, B: the shell waits at its prompt; the command line goes in."""
        if self._broken is not None:
            return self._heal(now, self._broken)
        return self._type_command(now, self.config.lines.integrated)

    def _reinjected(self, now: float, mark: object) -> list[Action]:
        why = self.command.healing or "the integration's functions were gone when the command was typed"
        self._broken = None
        return [Reinjected(why, round(now - self.command.clocks.started, 3))]

    def _command_started(self, now: float, mark: object) -> list[Action]:
        self._enter(Phase.RUNNING)
        self.screen.reset()
        return []

    def _term_ignored(self, now: float, mark: object) -> list[Action]:
        """RUNNING, T: the command sent its shell SIGTERM (`kill $$`), which an interactive shell
        ignores, as at a terminal; said in the result, since `bash -c` would have ended there."""
        self.command.term_ignored = True
        return []

    def _command_ended(self, now: float, payload: object) -> list[Action]:
        """RUNNING, D: the typed line's end mark, when the kernel agrees the shell sent it."""
        mark, end = _end_mark(payload)
        if self.strategy is Strategy.BASIC and self.integrated:
            return []  # basic: the end is the prompt mark, and the code is asked for
        code = _exit_code(mark.args[:-1])
        by_prompt = not self.integrated and "prompt" in mark.args[1:-1]
        refused = _refusal(end, code, needs_record=not by_prompt)
        if refused is not None:
            return self._forged(now, code, refused)
        unchecked = _uncorroborated(end)
        if self.integrated and self.strategy is not Strategy.NONE:
            return self._completed(Reason.SHELL_INTEGRATION, code, note=unchecked)
        said = LINE_ENDED if self.integrated else PROMPT_ENDED if by_prompt else None
        return self._completed(Reason.SENTINEL, code, said, note=unchecked)

    def _forged(self, now: float, code: int | None, why: str) -> list[Action]:
        """An end mark with this run's nonce that the shell did not send: a program of the line
        found the nonce. It is ignored; from here the marks alone prove nothing, so the run steps
        down to `none`, whose end is the typed line's own record (its D, checked as this one was,
        or its status file)."""
        said = f"an end mark with this run's nonce (status {code}) came {why}: a program of the command printed it, and it was ignored"
        first, self.command.forged = not self.command.forged, True
        if self.strategy is Strategy.NONE:
            if first:
                at = round(now - self.command.clocks.started, 3)
                self._pending.append(Downgraded(Downgrade(Strategy.NONE.value, Strategy.NONE.value, said, at)))
            return []
        if not self.config.allow_downgrade:
            return [self._lost_without_fallback(said)]
        self._downgrade(Strategy.NONE, said, now)
        self._broken = None  # the hooks are whole: nothing to load again
        return []

    def _prompt_back(self, now: float, payload: object) -> list[Action]:
        """RUNNING, A or B without D: the prompt is back; whatever follows is the shell's. It is
        the prompt's only after the line's end recorded its status, with the shell holding the
        terminal: `echo "$PS1"`, or a program of the line, prints the same mark mid-command, and
        nothing may be typed then. Such a mark is left out, and the command followed on."""
        mark, end = _end_mark(payload)
        if not _from_the_prompt(end):
            return []
        if mark.kind == "B":
            self._prompt_ready = True
        if self.strategy is Strategy.RICH:
            if not self.config.allow_downgrade:
                return [self._lost_without_fallback("the prompt came back without the command-finished mark")]
            self._downgrade(Strategy.BASIC, "the prompt came back without the command-finished mark", now)
        return self._ask_exit_status(now)

    def _exit_word_ends(self, now: float, mark: object) -> list[Action]:
        """RUNNING, X: the shell's own word on exit ends here (see `Config.exit_word`)."""
        self.command.exit_word_end = self.command.capture.total
        return []

    def _status_answered(self, now: float, payload: object) -> list[Action]:
        """FETCHING, D: the answer to the exit-status question, typed at the shell's prompt: it
        counts only with the shell in front (there is no line record: the line never ended)."""
        mark, end = _end_mark(payload)
        code = _exit_code(mark.args[:-1])
        refused = _refusal(end, code, needs_record=False)
        if refused is not None:
            return self._forged(now, code, refused)
        return self._completed(Reason.PROMPT_IDLE, code, note=_uncorroborated(end))

    def _between_commands(self, now: float, mark: object) -> list[Action]:
        """DONE, A or B: the prompt after a command; its B says the shell is ready for the next one."""
        assert isinstance(mark, Mark)
        self._prompt_ready = mark.kind == "B"
        return []

    # ---- looks --------------------------------------------------------------------------------

    def _look_starting(self, now: float, look: object) -> list[Action]:
        assert isinstance(look, Look)
        if (timeout := self._timed_out(now)) is not None:
            return timeout
        seen = look.seen
        clocks = self.command.clocks
        timers = self.command.timers
        # An integrated shell that waits without having sent its prompt mark may just not have
        # been read yet: give it the idle time. Without integration, waiting is all there is.
        settle = timers.idle if self.integrated else min(timers.idle, 0.05)
        quiet = now - clocks.last_output >= settle
        waiting = seen is not None and seen.shell_in_foreground and seen.waiting_for_terminal
        if seen is not None and quiet and waiting:
            return self._start_without_integration(now, "the shell waits at its prompt without integration marks")
        if seen is None and quiet and looks_like_prompt(self.screen.before_cursor()):
            return self._start_without_integration(now, "a prompt is on the screen without integration marks")
        if now - clocks.started < timers.activation:
            return []
        if seen is not None:
            self._enter(Phase.DONE)
            return [Decision(Status.ERROR, Reason.ERROR, None, None,
                             f"the shell did not become ready within {timers.activation:g} s "
                             "(its start-up files may be waiting or hanging)", stop=True)]
        return self._start_without_integration(now, f"nothing showed a prompt within {timers.activation:g} s")

    def _look_at_command(self, now: float, look: object) -> list[Action]:
        """TYPED or RUNNING: has the line ended, does the command wait, or is it stopped?"""
        assert isinstance(look, Look)
        if (timeout := self._timed_out(now)) is not None:
            return timeout
        if look.status is not None:
            if self.command.status is None:
                self.command.clocks.status_seen = now
            self.command.status = look.status
        if look.replaced is not None and self.phase is Phase.RUNNING:
            return self._shell_replaced(now, look.replaced)
        seen = look.seen
        if seen is not None and look.program is not None:
            # A program put in the shell's place (`exec python3`) is the command, still running.
            seen = replace(seen, shell_in_foreground=False, foreground_command=look.program)
        clocks = self.command.clocks
        timers = self.command.timers
        self._note_activity(now, seen)
        quiet_for = now - clocks.last_output
        answered = self.config.hold_on_input and clocks.answered is not None and seen is not None
        if quiet_for < (min(timers.idle, timers.answer) if answered else timers.idle):
            return []
        if self.command.status is not None:
            # The line records its status just before it sends its own end mark, which gets the
            # idle window to arrive: on a busy machine the mark can be read long after a command
            # that was quiet to its end.
            if clocks.status_seen is not None and now - clocks.status_seen < timers.idle:
                return []
            return self._completed_by_status_file(now, self.command.status)
        line = self.screen.before_cursor()
        if self.phase is Phase.TYPED:
            return self._judge_typed(line, seen)
        if seen is not None:
            return self._judge_by_kernel(now, seen, line, answered)
        return self._judge_by_screen(now, line, quiet_for)

    def _look_fetching(self, now: float, look: object) -> list[Action]:
        if (timeout := self._timed_out(now)) is not None:
            return timeout
        clocks = self.command.clocks
        if clocks.fetch_sent is not None and now - clocks.fetch_sent >= self.command.timers.fetch:
            return self._completed(Reason.PROMPT_IDLE, None)
        return []

    def _timed_out(self, now: float) -> list[Action] | None:
        clocks = self.command.clocks
        clocks.ticked = now
        limit = self.command.timers.timeout
        if limit is None or now - clocks.started < limit:
            return None
        self._enter(Phase.DONE)
        message = f"the command did not finish within --timeout {limit:g} s and was stopped; output so far included"
        return [Decision(Status.TIMEOUT, Reason.TIMEOUT, None, self.strategy, message, stop=True)]

    def _note_activity(self, now: float, seen: Observation | None) -> None:
        """The foreground's CPU time changed since the last look: it works, whatever it waits on now."""
        clocks = self.command.clocks
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
        clocks = self.command.clocks
        last = max(clocks.last_output, clocks.last_activity or clocks.last_output)
        return now - last

    def _judge_typed(self, line: str, seen: Observation | None) -> list[Action]:
        """The line was typed but the command never announced its start."""
        at_prompt = seen is None or (seen.shell_in_foreground and seen.waiting_for_terminal)
        if not at_prompt:
            return []
        construct = continuation_prompt(line)
        if construct is not None:
            self._enter(Phase.DONE)
            message = (f"syntax error: the shell is waiting for the rest of {construct} ({line.strip()!r}); "
                       "nothing was run. Fix the quoting and retry")
            return [Decision(Status.SYNTAX_ERROR, Reason.CONTINUATION_PROMPT, None, self.strategy, message,
                             stop=True, prompt=line)]
        if seen is None and not self._shows_prompt(line):
            return []
        self._enter(Phase.DONE)
        shown = f"; the screen shows {line.strip()!r}" if line.strip() else ""
        message = f"the shell did not run the command line it was given{shown}"
        return [Decision(Status.ERROR, Reason.ERROR, None, self.strategy, message, stop=True, prompt=line)]

    def _judge_by_kernel(self, now: float, seen: Observation, line: str, answered: bool) -> list[Action]:
        timers = self.command.timers
        if seen.stopped is not None:
            return self._stopped_by_signal(seen.stopped, seen.shell_in_foreground)
        window = min(timers.idle, timers.answer) if answered else timers.idle
        idle_for = self._idle_for(now)
        if idle_for < window:
            return []
        if self._at_its_prompt(seen, line):
            if seen.waiting_for_terminal:
                return self._input_wait(seen.reader or seen.foreground_command, password_read(seen), seen.keyless)
            if seen.listening and idle_for >= (window if answered else timers.listen):
                return self._listening(seen.foreground_command)
        if seen.wake_in is not None and idle_for < seen.wake_in + timers.idle:
            return []
        if seen.hidden:
            return self._judge_hidden(now, seen, line)
        if not seen.waiting_for_terminal:
            return []  # working, or waiting on the world outside: never "done" for being quiet
        if seen.keyless and not self.config.hold_on_input and idle_for < timers.silence:
            return []  # a pipe's writer may be slow: stopped for it only after the silence timeout
        # The shell itself reading, with its line's status not written, is the command's own read.
        program = None if seen.shell_in_foreground else seen.reader or seen.foreground_command
        return self._input_wait(program, password_read(seen), seen.keyless)

    def _at_its_prompt(self, seen: Observation, line: str) -> bool:
        """In a session, a quiet program that waits on the keyboard at a prompt it drew (or on a
        full screen) is answered without outlasting its poll's timeout: nothing is stopped on this,
        and an event loop's timers (node's, top's refresh) would otherwise hold the answer back.
        A full screen (alternate, or drawn in place) counts as the prompt."""
        if not self.config.hold_on_input or seen.shell_in_foreground:
            return False
        return self.screen.alternate or self.screen.drawn_in_place() or program_prompt(line)

    def _judge_hidden(self, now: float, seen: Observation, line: str) -> list[Action]:
        """The kernel hides what part of the foreground waits on (a setuid program, to a user who
        is not root): a question at the cursor of a silent, idle foreground is taken as its prompt,
        and so is a terminal reading a line without echo, whatever the prompt says (`sudo -S -p
        'pw: '`); otherwise the timers decide, counting from the last output or CPU time, so that
        a hidden program that works (dpkg under sudo) is never stopped for being quiet."""
        if input_prompt(line) or password_read(seen):
            return self._input_wait(seen.foreground_command, password_read(seen))
        return self._silence_timers(self._idle_for(now))

    def _judge_by_screen(self, now: float, line: str, quiet_for: float) -> list[Action]:
        # The typed line ends with its status file (and its own end mark without integration), none
        # of which came: the command still runs, and a prompt on the screen is its own.
        if self.screen.alternate or input_prompt(line) or self._shows_prompt(line):
            return self._input_wait(None)
        return self._silence_timers(quiet_for)

    def _silence_timers(self, quiet_for: float) -> list[Action]:
        """Where nothing can tell whether the command still runs: stopped after the silence timers."""
        timers = self.command.timers
        if not self.command.clocks.output_since_typed and quiet_for >= timers.no_output:
            return [self._unknown(Reason.NO_OUTPUT_FALLBACK, timers.no_output, "no output at all")]
        if quiet_for >= timers.silence:
            return [self._unknown(Reason.EXECUTING_IDLE_FALLBACK, timers.silence, "no output")]
        return []

    def _settling_after_answer(self, now: float) -> bool:
        clocks = self.command.clocks
        return (self.config.hold_on_input and clocks.answered is not None
                and now - clocks.last_output < self.command.timers.answer)

    def _shows_prompt(self, line: str) -> bool:
        """Whether the screen shows the shell asking for the next command.

        After a start with integration only the very prompt seen at the start counts (a builtin
        `read` shows no prompt or its own: fish's is `read> `). Shells that never had
        integration have no such reference beyond the start, so a prompt shape counts there.
        """
        ready = self.command.ready_prompt.before_cursor()
        if ready and line.rstrip() == ready.rstrip():
            return True
        return not self.command.started_integrated and looks_like_prompt(line) and not input_prompt(line)

    # ---- the command's other ends -------------------------------------------------------------

    def _shell_replaced(self, now: float, replacement: Replacement) -> list[Action]:
        """The command replaced the shell (`exec dash`), and the new one waits on the terminal: the
        command has ended. Whether the new shell waits at its prompt or in a `read` of its start-up
        files is not known, so nothing is asked of it: the exit code stays unknown."""
        self.config = replacement.config
        by = replacement.by
        if self.strategy is not Strategy.NONE:
            why = f"the shell was replaced by {by} without any integration mark"
            if not self.config.allow_downgrade:
                return [self._lost_without_fallback(why)]
            self._downgrade(Strategy.NONE, why, now)
        self.integrated = bool(self.config.lines.heal)
        if not self.integrated and self._first_strategy is not Strategy.NONE:
            self._lost = f"the shell was replaced by {by}, which has no integration"
        self.command.prompt_after = self.screen.before_cursor()
        return self._completed(Reason.FOREGROUND_RETURNED, None)

    def _exited_with_command(self, now: float, end_of_shell: object) -> list[Action]:
        """RUNNING or FETCHING: the command ended the shell (`exit 3`): that is its own end. The
        shell's word on exit is taken back, unless a signal ended the shell, which says no word."""
        assert isinstance(end_of_shell, tuple)
        status, by_signal = end_of_shell
        self._enter(Phase.DONE)
        end = self.command.exit_word_end
        if end is not None and not by_signal and self.config.exit_word:
            if self.command.capture.retract(self.config.exit_word, end):
                self.command.held = b""  # the shell's, never shown
        message = exit_sentence(status) if status else None
        return [Decision(Status.COMPLETED, Reason.SHELL_EXITED, status, self.strategy, message)]

    def _exited_before_command(self, now: float, end_of_shell: object) -> list[Action]:
        assert isinstance(end_of_shell, tuple)
        status, _ = end_of_shell
        before = self.phase
        self._enter(Phase.DONE)
        last_words = self.startup.text().strip()
        detail = f": {last_words.splitlines()[-1]}" if last_words else ""
        when = "before the command started" if before is Phase.STARTING else "before it ran the command"
        return [Decision(Status.ERROR, Reason.ERROR, None, None, f"the shell exited with status {status} {when}{detail}")]

    def _interrupt(self, now: float, signal_name: object) -> list[Action]:
        self._enter(Phase.DONE)
        return [Decision(
            Status.INTERRUPTED, Reason.INTERRUPTED, None, self.strategy,
            f"safe-run received {signal_name} and stopped the command; the output so far is included", stop=True,
        )]

    def _stop(self, now: float, why: object) -> list[Action]:
        self._enter(Phase.DONE)
        said = f"stopped: {why}" if why else "stopped by `safe-run stop`"
        return [Decision(Status.INTERRUPTED, Reason.STOPPED, None, self.strategy,
                         f"{said}; the output so far is included", stop=True)]

    def _unattended(self, now: float, payload: object) -> list[Action]:
        assert isinstance(payload, tuple)
        wait, after = payload
        assert isinstance(wait, Decision)
        self._enter(Phase.DONE)
        message = f"{wait.message}; nobody asked about it for {after:g} s while it waited for input, so it was stopped"
        return [replace(wait, stop=True, message=message)]

    def _answered(self, now: float, payload: object) -> list[Action]:
        self.command.clocks.answered = now
        return []

    # ---- typing -------------------------------------------------------------------------------

    def _type_command(self, now: float, line: bytes) -> list[Action]:
        command = self.command
        command.ready_prompt = self.screen.shot()
        self._enter(Phase.TYPED)
        self._prompt_ready = False
        command.clocks.typed = now
        command.clocks.output_since_typed = False
        return [Send(line, command_line=True)]

    def _heal(self, now: float, why: str) -> list[Action]:
        """Load the integration into the live shell again, in the same line that runs the command."""
        self.command.healing = why
        return self._type_command(now, self.config.lines.heal)

    def _start_without_integration(self, now: float, why: str) -> list[Action]:
        if self.integrated and self._cycle > 1:
            return self._heal(now, f"no prompt mark came back after the last command ({why})")
        if self.integrated:
            if not self.config.allow_downgrade:
                return [self._lost_without_fallback(f"shell integration did not start: {why}")]
            self._downgrade(Strategy.NONE, f"shell integration did not start: {why}", now)
            self.integrated = False
        return self._type_command(now, self.config.lines.fallback)

    def _ask_exit_status(self, now: float) -> list[Action]:
        """Only right after a trusted prompt mark: the shell itself reads the question."""
        self._enter(Phase.FETCHING)
        self.command.clocks.fetch_sent = now
        return [Send(self.config.lines.status_query)]

    def _say_blind(self) -> None:
        """Each command followed without the kernel's view says so in its result, with the cost."""
        if not self.config.kernel_view:
            strategy = self.strategy.value
            self._pending.append(Downgraded(Downgrade(strategy, strategy, NO_KERNEL_VIEW, 0.0)))

    def _downgrade(self, to: Strategy, reason: str, now: float) -> None:
        at = round(now - self.command.clocks.started, 3)
        self._pending.append(Downgraded(Downgrade(self.strategy.value, to.value, reason, at)))
        self.command.strategy = to
        self._broken = reason

    def _flush(self, actions: list[Action]) -> list[Action]:
        """The effects decided on the way first (a downgrade before the line it leads to)."""
        if not self._pending:
            return actions
        pending, self._pending = self._pending, []
        return [*pending, *actions]

    # ---- decisions ----------------------------------------------------------------------------

    def _completed(
        self, reason: Reason, exit_code: int | None, message: str | None = None, note: str | None = None,
    ) -> list[Action]:
        self._enter(Phase.DONE)
        message = message or FALLBACK_ENDS.get(reason)
        if note is not None:
            message = f"{message}; {note}" if message else note
        if exit_code is None:
            message = f"{message or 'the command ended'}, but its exit code could not be recovered"
        elif exit_code != 0:
            message = f"{message}; {exit_sentence(exit_code)}" if message else exit_sentence(exit_code)
        if self.command.term_ignored:
            message = f"{message}; {TERM_IGNORED}" if message else TERM_IGNORED
        return [Decision(Status.COMPLETED, reason, exit_code, self.strategy, message)]

    def _completed_by_status_file(self, now: float, exit_code: int) -> list[Action]:
        if self.strategy is not Strategy.NONE:
            why = "the command line ended without the command-finished mark (the command may have removed the shell's hooks)"
            if not self.config.allow_downgrade:
                return [self._lost_without_fallback(why)]
            self._downgrade(Strategy.NONE, why, now)
        self._enter(Phase.DONE)
        self.command.prompt_after = self.screen.before_cursor()  # drawn while the command was still followed
        message = ("the command ended but its end mark never reached the terminal (it may have sent the "
                   "shell's output elsewhere or removed its hooks); the exit code came from the status the typed "
                   "line wrote to a file")
        return [Decision(Status.COMPLETED, Reason.SENTINEL, exit_code, self.strategy, message)]

    def _stopped_by_signal(self, who: str, shell: bool) -> list[Action]:
        """A stopped process goes nowhere until someone continues it, and continuing it would run
        what the command meant to hold back: so it is reported and ended, never left hanging."""
        self._enter(Phase.DONE)
        what = "the shell itself" if shell else who
        message = (f"{what} was stopped by a signal (kill -STOP, Ctrl-Z or suspend) and cannot go on by "
                   "itself; it was ended, output so far included")
        return [Decision(Status.INTERRUPTED, Reason.PROCESS_STOPPED, None, self.strategy, message, stop=True)]

    def _input_wait(self, program: str | None, secret: bool = False, keyless: bool = False) -> list[Action]:
        """An input wait: the end of a run, or in a session a state to report while it goes on.
        `secret`: the terminal does not echo what is typed (a password, a passphrase); `keyless`:
        the command waits on the standard input its caller gave it (--stdin), not on its terminal."""
        line = self.screen.cursor_line()
        alternate = self.screen.used_alternate
        reason = Reason.ALTERNATE_SCREEN if alternate else Reason.INPUT_WAIT
        who = program or "the command"
        shown = f" at {line.strip()!r}" if line.strip() and not keyless else ""
        secret = secret and not keyless
        what = "opened a full-screen program" if alternate else "is asking for a secret" if secret else \
            "is waiting on its standard input (safe-run's own), which sends nothing" if keyless else "is waiting for input"
        line = "" if keyless else line  # what the screen shows is not what it waits on
        if self.config.hold_on_input:
            wait = Decision(Status.INPUT_REQUIRED, reason, None, self.strategy, f"{who} {what}{shown}", prompt=line,
                            secret=secret)
            return [Waiting(wait)]
        self._enter(Phase.DONE)
        message = (f"{who} {what}{shown}; it was stopped. safe-run gives commands no input: its standard "
                   "input is the terminal, whatever safe-run's own is. Pass answers in the command (a flag such "
                   "as --yes, `< file`, a pipe, a here-document), or end of input with `</dev/null`, and retry")
        if keyless:
            message = (f"{who} waited on its standard input (safe-run's own) and it sent nothing for "
                       f"{self.command.timers.silence:g} s; it was stopped. Send the input through the pipe given "
                       "to safe-run, or close it for end of input, and retry (--silence-timeout sets the wait)")
        return [Decision(Status.INPUT_REQUIRED, reason, None, self.strategy, message, stop=True, prompt=line,
                         secret=secret)]

    def _listening(self, program: str | None) -> list[Action]:
        """A program at its prompt that listens to the keyboard but also waits on something else
        (a socket, a timer): reported as running, held in the session, never stopped for it."""
        line = self.screen.cursor_line()
        shown = f" at {line.strip()!r}" if line.strip() else ""
        message = (f"{program or 'the command'} is running and listens to the keyboard{shown}; it also waits on "
                   "something else (a timer, a socket), so it may go on by itself")
        reason = Reason.ALTERNATE_SCREEN if self.screen.used_alternate else Reason.INPUT_WAIT
        return [Waiting(Decision(Status.RUNNING, reason, None, self.strategy, message, prompt=line, reads_keyboard=True))]

    def _unknown(self, reason: Reason, after: float, what: str) -> Decision:
        self._enter(Phase.DONE)
        message = (f"{what} for {after:g} s and no way to tell whether the command still runs, so it was "
                   "stopped; raise the limit if it needs longer")
        return Decision(Status.TIMEOUT, reason, None, self.strategy, message, stop=True)

    def _lost_without_fallback(self, why: str) -> Decision:
        self._enter(Phase.DONE)
        message = f"{why}, and --strategy {self.strategy.value} allows no fallback"
        return Decision(Status.ERROR, Reason.ERROR, None, self.strategy, message, stop=True)


def _end_mark(payload: object) -> tuple[Mark, EndCheck]:
    assert isinstance(payload, tuple)
    mark, end = payload
    assert isinstance(mark, Mark) and isinstance(end, EndCheck)
    return mark, end


def _refusal(end: EndCheck, code: int | None, needs_record: bool) -> str | None:
    """Why an end mark is not the shell's, by what the kernel said as it came; None: it is (or
    nothing could be asked). `needs_record`: the line's end sends D only after recording the
    status, and the two agree; a prompt's D (the line was abandoned) has no record."""
    if not end.asked:
        return None
    if end.shell_in_front is False:
        return "while a program, not the shell, held the terminal"
    if needs_record and end.status is None:
        return "before the shell recorded the command line's status"
    if needs_record and end.status != code:
        return f"but the shell recorded status {end.status} for the command line"
    return None


def _from_the_prompt(end: EndCheck) -> bool:
    """Whether a prompt mark in the middle of a command may be the shell's prompt: after the
    line's record, with no program holding the terminal (or where nothing could be asked)."""
    return not end.asked or (end.shell_in_front is not False and end.status is not None)


def _uncorroborated(end: EndCheck) -> str | None:
    """What the result says of an end mark that counted though the terminal could not say who held it."""
    return UNCORROBORATED if end.shell_in_front is None else None


def _exit_code(args: tuple[str, ...]) -> int | None:
    """D's code field; absent or garbled means the shell did not say."""
    try:
        return int(args[0])
    except (IndexError, ValueError):
        return None


Handler = Callable[[CommandTracker, float, object], list[Action]]
_MARK_KINDS = frozenset("ABCDRTX")
# The prompt's marks, which may also come, with the nonce, from what a command prints.
PROMPT_KINDS = frozenset("AB")
S, T, R, F, D = Phase.STARTING, Phase.TYPED, Phase.RUNNING, Phase.FETCHING, Phase.DONE

# (phase, event) -> the method that handles it.
HANDLERS: dict[tuple[Phase, str], Handler] = {
    **{(phase, "output"): CommandTracker._output for phase in (S, T, F, D)},
    (R, "output"): CommandTracker._command_output,
    (S, "mark B"): CommandTracker._prompt_drawn_first,
    (T, "mark R"): CommandTracker._reinjected,
    (T, "mark C"): CommandTracker._command_started,
    (R, "mark D"): CommandTracker._command_ended,
    (R, "mark A"): CommandTracker._prompt_back,
    (R, "mark B"): CommandTracker._prompt_back,
    (R, "mark X"): CommandTracker._exit_word_ends,
    (R, "mark T"): CommandTracker._term_ignored,
    (F, "mark D"): CommandTracker._status_answered,
    (D, "mark A"): CommandTracker._between_commands,
    (D, "mark B"): CommandTracker._between_commands,
    (S, "look"): CommandTracker._look_starting,
    (T, "look"): CommandTracker._look_at_command,
    (R, "look"): CommandTracker._look_at_command,
    (F, "look"): CommandTracker._look_fetching,
    (S, "exit"): CommandTracker._exited_before_command,
    (T, "exit"): CommandTracker._exited_before_command,
    (R, "exit"): CommandTracker._exited_with_command,
    (F, "exit"): CommandTracker._exited_with_command,
    **{(phase, "interrupt"): CommandTracker._interrupt for phase in (S, T, R, F)},
    **{(phase, "stop"): CommandTracker._stop for phase in (S, T, R, F)},
    (R, "unattended"): CommandTracker._unattended,
    (T, "answered"): CommandTracker._answered,
    (R, "answered"): CommandTracker._answered,
}

# The pairs ignored on purpose, and why. (None, kind): in every phase without a handler.
IGNORED: dict[tuple[Phase | None, str], str] = {
    (None, "mark other"): "E, P, F, G and the rest: the integration's, or a theme's, never needed to decide",
    (None, "mark T"): "a SIGTERM the shell ignored outside the command is no command's to report",
    (S, "mark A"): "the prompt starts drawing; its B is what says it waits",
    (S, "mark C"): "a mark of the command before, late: nothing was typed yet",
    (S, "mark D"): "the end mark of the command before, late (a stopped command's D;130)",
    (S, "mark R"): "R follows only a heal line, and none was typed yet",
    (S, "mark X"): "the shell's word on exit, before any command: its exit says the rest",
    (T, "mark A"): "the line editor redraws the prompt while the line goes in",
    (T, "mark B"): "the line editor redraws the prompt while the line goes in",
    (T, "mark D"): "a late end mark of the command before: this line's own end is its C and D, or its status",
    (T, "mark X"): "the shell's word on exit before the command started: its exit says the rest",
    (R, "mark C"): "the command started already; a second C is a nested shell's or a replay",
    (R, "mark R"): "R comes only before C",
    (F, "mark A"): "the prompt redrawn after the status question: its D answers",
    (F, "mark B"): "the prompt redrawn after the status question: its D answers",
    (F, "mark C"): "the status question runs no command",
    (F, "mark R"): "R comes only before C",
    (F, "mark X"): "the shell's word on exit: its exit says the rest",
    (D, "mark C"): "the command is decided: what the shell does next belongs to no command",
    (D, "mark D"): "the command is decided (a stopped command's late D)",
    (D, "mark R"): "the command is decided",
    (D, "mark X"): "the command is decided; the shell's exit is seen by the loop",
    (D, "look"): "the command is decided: nothing is left to look for",
    (D, "answered"): "the command is decided: the text typed reached the shell, not it",
    (S, "answered"): "nothing waits for an answer before the command starts",
    (F, "answered"): "nothing waits for an answer while the status is asked",
    (S, "unattended"): "an input wait is held only while the command runs",
    (T, "unattended"): "an input wait is held only while the command runs",
    (F, "unattended"): "an input wait is held only while the command runs",
    (D, "unattended"): "the command is decided already",
}

"""The loop (`loop.follow` over `Run`) with a stand-in terminal that plays an integrated bash.

No PTY and no shell run the command: the stand-in answers each typed line with the bytes bash with
safe-run's integration prints (the echo, nonce-marked C, the output, D with the status, the next
prompt between A and B) and, as the line's own end does, leaves the status in the status file; time
passes only when the loop waits for nothing. What is real: the
private directory, the command's syntax check (`bash -n`) and the Wakeup's pipe.
"""

from __future__ import annotations

import select
import signal
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from safe_run.engine.loop import Watcher, follow
from safe_run.engine.interrupts import Wakeup
from safe_run.core.evidence import Observation, ProcessInfo
from safe_run.core.request import RunRequest
from safe_run.core.result import Reason, Result, Status, Strategy
from safe_run.engine.runner import Run
from safe_run.shells.bash import HEAL_RUN, RUN
from safe_run.engine.terminal import WRITE_TIMEOUT_S, Readiness

PROMPT = b"user@host:~$ "
RUN_LINE_START = RUN.encode()
HEAL_LINE_START = b" builtin . "  # the integration loaded again, then the command (HEAL_RUN)
# The most steps a test may take: a loop that never decides fails instead of spinning.
MAX_WAITS = 10_000
# The foreground is the command, and it works: nothing but a mark or a stop ends it.
WORKING = Observation(
    shell_in_foreground=False, foreground_pgrp=2, waiting_for_terminal=False, canonical=True,
    foreground_command="make",
)
# The shell itself reads the terminal without echo, in raw mode: bash's line editor, at its prompt.
AT_PROMPT = Observation(
    shell_in_foreground=True, foreground_pgrp=1, waiting_for_terminal=True, canonical=False,
    foreground_command="bash", echo=False,
)


@dataclass(frozen=True)
class Behaviour:
    """What the played shell does with one command."""

    output: bytes = b""
    code: int = 0
    ends: bool = True  # False: the command goes on until something stops it
    keeps_d: bool = True  # False: the prompt comes back without D (the command broke the hooks)
    prompt_marks: bool = True  # False: the prompt after it comes back bare (the command reset PS1)
    exits_shell: int | None = None  # the command is `exit N`: the shell goes with that status
    meanwhile: Callable[[], None] | None = None  # what happens elsewhere once its output is read


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeTerminal:
    """Plays bash with safe-run's integration on a terminal: what is typed, and what it prints back."""

    def __init__(self, clock: Clock, behaviours: dict[str, Behaviour], command_file: Path) -> None:
        self.fd = -1
        self.pid = 4242
        self.nonce = ""
        self.typed: list[bytes] = []
        self.write_timeouts: list[float] = []
        self.takes_nothing_for = 0
        self._clock = clock
        self._behaviours = behaviours
        self._command_file = command_file
        self._queue: deque[bytes] = deque()
        self._status: int | None = None
        self._waits = 0
        self._last_code = 0
        self._prompt_marks = True
        self._meanwhile: Callable[[], None] | None = None

    def boot(self, nonce: str) -> None:
        """The shell has read its init file: the first prompt."""
        self.nonce = nonce
        self._prompt()

    def wait(
        self, timeout: float | None, wake_fds: Sequence[int] = (), typing: bool = False, wake_writers: Sequence[int] = (),
    ) -> Readiness:
        self._waits += 1
        assert self._waits < MAX_WAITS, "the loop never decided"
        meanwhile = self._meanwhile
        if not self._queue and meanwhile is not None:
            self._meanwhile = None
            meanwhile()
        woken = frozenset(select.select(list(wake_fds), [], [], 0)[0]) if wake_fds else frozenset()
        if not self._queue and not woken and self._status is None:
            assert timeout is not None, "the loop would wait for ever"
            self._clock.now += timeout
        return Readiness(readable=bool(self._queue), exited=self._status is not None, woken=woken)

    def read(self) -> bytes:
        return self._queue.popleft() if self._queue else b""

    def drain(self, at_most: int | None = None) -> list[bytes]:
        chunks = list(self._queue)[:at_most]
        for _ in chunks:
            self._queue.popleft()
        return chunks

    def write(self, data: bytes, timeout: float = WRITE_TIMEOUT_S) -> int:
        self.write_timeouts.append(timeout)
        if self.takes_nothing_for > 0:  # a terminal whose input is full, for this many writes
            self.takes_nothing_for -= 1
            return 0
        self.typed.append(data)
        self._queue.append(data.replace(b"\r", b"\r\n"))  # the line editor's echo
        if data.startswith((RUN_LINE_START, HEAL_LINE_START)):
            if data.startswith(HEAL_LINE_START):
                self._queue.append(self._mark("R"))  # the heal line loaded the integration again
            self._run(self._behaviours[self._command_file.read_text(encoding="utf-8")])
        elif b"633;D;" in data:  # the exit-status question
            self._queue.append(self._mark(f"D;{self._last_code}"))
            self._prompt(self._prompt_marks)
        return len(data)

    def exited(self) -> bool:
        return self._status is not None

    def exit_status(self) -> int:
        assert self._status is not None, "the played shell has not exited"
        return self._status

    def killed_by_signal(self) -> bool:
        return False

    def foreground(self) -> int | None:
        return self.pid  # the played shell holds its terminal whenever it prints a mark

    def end_shell(self) -> None:
        self._status = 129 if self._status is None else self._status

    def close(self, hang_up: bool = True, meanwhile: Callable[[], None] | None = None) -> None:
        if self._status is None and meanwhile is not None:
            meanwhile()
        self._status = 129 if self._status is None else self._status

    def _run(self, behaviour: Behaviour) -> None:
        self._last_code = behaviour.code
        self._queue.append(self._mark("C"))
        if behaviour.output:
            self._queue.append(behaviour.output)
        self._meanwhile = behaviour.meanwhile
        if behaviour.exits_shell is not None:
            self._queue.extend([b"exit\r\n", self._mark("X")])  # the word, then the EXIT trap
            self._status = behaviour.exits_shell
        elif behaviour.ends:
            with self._command_file.with_name("status").open("a") as status:  # the line's end
                status.write(f"{behaviour.code} 1\n")
            if behaviour.keeps_d:
                self._queue.append(self._mark(f"D;{behaviour.code}"))
            self._prompt(behaviour.prompt_marks)

    def _prompt(self, marks: bool = True) -> None:
        self._prompt_marks = marks
        self._queue.extend([self._mark("A"), PROMPT, self._mark("B")] if marks else [PROMPT])

    def _mark(self, body: str) -> bytes:
        return f"\x1b]633;{body};{self.nonce}\x07".encode()


class FakeObserver:
    """The kernel's answers, scripted: each look takes the next, the last one stays."""

    def __init__(self, observations: Sequence[Observation]) -> None:
        self._observations = deque(observations)

    @property
    def available(self) -> bool:
        return True

    def program(self) -> str | None:
        return None  # the shell was not replaced

    def argv(self) -> bytes | None:
        return None

    def directory(self) -> str | None:
        return "/"

    def observe(self, since: int | None = None, settled: bool = False) -> Observation | None:
        if len(self._observations) > 1:
            return self._observations.popleft()
        return self._observations[0]

    def shell_at_prompt(self) -> bool | None:
        seen = self._observations[0]
        return seen.shell_in_foreground and seen.waiting_for_terminal

    def session_processes(self) -> list[ProcessInfo]:
        return []

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]:
        return []

    @property
    def whole_look(self) -> bool:
        return False

    def name_now(self, process: ProcessInfo) -> str:
        return process.comm


class WroteJustBefore(FakeObserver):
    """The kernel's answers, where the command's last words and its end reach the terminal just
    before the look that finds the shell back at its prompt (after the loop's wait found nothing)."""

    def __init__(self, terminal: FakeTerminal, words: bytes, looks_before: int) -> None:
        super().__init__([WORKING] * looks_before + [AT_PROMPT])
        self._terminal = terminal
        self._words = words
        self._looks_before = looks_before

    def observe(self, since: int | None = None, settled: bool = False) -> Observation | None:
        if self._looks_before == 0 and self._words:
            self._terminal._command_file.with_name("status").write_text("0 1\n")  # the line's end, then its D
            self._terminal._queue.extend([self._words, self._terminal._mark("D;0"), PROMPT])
            self._words = b""
        self._looks_before -= 1
        return super().observe()


class LineEndsDuringTheLook(FakeObserver):
    """The kernel's answer shows the shell back at its prompt, and the typed line leaves its status
    just as the kernel is asked (its last builtin ran between the two): the status is read after
    the look, so the shell seen reading is known to be past the line, not in a read of it."""

    def __init__(self, status_file: Path, code: int, looks_before: int) -> None:
        super().__init__([WORKING] * looks_before + [AT_PROMPT])
        self._status_file = status_file
        self._code = code
        self._looks_before = looks_before

    def observe(self, since: int | None = None, settled: bool = False) -> Observation | None:
        if self._looks_before == 0:
            self._status_file.write_text(f"{self._code}\n")
        self._looks_before -= 1
        return super().observe()


class Played:
    """One run against the played shell."""

    def __init__(self, workdir: Path, behaviours: dict[str, Behaviour], command: str,
                 observations: Sequence[Observation] = (WORKING,),
                 observer: Callable[[FakeTerminal], FakeObserver] | None = None) -> None:
        self.clock = Clock()
        self.output: list[bytes] = []
        self.terminal = FakeTerminal(self.clock, behaviours, workdir / "command")
        looks = observer(self.terminal) if observer is not None else FakeObserver(observations)
        self.run = Run(
            request(command), workdir, self.clock, self.output.append,
            start_terminal=self._start, observe_with=lambda fd, pid, marker, inputs, clock: looks,
        )
        self.terminal.boot(self.run.tracker.nonce)

    def _start(self, argv: list[str], env: dict[str, str], cwd: str, rows: int, cols: int, stdin: int | None) -> FakeTerminal:
        assert argv[1:2] == ["--init-file"], argv
        return self.terminal

    def follow(self, watcher: Watcher | None = None, wakeup: Wakeup | None = None) -> Result:
        own = wakeup or Wakeup()
        try:
            follow(self.run, own, watcher)
        finally:
            if wakeup is None:
                own.close()
        return self.run.result()


class StopsLate:
    """Asks the loop to stop (as SIGTERM would) once `after` seconds have passed."""

    def __init__(self, clock: Clock, wakeup: Wakeup, after: float) -> None:
        self._clock = clock
        self._wakeup = wakeup
        self._at = clock.now + after
        self.stopped = False

    def wait_time(self) -> float | None:
        return None

    def fds(self) -> Sequence[int]:
        return ()

    def writers(self) -> Sequence[int]:
        return ()

    def turn(self) -> int | None:
        if self._clock.now >= self._at and not self.stopped:
            self.stopped = True
            self._wakeup.trigger(signal.SIGTERM)
        return None


class ReaderGone:
    """A display whose reader went away once the command printed something."""

    def __init__(self, played: Played) -> None:
        self._played = played

    def wait_time(self) -> float | None:
        return None

    def fds(self) -> Sequence[int]:
        return ()

    def writers(self) -> Sequence[int]:
        return ()

    def turn(self) -> int | None:
        return signal.SIGPIPE if self._played.output else None


def request(command: str) -> RunRequest:
    return RunRequest(command, shell="bash", cwd="/")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    path.mkdir(mode=0o700)
    return path


def test_a_command_ends_by_its_d_with_its_exit_code_and_only_its_output(workdir: Path) -> None:
    played = Played(workdir, {"make": Behaviour(b"built\r\n", code=2)}, "make")
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SHELL_INTEGRATION, 2)
    assert result.strategy is Strategy.RICH
    assert result.output == "built\n"
    assert b"".join(played.output) == b"built\r\n"
    assert [line.startswith(RUN_LINE_START) for line in played.terminal.typed] == [True]
    assert (result.downgrades, result.reinjected, result.killed) == ((), (), ())


def test_what_the_command_wrote_just_before_the_kernel_look_is_its_output(workdir: Path) -> None:
    """A busy machine: the command's last words and its end mark reached the terminal after the
    loop's wait and before the kernel's look that finds the shell back at its prompt, the output
    quiet for longer than the idle window. They are read before anything is decided on that look:
    the words are the command's output, and its end mark, not the look, ends it."""
    behaviours = {"late": Behaviour(ends=False)}
    played = Played(workdir, behaviours, "late",
                    observer=lambda terminal: WroteJustBefore(terminal, b"still here\r\n", looks_before=30))
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SHELL_INTEGRATION, 0)
    assert result.output == "still here\n"


def test_two_commands_in_one_shell_each_get_their_own_result(workdir: Path) -> None:
    behaviours = {"first": Behaviour(b"one\r\n", code=0), "second": Behaviour(b"two\r\n", code=7)}
    played = Played(workdir, behaviours, "first")
    first = played.follow()
    played.run.next_command(request("second"))
    second = played.follow()
    assert (first.command, first.exit_code, first.output) == ("first", 0, "one\n")
    assert (second.command, second.exit_code, second.output) == ("second", 7, "two\n")
    assert second.completion_reason is Reason.SHELL_INTEGRATION
    assert played.terminal.typed[0] == played.terminal.typed[1] and played.terminal.typed[0].startswith(RUN_LINE_START)


def test_a_command_that_broke_the_hooks_gets_them_back_before_the_next(workdir: Path) -> None:
    behaviours = {"breaks": Behaviour(b"odd\r\n", code=4, keeps_d=False), "after": Behaviour(b"fine\r\n")}
    played = Played(workdir, behaviours, "breaks")
    broken = played.follow()
    assert (broken.status, broken.completion_reason, broken.exit_code) == (Status.COMPLETED, Reason.PROMPT_IDLE, 4)
    assert broken.output == "odd\n"
    assert [(d.from_, d.to) for d in broken.downgrades] == [("rich", "basic")]
    played.run.next_command(request("after"))
    healed = played.follow()
    run_line, heal_line = played.terminal.typed[0], played.terminal.typed[-1]
    assert heal_line.startswith(HEAL_LINE_START) and HEAL_RUN.encode() in heal_line and run_line not in heal_line
    assert (healed.status, healed.completion_reason, healed.exit_code) == (
        Status.COMPLETED, Reason.SHELL_INTEGRATION, 0)
    assert healed.output == "fine\n"
    assert [r.reason for r in healed.reinjected] == [d.reason for d in broken.downgrades]
    assert healed.strategy is Strategy.RICH and healed.downgrades == ()


def test_a_stop_request_on_the_wakeup_interrupts_the_command(workdir: Path) -> None:
    wakeup = Wakeup()
    try:
        behaviour = Behaviour(b"working\r\n", ends=False, meanwhile=lambda: wakeup.trigger(signal.SIGINT))
        played = Played(workdir, {"make": behaviour}, "make")
        result = played.follow(wakeup=wakeup)
    finally:
        wakeup.close()
    assert (result.status, result.completion_reason, result.signal) == (Status.INTERRUPTED, Reason.INTERRUPTED, "SIGINT")
    assert result.exit_code is None
    assert result.output == "working\n"


def test_a_watcher_whose_reader_went_away_stops_the_command_as_sigpipe(workdir: Path) -> None:
    played = Played(workdir, {"make": Behaviour(b"line\r\n", ends=False)}, "make")
    result = played.follow(ReaderGone(played))
    assert (result.status, result.signal) == (Status.INTERRUPTED, "SIGPIPE")
    assert result.output == "line\n"


def test_a_silent_command_the_kernel_shows_working_is_not_ended_by_a_timer(workdir: Path) -> None:
    wakeup = Wakeup()
    try:
        played = Played(workdir, {"make": Behaviour(ends=False)}, "make")
        late = StopsLate(played.clock, wakeup, after=120.0)
        result = played.follow(late, wakeup)
    finally:
        wakeup.close()
    # No output for two minutes (past the silence and no-output fallbacks): only the stop ended it.
    assert late.stopped and (result.status, result.signal) == (Status.INTERRUPTED, "SIGTERM")


def test_a_command_that_lost_every_mark_ends_by_its_lines_status_and_nothing_is_typed(workdir: Path) -> None:
    behaviours = {"unhook": Behaviour(b"gone\r\n", code=5, keeps_d=False, prompt_marks=False)}
    played = Played(workdir, behaviours, "unhook", observations=(WORKING, WORKING, AT_PROMPT))
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 5)
    assert result.output == "gone\n"  # the bare prompt is the shell's
    assert [(d.from_, d.to) for d in result.downgrades] == [("rich", "none")]
    assert len(played.terminal.typed) == 1, "nothing was typed after the command line"


def test_the_shell_reading_before_its_line_is_over_is_the_commands_read_and_gets_nothing(workdir: Path) -> None:
    """`read -n1 -s`, `read -e`, `select`: the shell reads exactly as at its prompt, but the line
    has left no status: an input wait, and not a byte typed into it."""
    behaviours = {"read -n1 -s -p 'Continue?' k": Behaviour(b"Continue?", ends=False)}
    played = Played(workdir, behaviours, "read -n1 -s -p 'Continue?' k", observations=(AT_PROMPT,))
    result = played.follow()
    assert (result.status, result.completion_reason, result.prompt) == (
        Status.INPUT_REQUIRED, Reason.INPUT_WAIT, "Continue?")
    assert len(played.terminal.typed) == 1, "nothing was typed into the read"


def test_an_end_mark_read_as_the_shell_leaves_is_the_shells(workdir: Path) -> None:
    """fish's `exit 3` sends D on its way out; by the time the mark is read the terminal has no
    foreground group at all (0), which only the leaving shell, its session's leader, can cause."""
    played = Played(workdir, {"make": Behaviour(b"built\r\n", code=3)}, "make")
    played.terminal.foreground = lambda: 0  # type: ignore[method-assign]
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SHELL_INTEGRATION, 3)
    assert result.downgrades == () and result.message == "the command exited with status 3"


def test_the_shell_exiting_ends_the_command_with_the_shells_status(workdir: Path) -> None:
    played = Played(workdir, {"exit 3": Behaviour(b"bye\r\n", exits_shell=3)}, "exit 3")
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SHELL_EXITED, 3)
    assert result.output == "bye\n"  # bash's own word "exit" is taken back out
    assert not played.run.shell_alive()


def test_one_look_is_gathered_kernel_first_then_the_terminal_then_the_lines_status(workdir: Path) -> None:
    behaviours = {"unhook": Behaviour(b"went\r\n", ends=False)}
    played = Played(workdir, behaviours, "unhook",
                    observer=lambda terminal: LineEndsDuringTheLook(workdir / "status", 6, looks_before=10))
    result = played.follow()
    assert (result.status, result.completion_reason, result.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 6)
    assert result.output == "went\n"
    assert len(played.terminal.typed) == 1, "nothing was typed to ask"


def test_a_line_is_typed_as_the_terminal_takes_it_and_the_loop_never_waits_for_it(workdir: Path) -> None:
    """A holder's callers are served by the same loop: typing must never hold it up."""
    played = Played(workdir, {"make": Behaviour(b"built\r\n", code=0)}, "make")
    played.terminal.takes_nothing_for = 3
    result = played.follow()
    assert (result.status, result.exit_code, result.output) == (Status.COMPLETED, 0, "built\n")
    assert played.terminal.write_timeouts and set(played.terminal.write_timeouts) == {0.0}
    assert [line.startswith(RUN_LINE_START) for line in played.terminal.typed] == [True], "typed once, whole"

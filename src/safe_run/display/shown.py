"""A display following a run in the run's own loop (`runner.execute`, `loop.follow`): its timer,
the downgrades as they happen, SIGPIPE when its reader went away and, for a person's own run
(`interactive`), their keys, their terminal's size and the command's waits for them.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from typing import Protocol

from ..core.evidence import Observation
from ..core.reading import Reading, password_read
from ..core.request import RunRequest
from ..core.result import Downgrade, Reason, ShellInfo
from ..core.tracker import CommandTracker, Decision
from .interface import Display

# A line given to a password read reaches the terminal within microseconds and is read at once;
# the next line waits at least this long, and for a fresh look that the command reads again.
LINE_SETTLE_S = 0.02
# How often a person's run with such a line kept back looks whether the command reads again.
AHEAD_RETRY_S = 0.05


class Run(Protocol):
    """What a display follows and types into: `runner.Run`."""

    @property
    def request(self) -> RunRequest: ...
    @property
    def shell(self) -> ShellInfo: ...
    @property
    def started_at(self) -> float: ...
    @property
    def tracker(self) -> CommandTracker: ...
    @property
    def finish(self) -> Decision | None: ...
    @property
    def waiting(self) -> Decision | None: ...
    @property
    def downgrades(self) -> list[Downgrade]: ...
    @property
    def last_seen(self) -> Observation | None: ...
    def reading(self, fresh: bool = True) -> Reading: ...
    def answer(self, data: bytes) -> int: ...
    def resize(self, rows: int, columns: int) -> None: ...
    def hold(self, stopped: bool, size: tuple[int, int] | None = None) -> None: ...
    def unread_input(self) -> int | None: ...


class Shown:
    """A display following the run: its timer, the downgrades as they happen, and SIGPIPE when
    its reader went away. A person's own run (an interactive display) also types: their keys go
    to the command, their terminal's size to its terminal, and the display hears when the
    command waits for them."""

    def __init__(self, run: Run, display: Display, clock: Callable[[], float]) -> None:
        self._run = run
        self._display = display
        self._clock = clock
        self._reported = 0
        self._keys = bytearray()  # given to the command, not yet taken by its terminal
        self._ahead = bytearray()  # typed, not yet given: lines after a password's
        self._line_given_at: float | None = None  # when a line went to a password read
        self._holding = False  # the command works: what the person types stays in their terminal
        self._secret_asked = False  # then what it never read is dropped at the end, not left there
        display.started(run.request.command, run.shell, run.tracker.strategy, run.started_at)
        display.holding(run.hold)

    def wait_time(self) -> float | None:
        self._report_downgrades()
        wait = self._display.wait(self._clock())
        return min(wait, AHEAD_RETRY_S) if self._ahead and wait is not None else wait

    def writers(self) -> Sequence[int]:
        return ()

    def fds(self) -> Sequence[int]:
        return () if self._holding else self._display.input_fds()

    def turn(self) -> int | None:
        self._report_downgrades()
        if self._display.broken:
            return signal.SIGPIPE
        if self._holding and self._run.reading(fresh=False).reading:
            self._holding = False  # the last look saw the command wait on its terminal again
        if not self._holding and self._display.input_ready():
            if self._run.reading().reading:
                self._ahead += self._display.typed()
            else:
                self._holding = True  # left in the person's terminal until the command reads
        self._give_ahead()
        self._keys += self._display.control_keys()
        if self._keys:
            del self._keys[: self._run.answer(bytes(self._keys))]
        size = self._display.resized()
        if size is not None:
            self._run.resize(*size)
        self._display.waiting(self._prompt())
        self._note_secret()
        self._display.tick(self._clock())
        return None

    def stop(self) -> None:
        """The run is decided (or failed): what it said last, and the terminal as it was. Keys the
        person typed after the command asked for a secret that it never read are dropped: left in
        their terminal, their own shell would read a password as a command line."""
        self._report_downgrades()
        self._note_secret()
        if self._secret_asked:
            self._display.drop_typed(len(self._ahead))
        self._display.stop()

    def _give_ahead(self) -> None:
        """Give the command what the person typed. A password is read one line per prompt, and a
        line typed behind it is kept here until the command reads that line and asks again:
        given at once, it would wait in the terminal for whoever reads next, which after a last
        wrong password (sudo gives up) is the shell, reading it as a command line."""
        if not self._ahead:
            return
        given = self._line_given_at
        now = self._run.reading(fresh=given is not None)
        if not now.reading:
            return
        if not (now.secret and now.canonical):
            self._keys += self._ahead
            self._ahead.clear()
            return
        if given is not None and (self._clock() - given < LINE_SETTLE_S or self._run.unread_input()):
            return  # the last line given is not read yet, or may not have reached the terminal
        ends = [at for at in (self._ahead.find(brk) for brk in (b"\r", b"\n")) if at >= 0]
        cut = min(ends) + 1 if ends else len(self._ahead)
        self._keys += self._ahead[:cut]
        del self._ahead[:cut]
        self._line_given_at = self._clock() if ends else None

    def _prompt(self) -> str | None:
        """What the command waits for the person at: None when it does not; "" when there is no
        prompt to quote (a full screen, whose cursor line is a line of its drawing: top's, vim's)."""
        waiting, seen = self._run.waiting, self._run.last_seen
        if waiting is None or waiting.reads_keyboard or (seen is not None and seen.keyless):
            return None  # not waiting for the person's keys: on the pipe they gave it, it works for them
        screen = self._run.tracker.screen
        return "" if waiting.reason is Reason.ALTERNATE_SCREEN or screen.drawn_in_place() else waiting.prompt or ""

    def _note_secret(self) -> None:
        """Whether the command asks for a secret now: its wait says so, or its terminal reads a line
        without echo."""
        run, seen = self._run, self._run.last_seen
        asked = (run.waiting is not None and run.waiting.secret) or (run.finish is not None and run.finish.secret)
        self._secret_asked |= asked or (seen is not None and not seen.shell_in_foreground and password_read(seen))

    def _report_downgrades(self) -> None:
        for downgrade in self._run.downgrades[self._reported:]:
            self._display.downgraded(downgrade)
        self._reported = len(self._run.downgrades)

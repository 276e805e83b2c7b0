"""Pretty, stdout a terminal: the command's bytes as the terminal would show them, and a status line."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

from ..environment import Environment
from ..core.render import print_summary
from ..core.result import Downgrade, Result, ShellInfo, Strategy
from .interface import Display, Hold
from .status_line import STATUS_INTERVAL, QuietKeys, StatusLine, elapsed
from .streams import Out
from .terminal_filter import FULL_SCREEN_HIDDEN, TerminalFilter

# The command's bytes are passed on at most this often (or at this size).
LIVE_INTERVAL = 0.05
LIVE_LIMIT = 64 * 1024


class TerminalDisplay(Display):
    """The command's output on the terminal as it comes, a status line on stderr, then the summary."""

    def __init__(self, env: Environment, clock: Callable[[], float]) -> None:
        self._env = env
        presentation = env.presentation
        self._clock = clock
        self._out = Out(env.stdout)
        self._filter = TerminalFilter(presentation.command_colour)
        self._pending = bytearray()
        self._status = StatusLine(env.stderr, presentation.colour, env.unicode) if presentation.status_line else None
        self._keys = QuietKeys.for_streams(env.stdin, env.stderr) if self._status is not None else None
        self._catching_tstp = False  # SIGTSTP (Ctrl-Z) is handled by `_suspend` during the run
        self._line_start = True  # the last thing written to stdout ended a line
        self._last = float("-inf")
        self._drawn = float("-inf")
        self._started_at: float | None = None
        self._strategy: Strategy | None = None
        self._shell = ""
        self._downgraded = False
        self._stopped = False
        self._hold: Hold | None = None  # stops the command with safe-run, and lets it go on
        self.on_output = self._output

    @property
    def broken(self) -> bool:
        return self._out.broken

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        self._started_at, self._strategy, self._shell = started_at, strategy, shell.name
        if self._status is not None:
            self._catch_suspend()
            if self._keys is not None:
                self._keys.quiet()
        self._draw(self._clock())

    def holding(self, hold: Hold) -> None:
        self._hold = hold

    def _catch_suspend(self) -> None:
        """Ctrl-Z: take the status line off the screen (and give echo back) before stopping."""
        try:
            if signal.getsignal(signal.SIGTSTP) == signal.SIG_DFL:  # not ignored, nor someone else's
                signal.signal(signal.SIGTSTP, self._suspend)
                self._catching_tstp = True
        except (ValueError, OSError, AttributeError):
            pass  # not the main thread, or no job control here

    def _suspend(self, signum: int, frame: object) -> None:
        if self._hold is not None:
            self._hold(True, None)
        if self._status is not None:
            self._status.clear()
        if self._keys is not None:
            self._keys.restore()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        # Continued (fg or bg): carry on as before, quietly only if in the foreground again.
        if self._hold is not None:
            self._hold(False, None)
        signal.signal(signal.SIGTSTP, self._suspend)
        if self._keys is not None and not self._stopped:
            self._keys.quiet()

    def _output(self, data: bytes) -> None:
        self._pending += self._filter.feed(data)

    def downgraded(self, downgrade: Downgrade) -> None:
        self._strategy = Strategy(downgrade.to)
        self._downgraded = True
        self._draw(self._clock())

    def _output_due(self, now: float) -> float | None:
        if not self._pending:
            return None
        return now if len(self._pending) >= LIVE_LIMIT else self._last + LIVE_INTERVAL

    def wait(self, now: float) -> float | None:
        times = [t for t in (self._output_due(now), self._status_due()) if t is not None]
        return max(0.0, min(times) - now) if times else None

    def _status_shown(self) -> bool:
        """The status line may be drawn: the run is on and the cursor is at the start of a line."""
        return self._status is not None and self._started_at is not None and self._line_start and not self._stopped

    def _status_due(self) -> float | None:
        return self._drawn + STATUS_INTERVAL if self._status_shown() else None

    def tick(self, now: float) -> None:
        due = self._output_due(now)
        if due is not None and now >= due:
            self._write_output(now, self._take())
        status_due = self._status_due()
        if status_due is not None and now >= status_due:
            self._draw(now)

    def _take(self) -> bytes:
        data, self._pending = bytes(self._pending), bytearray()
        return data

    def _write_output(self, now: float, data: bytes) -> None:
        self._last = now
        if not data:
            return
        if self._status is not None:
            self._status.clear()
        self._out.write_bytes(data)
        self._line_start = data.endswith(b"\n")
        if self._line_start:
            self._draw(now)

    def _draw(self, now: float) -> None:
        if not self._status_shown():
            return
        assert self._status is not None and self._started_at is not None
        self._drawn = now
        if not self._status.in_front():
            return
        if self._keys is not None:
            self._keys.quiet()  # again after `fg` of the run in the background, where echo was the shell's
        strategy = self._strategy.value if self._strategy else "?"
        if self._downgraded:
            strategy += " (downgraded)"
        self._status.draw(f"running · {elapsed(now - self._started_at)} · {self._shell} · strategy {strategy}")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._write_output(self._clock(), self._take())
        if self._status is not None:
            self._status.clear()
        if self._keys is not None:
            self._keys.restore()
        if self._catching_tstp:
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            self._catching_tstp = False
        if self._filter.coloured:
            self._out.write_bytes(b"\x1b[0m")

    def finished(self, result: Result) -> None:
        self.stop()
        if not self._line_start:
            self._out.write_bytes(b"\n")
            self._line_start = True
        notes = []
        if self._filter.hid_alternate:
            notes.append(FULL_SCREEN_HIDDEN)
        print_summary(result, self._env, omitted=0, notes=notes)

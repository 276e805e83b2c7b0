"""Stop signals from the moment the command line starts, so that every one of them gets an answer.

Python's own handling (KeyboardInterrupt for SIGINT, death for SIGTERM and SIGHUP) would end
safe-run without a result whenever a signal comes before a run installs its handlers. The command
line installs these instead: until a command starts, a stop signal ends safe-run with an answer
saying nothing ran; once a run is under way (`keep`), signals are kept for the run, which stops
its command and reports.
"""

from __future__ import annotations

import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """A stop signal arrived while nothing was running (not an Exception: no handler may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class StopSignals:
    """The process's stop-signal handlers while the command line runs."""

    def __init__(self) -> None:
        self.arrived: list[int] = []
        self._deferring = False

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._deferring:
            self.arrived.append(signum)
            return
        raise Interrupted(signum)

    def keep(self) -> list[int]:
        """From now on keep signals instead of ending; the list they go to, for a run to act on.

        Called when a command is about to start, and when an answer is being written: it is never
        undone, because after either the process has only its answer left to give.
        """
        self._deferring = True
        return self.arrived

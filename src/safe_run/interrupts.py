"""Stop signals from the moment the command line starts, so that every one of them gets an answer.

Python's own handling (KeyboardInterrupt for SIGINT, death for SIGTERM and SIGHUP) would end
safe-run without a result whenever a signal comes before a run installs its handlers. The command
line installs these instead: until a command starts, a stop signal ends safe-run with an answer
saying nothing ran; once a run is under way (`keep`), signals are kept for the run, which stops
its command and reports.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def signals_to_fd(pending: list[int] | None = None) -> Iterator[tuple[int, list[int]]]:
    """Turn stop signals into a readable fd (so the loop wakes) and a list of what arrived.

    `pending` is the list to add to, when the caller kept signals of its own before this.
    """
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    os.set_blocking(read_fd, False)
    pending = [] if pending is None else pending
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    old_wakeup = signal.set_wakeup_fd(write_fd)
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda signum, frame: pending.append(signum))
    try:
        yield read_fd, pending
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(old_wakeup)
        os.close(read_fd)
        os.close(write_fd)

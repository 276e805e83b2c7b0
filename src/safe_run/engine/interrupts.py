"""Stop requests for a waiting loop, and the stop-signal handlers of the processes that own them.

A loop that follows a command (a foreground run, a session's holder, a caller waiting on a
session) watches a `Wakeup`: a pipe it polls, and the list of what asked it to stop. Library
code never installs a signal handler; the processes that own their signals (the command line, a
holder) install `StopSignals`, which feed their `Wakeup`, and any thread may `trigger` one.

Python's own handling (KeyboardInterrupt for SIGINT, death for SIGTERM and SIGHUP) would end
safe-run without a result whenever a signal comes before a run is under way. The command line
installs these handlers at once: until a command starts, a stop signal ends safe-run with an
answer saying nothing ran; once a run is under way (`keep`), signals are kept for the run, which
stops its command and reports.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

from . import polling

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# The keys with which a terminal sends these signals to its foreground (its interrupt and quit
# characters): what a person's Ctrl-C or Ctrl-\ to safe-run is, typed into the command's terminal.
KEYS: dict[int, bytes] = {signal.SIGINT: b"\x03", signal.SIGQUIT: b"\x1c"}


class Interrupted(BaseException):
    """A stop signal arrived while nothing was running (not an Exception: no handler may swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


class Wakeup:
    """What a waiting loop watches besides its work: a descriptor that becomes readable, and the
    stop requests (signal numbers) that made it so. Safe to trigger from any thread or handler."""

    def __init__(self) -> None:
        self.fd, self._write_fd = os.pipe()
        os.set_blocking(self.fd, False)
        os.set_blocking(self._write_fd, False)
        self.pending: list[int] = []
        self.passed_on: list[int] = []  # stop requests the command got instead: a person's Ctrl-C
        self.released = False

    def release(self) -> None:
        """Ask the waiter to stop waiting and leave the command alone: its caller went away, and
        the command is not the caller's to stop (a named shell's)."""
        self.released = True
        try:
            os.write(self._write_fd, b"\0")
        except OSError:
            pass

    def trigger(self, signum: int) -> None:
        """Ask the loop to stop its command, as `signum` to safe-run would."""
        self.pending.append(signum)
        try:
            os.write(self._write_fd, b"\0")
        except OSError:
            pass  # full: the loop is woken already

    def pass_on(self) -> int:
        """The first stop request is the command's (its terminal got it), not a stop: taken off."""
        signum = self.pending.pop(0)
        self.passed_on.append(signum)
        return signum

    @property
    def write_fd(self) -> int:
        return self._write_fd

    def drain(self) -> None:
        polling.drain(self.fd)

    def close(self) -> None:
        for fd in (self.fd, self._write_fd):
            try:
                os.close(fd)
            except OSError:
                pass


class StopSignals:
    """A process's own stop-signal handlers: they feed its `Wakeup` once a run is under way.

    Installed by the processes that own their signals (the command line, a session holder), never
    by library code. Every signal also wakes the loop (a display redraws after Ctrl-Z).
    """

    def __init__(self, wakeup: Wakeup | None = None) -> None:
        self.wakeup = wakeup or Wakeup()
        self._deferring = False

    def install(self, deferring: bool = False) -> None:
        self._deferring = deferring
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)
        signal.set_wakeup_fd(self.wakeup.write_fd, warn_on_full_buffer=False)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self._deferring:
            self.wakeup.pending.append(signum)
            return
        raise Interrupted(signum)

    def keep(self) -> None:
        """From now on keep signals instead of ending: they go to `wakeup.pending`, for a run to act on.

        Called when a command is about to start, and when an answer is being written: it is never
        undone, because after either the process has only its answer left to give.
        """
        self._deferring = True

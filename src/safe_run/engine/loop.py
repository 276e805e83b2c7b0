"""The one loop that follows a command to its decision, whoever waits for it.

A foreground JSON run, a run shown to a person, and a session's holder differ only in what they do
between two steps of the run (nothing; redraw a status line; serve callers) and in what else may
wake the loop (nothing; a display's timer; callers' sockets). Each brings a `Watcher` for that,
and the loop itself is the same: wait for the terminal, the shell, the engine's next deadline,
the `Wakeup` or the watcher, let the run act, and pass a stop request on to the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from .interrupts import Wakeup
from ..core.tracker import Decision


class Followed(Protocol):
    """What the loop drives: one step at a time, and a stop when someone asks for one."""

    def step(
        self, timeout: float | None, wake_fds: Sequence[int] = (), wake_writers: Sequence[int] = (),
    ) -> Decision | None: ...

    def interrupt(self, signum: int) -> bool:
        """Stop as `signum` asks; True when the signal was the command's and went to it instead."""

    @property
    def woken(self) -> frozenset[int]:
        """Which of the wake descriptors the last step's wait found readable."""


class Watcher(Protocol):
    """Whoever follows the run besides the loop: when it needs a turn, and what to do in it."""

    def wait_time(self) -> float | None:
        """Seconds until the watcher needs a turn even if nothing happens (None: never)."""

    def fds(self) -> Sequence[int]:
        """Descriptors that wake the loop for the watcher (callers' sockets)."""

    def writers(self) -> Sequence[int]:
        """Descriptors that wake the loop once they take more: answers still going out."""

    def turn(self) -> int | None:
        """Act after a step; a signal number asks the run to stop as that signal would."""


def follow(run: Followed, wakeup: Wakeup, watcher: Watcher | None = None) -> Decision:
    """Drive `run` until its command is decided, and return the decision."""
    while True:
        timeout = None if watcher is None else watcher.wait_time()
        fds = (wakeup.fd,) if watcher is None else (wakeup.fd, *watcher.fds())
        finish = run.step(timeout, fds, () if watcher is None else watcher.writers())
        if finish is not None:
            return finish
        if wakeup.pending:
            if run.interrupt(wakeup.pending[0]):
                wakeup.pass_on()
            continue
        if wakeup.fd in run.woken:
            wakeup.drain()  # a signal someone else handles (Ctrl-Z for a display) woke the loop
        stop = None if watcher is None else watcher.turn()
        if stop is not None:
            run.interrupt(stop)

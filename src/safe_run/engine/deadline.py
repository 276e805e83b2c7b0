"""One bound for a whole sequence of waits, passed down to each of them.

A stop made of steps that are each bounded on their own ends within the sum of their bounds,
which grows with every step added and is nowhere written down. A `Deadline` is made once, when
the stop begins; each step waits for at most its own share and never beyond what is left, and
the steps that ran out are named, so that a slow stop says where its time went.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Deadline:
    """`seconds` from now on `clock`; the names of the steps that found no time left."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._at = clock() + seconds
        self.seconds = seconds
        self.ran_out: list[str] = []

    def left(self) -> float:
        return max(0.0, self._at - self._clock())

    def share(self, most: float) -> float:
        """What one step may wait: its own bound `most`, or what is left if that is less."""
        return min(most, self.left())

    def note(self, step: str, finished: bool) -> None:
        """Record that `step` did not finish in the time it was given (nothing when it did)."""
        if not finished:
            self.ran_out.append(step)

    def summary(self) -> str | None:
        """One line naming the steps cut short, for the process's stderr; None when none was."""
        if not self.ran_out:
            return None
        return f"stopped within {self.seconds:g} s, cutting short: {'; '.join(self.ran_out)}"

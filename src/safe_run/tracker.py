"""Following one command through the shell, from marks and output to a decision.

This is pure: the run loop feeds it parsed items, the shell's exit and the current time, and acts on
what it answers. Nothing here reads a clock or touches a file descriptor, so every order of events
can be tested in microseconds.

Only marks that carry this run's nonce are trusted. Anything else that looks like a mark (a
command printing `ESC ] 633 ; D ; 0 BEL`, a prompt theme emitting its own 133 sequences) is an
escape sequence in the output and is dropped with the other escapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .output import HeadTail
from .result import Reason, Strategy
from .sequences import Mark, Osc, decode_mark

# Kept from the shell's start-up so that a shell that dies early can say why.
STARTUP_TAIL_BYTES = 4096


class Phase(Enum):
    STARTING = "starting"  # waiting for the first trusted prompt
    TYPED = "typed"  # the run line was sent, waiting for C
    RUNNING = "running"  # between C and D: output belongs to the command
    DONE = "done"


@dataclass(frozen=True)
class Send:
    """Type these bytes into the terminal."""

    data: bytes


@dataclass(frozen=True)
class Finish:
    """The run is decided."""

    reason: Reason
    exit_code: int | None
    strategy: Strategy | None
    error: str | None = None


Action = Send | Finish


class CommandTracker:
    """The rich strategy: the first trusted prompt starts the command, C and D frame its output."""

    def __init__(self, nonce: str, run_line: bytes, capture: HeadTail, activation_timeout: float) -> None:
        self._nonce = nonce
        self._run_line = run_line
        self.capture = capture
        self.startup = HeadTail(0, STARTUP_TAIL_BYTES)
        self.phase = Phase.STARTING
        self._activation_timeout = activation_timeout
        self._started_at: float | None = None

    def start(self, now: float) -> None:
        self._started_at = now

    def next_deadline(self) -> float | None:
        """When the loop must call `tick` even if nothing arrives."""
        if self.phase is Phase.STARTING and self._started_at is not None:
            return self._started_at + self._activation_timeout
        return None

    def feed(self, item: bytes | Osc) -> list[Action]:
        if isinstance(item, bytes):
            self._on_output(item)
            return []
        mark = decode_mark(item)
        if mark is None or not self._trusted(mark):
            return []
        return self._on_mark(mark)

    def tick(self, now: float) -> list[Action]:
        deadline = self.next_deadline()
        if deadline is None or now < deadline:
            return []
        self.phase = Phase.DONE
        return [
            Finish(
                Reason.ERROR,
                None,
                None,
                error=f"shell integration did not start within {self._activation_timeout:g} s",
            )
        ]

    def shell_exited(self, exit_code: int) -> Finish:
        """The shell is gone: after the command started this is the command's own end."""
        before = self.phase
        self.phase = Phase.DONE
        if before is Phase.RUNNING:
            return Finish(Reason.SHELL_EXITED, exit_code, Strategy.RICH)
        last_words = self.startup.text().strip()
        detail = f": {last_words.splitlines()[-1]}" if last_words else ""
        return Finish(
            Reason.ERROR,
            None,
            None,
            error=f"the shell exited with status {exit_code} before the command started{detail}",
        )

    def _trusted(self, mark: Mark) -> bool:
        return mark.family == 633 and bool(mark.args) and mark.args[-1] == self._nonce

    def _on_output(self, data: bytes) -> None:
        if self.phase is Phase.RUNNING:
            self.capture.write(data)
        elif self.phase is not Phase.DONE:
            self.startup.write(data)

    def _on_mark(self, mark: Mark) -> list[Action]:
        if self.phase is Phase.STARTING and mark.kind == "B":
            self.phase = Phase.TYPED
            return [Send(self._run_line)]
        if self.phase is Phase.TYPED and mark.kind == "C":
            self.phase = Phase.RUNNING
            return []
        if self.phase is Phase.RUNNING and mark.kind == "D":
            self.phase = Phase.DONE
            return [Finish(Reason.SHELL_INTEGRATION, _exit_code(mark.args[:-1]), Strategy.RICH)]
        return []


def _exit_code(args: tuple[str, ...]) -> int | None:
    """D's code field; absent or garbled means the shell did not say."""
    try:
        return int(args[0])
    except (IndexError, ValueError):
        return None

"""The one interface every display has: what the run hands it, and when."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.result import Downgrade, Result, ShellInfo, Strategy

Hold = Callable[[bool, tuple[int, int] | None], None]
"""Stops the command with safe-run (True), or lets it go on (False) in a terminal of the size given
(rows, columns; None: the size it had)."""


class Display:
    """A display that shows nothing: the shape every display has, and what each call means."""

    on_output: Callable[[bytes], None] | None = None  # the command's raw bytes, as they arrive

    @property
    def broken(self) -> bool:
        """The reader of stdout went away; the run should stop as a pipeline's writer would."""
        return False

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        """The shell runs; `started_at` is in the clock given to the display."""

    def holding(self, hold: Hold) -> None:
        """How the command is stopped with safe-run (True) and let go on with it (False): a
        person's Ctrl-Z, then `fg`."""

    def downgraded(self, downgrade: Downgrade) -> None:
        """The strategy stepped down."""

    def wait(self, now: float) -> float | None:
        """How long the run may wait for the command before `tick` has work (None: no limit)."""
        return None

    def tick(self, now: float) -> None:
        """Write what is due."""

    def input_fds(self) -> Sequence[int]:
        """Descriptors on which the person types to the command (a run that is theirs)."""
        return ()

    def input_ready(self) -> bool:
        """The person typed something not read yet (it stays theirs until `typed` takes it)."""
        return False

    def typed(self) -> bytes:
        """What the person typed since the last call, for the command."""
        return b""

    def control_keys(self) -> bytes:
        """Control keys the person pressed that came as signals (Ctrl-\\), as the command's bytes."""
        return b""

    def resized(self) -> tuple[int, int] | None:
        """The person's terminal's new size (rows, columns), once, after it changed."""
        return None

    def drop_typed(self, kept: int = 0) -> None:
        """The command asked for a secret: what the person typed that it never read is thrown away,
        never left for their own shell to read as a command line (nor kept in its history).
        `kept`: bytes already taken from their terminal but never given to the command."""

    def waiting(self, prompt: str | None) -> None:
        """The command waits for the person's input at `prompt`; None: it does not (any more)."""

    def stop(self) -> None:
        """The run is over (or failed): write what is held and leave the terminal as it was."""

    def finished(self, result: Result) -> None:
        """Show the result."""

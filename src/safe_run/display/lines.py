"""Pretty, stdout a pipe, a file or a CI log: the command's output as cleaned lines, then the summary."""

from __future__ import annotations

from collections.abc import Callable

from ..environment import Environment
from ..core.result import Result
from ..core.render import print_summary
from .interface import Display
from .pieces import OUTPUT_INTERVAL, Pieces
from .streams import Out

# Cleaned output for people keeps at most this much between writes, so that in practice nothing
# is dropped from a log, while memory stays bounded.
PRETTY_WINDOW = 16 * 1024 * 1024


class LineDisplay(Display):
    """The command's output on stdout a line at a time, as in the JSON `output`; no status line."""

    def __init__(self, env: Environment, limit: int, clock: Callable[[], float]) -> None:
        self._env = env
        self._clock = clock
        self._out = Out(env.stdout)
        self._pieces = Pieces(max(limit, PRETTY_WINDOW))
        self._line_start = True  # the last thing written to stdout ended a line
        self._last = float("-inf")
        self._stopped = False
        # Bytes of output left out of what this display wrote (a burst beyond PRETTY_WINDOW): the
        # result's own count is about the head and tail it keeps, not about what was shown here.
        self._omitted = 0
        self.on_output = self._output

    @property
    def broken(self) -> bool:
        return self._out.broken

    def _output(self, data: bytes) -> None:
        self._pieces.write(data, self._clock())

    def _output_due(self) -> float | None:
        due = self._pieces.due()
        return None if due is None else max(due, self._last + OUTPUT_INTERVAL)

    def wait(self, now: float) -> float | None:
        due = self._output_due()
        return None if due is None else max(0.0, due - now)

    def tick(self, now: float) -> None:
        due = self._output_due()
        if due is not None and now >= due:
            self._write_output(now, self._encoded(self._pieces.take(now)))

    def _write_output(self, now: float, data: bytes) -> None:
        self._last = now
        if data:
            self._out.write_bytes(data)
            self._line_start = data.endswith(b"\n")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._write_output(self._clock(), self._encoded(self._pieces.take(float("-inf"))))

    def finished(self, result: Result) -> None:
        self.stop()
        self.finish_output(result)
        print_summary(result, self._env, omitted=self._omitted)

    @property
    def omitted(self) -> int:
        return self._omitted

    def finish_output(self, result: Result) -> None:
        """The last of the output, ending its line, before a summary; one for a person's terminal
        waits for a pipe's reader to show it first (`Out.wait_until_read`)."""
        self._write_output(self._clock(), self._encoded(self._pieces.take_rest(result.output)))
        if not self._line_start:
            self._out.write_bytes(b"\n")
            self._line_start = True
        if self._env.stderr_isatty:
            self._out.wait_until_read()

    def _encoded(self, piece: tuple[str, int] | None) -> bytes:
        if piece is None:
            return b""
        text, dropped = piece
        self._omitted += dropped
        return text.encode("utf-8", "replace")

"""`--format jsonl`: the run as events, one JSON object per line."""

from __future__ import annotations

import json
from collections.abc import Callable

from ..core import events
from ..environment import Environment
from ..core.result import Downgrade, Result, ShellInfo, Status, Strategy
from .interface import Display
from .pieces import OUTPUT_INTERVAL, Pieces
from .streams import Out, write_err


class JsonlDisplay(Display):
    """`--format jsonl`: one JSON object per line on stdout, the `finished` one always last."""

    def __init__(self, env: Environment, limit: int, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._out = Out(env.stdout)
        self._err = env.stderr
        self._pieces = Pieces(limit)
        self._started_at: float | None = None
        self._last = float("-inf")
        self.on_output = self._output

    @property
    def broken(self) -> bool:
        return self._out.broken

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        self._started_at = started_at
        self._send(events.started_event(command, shell, strategy))

    def _output(self, data: bytes) -> None:
        self._pieces.write(data, self._clock())

    def downgraded(self, downgrade: Downgrade) -> None:
        self._flush(self._clock(), self._pieces.take(float("-inf")))  # what came before it, first
        self._send(events.downgrade_event(downgrade))

    def wait(self, now: float) -> float | None:
        due = self._pieces.due()
        return None if due is None else max(0.0, max(due, self._last + OUTPUT_INTERVAL) - now)

    def tick(self, now: float) -> None:
        due = self._pieces.due()
        if due is not None and now >= max(due, self._last + OUTPUT_INTERVAL):
            self._flush(now, self._pieces.take(now))

    def stop(self) -> None:
        self._flush(self._clock(), self._pieces.take(float("-inf")))

    def finished(self, result: Result) -> None:
        self._flush(self._clock(), self._pieces.take_rest(result.output))
        self._send(events.finished_event(result))
        if result.message and result.status is Status.ERROR:
            write_err(f"safe-run: {result.message}\n", self._err)

    def _flush(self, now: float, piece: tuple[str, int] | None) -> None:
        if piece is None:
            return
        self._last = now
        at = 0.0 if self._started_at is None else now - self._started_at
        self._send(events.output_event(at, *piece))

    def _send(self, event: dict[str, object]) -> None:
        self._out.write_text(json.dumps(event, ensure_ascii=False) + "\n")

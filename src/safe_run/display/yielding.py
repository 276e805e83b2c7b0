"""A `--yield-after` run, or a command of a named shell (`--in`), shown in pretty output: its
output as it comes, and a status line, until the command ends or the bound passes.

The command runs in a session's holder, which hands its output out with each answer; so the
watcher asks for an answer every fraction of a second (each wakes the moment the command ends)
and shows what came. The final result holds the whole output again: only what was not shown yet
is written after it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from ..environment import Environment
from ..core.result import Result, Status
from .status_line import QuietKeys, StatusLine, elapsed
from .streams import Out
from .terminal_filter import FULL_SCREEN_HIDDEN

# How long each answer waits at most: how often the screen is brought up to date.
STEP_S = 0.25

Start = Callable[[float], Result]
Ask = Callable[[str, float], Result]


def follow_yielding(start: Start, ask: Ask, bound: float | None, env: Environment, about: str,
                    clock: Callable[[], float] = time.monotonic) -> Result:
    """The answer to give, with its output already written; the caller writes the summary.
    `bound`: None follows the command to its end (or its input wait); `about`: the status line's
    last words, where the command runs."""
    status = StatusLine(env.stderr, env.presentation.colour, env.unicode) if env.presentation.status_line else None
    keys = QuietKeys.for_streams(env.stdin, env.stderr) if status is not None else None
    if keys is not None:
        keys.quiet()
    began = clock()
    shown = ""
    out = Out(env.stdout)
    try:
        result = start(_step(bound, 0.0))
        while True:
            if result.session_id is None:  # the end: its output is the whole output again
                rest = result.output[len(shown):] if result.output.startswith(shown) else ""
                _show("" if result.alternate_screen else rest, status, out)
                return replace(result, output=shown + rest)
            _show("" if result.alternate_screen else result.output, status, out)
            shown += result.output
            step = _step(bound, clock() - began)
            if result.status is not Status.RUNNING or step <= 0:
                return replace(result, output="")
            if status is not None:
                status.draw(f"running · {elapsed(clock() - began)} · {about}")
            result = ask(result.session_id, step)
    finally:
        if status is not None:
            status.clear()
        if keys is not None:
            keys.restore()


def summary_notes(result: Result) -> list[str]:
    """What the summary says of the output that was not shown: a full screen's text (an editor's, a
    pager's), from the first answer that had one on, which cleaned of its cursor moves would
    land scattered over the screen."""
    return [FULL_SCREEN_HIDDEN] if result.alternate_screen else []


def _step(bound: float | None, spent: float) -> float:
    """How long the next answer may wait: STEP_S, or what is left of the bound."""
    return STEP_S if bound is None else min(STEP_S, bound - spent)


def _show(text: str, status: StatusLine | None, out: Out) -> None:
    if not text:
        return
    if status is not None:
        status.clear()
    out.write_text(text)

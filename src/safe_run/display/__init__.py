"""Following a run while it happens: the command's output as it comes, a status line, jsonl events.

`execute` drives a `Display`: it hands it the command's raw bytes as they arrive (`on_output`),
the strategy's downgrades, and a chance to act whenever the time it asked for (`wait`) has come
(`tick`). `stop` is always called when the run is over, whatever happened, and leaves the
terminal as it was; `finished` then shows the result. The JSON path uses no display at all, so it
does no work per chunk of output.

Which display a run gets is decided once, from the call's `Environment` (environment.py):

* `--format jsonl`: events, one JSON object per line (jsonl.py).
* pretty, stdout a terminal (and not CI, not TERM=dumb): the command's bytes go to it as a
  terminal would show them (colours, carriage-return progress bars), minus what could change the
  terminal's state (terminal.py, terminal_filter.py); when stderr is a terminal too, a status
  line on it (status_line.py), redrawn only while the cursor is at the start of a line, erased
  before any output is written and when the run ends.
* pretty otherwise (a pipe, a file, CI): cleaned text, a line at a time, as in the JSON `output`
  (lines.py, pieces.py).

Colour in safe-run's own summary: stderr a terminal, or FORCE_COLOR; never with NO_COLOR.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..environment import Environment
from .interface import Display

__all__ = ["Display", "make_display"]


def make_display(
    output_format: str, limit: int, env: Environment, clock: Callable[[], float] = time.monotonic
) -> Display | None:
    """The display for a resolved format ('json', 'jsonl' or 'pretty'); None for JSON."""
    if output_format == "jsonl":
        from .jsonl import JsonlDisplay

        return JsonlDisplay(env, limit, clock)
    if output_format != "pretty":
        return None
    if env.presentation.passthrough:
        from .terminal import TerminalDisplay

        return TerminalDisplay(env, clock)
    from .lines import LineDisplay

    return LineDisplay(env, limit, clock)

"""A run in a holder watched by a person (a `--yield-after` session, or a command of a named
shell called from their terminal): its output as it comes, and a status line, until the command
ends, waits for them, or the bound passes.

The command runs in a session's holder, which hands its output out with each answer; so the
watcher asks for an answer every fraction of a second (each wakes the moment the command ends)
and shows what came. The final result holds the whole output again: only what was not shown yet
is written after it (see `unshown`). The status line is drawn only below a complete line, so that
it never takes the place of one still being written (a prompt's `name? `).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from types import FrameType

from ..environment import Environment
from ..core.render import print_summary
from ..core.result import Result, Status
from .status_line import QuietKeys, StatusLine, elapsed
from .streams import Out
from .terminal_filter import FULL_SCREEN_HIDDEN

# How long each answer waits at most: how often the screen is brought up to date.
STEP_S = 0.25

Start = Callable[[float], Result]
Ask = Callable[[str, float], Result]


def follow_yielding(start: Start, ask: Ask, bound: float, env: Environment,
                    clock: Callable[[], float] = time.monotonic) -> Result:
    """The answer to give, with its output already written; the caller writes the summary."""
    result, shown = follow_answers(start, ask, bound, env, f" · --yield-after {bound:g}", clock)
    end_line(shown, env)
    return result


def follow_answers(start: Start, ask: Ask, bound: float | None, env: Environment, said: str,
                   clock: Callable[[], float] = time.monotonic) -> tuple[Result, str]:
    """The answer to give, with its output already written (its last line left as it is: the
    answer to a prompt goes after it), and the text the answers brought (a full screen's, left
    out on the screen, too): at the end, the whole output; else what came before the command
    waited for the person or the bound passed (None: no bound). `said`: what the status line
    says after the time."""
    status = StatusLine(env.stderr, env.presentation.colour, env.unicode) if env.presentation.status_line else None
    keys = QuietKeys.for_streams(env.stdin, env.stderr) if status is not None else None
    began = clock()
    shown = ""  # all the answers' text, shown or left out
    line_start = True  # what was written last ended its line
    out = Out(env.stdout)
    try:
        result = start(STEP_S if bound is None else min(STEP_S, bound))  # may start a holder: no handler of ours yet
        with _cleared_on_suspend(status, keys):
            while True:
                if result.session_id is None:  # the end: its output is the whole output again
                    _show("" if result.alternate_screen else unshown(result.output, shown), status, out, line_start)
                    return result, result.output
                line_start = _show("" if result.alternate_screen else result.output, status, out, line_start)
                shown += result.output
                remaining = STEP_S if bound is None else bound - (clock() - began)
                if result.status is not Status.RUNNING or remaining <= 0:
                    return replace(result, output=""), shown
                if status is not None and line_start and status.in_front():
                    if keys is not None:
                        keys.quiet()  # first, or again after `fg` of the call
                    status.draw(f"running · {elapsed(clock() - began)}{said}")
                result = ask(result.session_id, min(STEP_S, remaining))
    finally:
        if status is not None:
            status.clear()
        if keys is not None:
            keys.restore()


@contextmanager
def _cleared_on_suspend(status: StatusLine | None, keys: QuietKeys | None) -> Iterator[None]:
    """Ctrl-Z while the call waits for an answer: the status line is taken off the screen and echo
    given back before safe-run stops, so that the shell's prompt and what is typed there are
    clean (the line is drawn again once the call is in front after `fg`)."""
    if status is None:
        yield
        return

    def suspend(signum: int, frame: FrameType | None) -> None:
        status.clear()
        if keys is not None:
            keys.restore()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, suspend)

    try:
        if signal.getsignal(signal.SIGTSTP) != signal.SIG_DFL:
            yield  # ignored, or someone else's
            return
        signal.signal(signal.SIGTSTP, suspend)
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)


def end_line(shown: str, env: Environment) -> None:
    """The line the output `shown` left open ended, for what safe-run writes below it."""
    if shown and not shown.endswith("\n"):
        Out(env.stdout).write_text("\n")


def print_followed_summary(result: Result, env: Environment, shown: str = "") -> None:
    """The summary below the output a follower wrote (`shown`, its text): that output's last line
    ended first, and a full screen left out of it said."""
    end_line(shown, env)
    print_summary(result, env, notes=summary_notes(result))


def summary_notes(result: Result) -> list[str]:
    """What the summary says of the output that was not shown: a full screen's text (an editor's, a
    pager's), from the first answer that had one on, which cleaned of its cursor moves would
    land scattered over the screen."""
    return [FULL_SCREEN_HIDDEN] if result.alternate_screen else []


def unshown(final: str, shown: str) -> str:
    """What to write at the end, when `shown` was written from the answers and `final` is the
    whole output: its rest. Each answer's text is cleaned by itself, so a line the command
    rewrote across two answers (a progress frame after a carriage return) was written as the two
    run together, and the whole output then does not begin with what was shown: from that line
    on it is written again, as it ends up, on a line of its own (what is written cannot be taken
    back)."""
    if final.startswith(shown):
        return final[len(shown):]
    common = len(os.path.commonprefix([final, shown]))
    again = final[final.rfind("\n", 0, common) + 1:]
    return again if not shown or shown.endswith("\n") else "\n" + again


def _show(text: str, status: StatusLine | None, out: Out, line_start: bool) -> bool:
    """Whether the screen's last line is ended once `text` is written (`line_start`: before)."""
    if not text:
        return line_start
    if status is not None:
        status.clear()
    out.write_text(text)
    return text.endswith("\n")

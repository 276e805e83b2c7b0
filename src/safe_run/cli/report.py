"""Where a result goes: JSON on stdout, jsonl events, or the pretty form for people.

Every verb answers through `emit`, so the choice between JSON and pretty is made the same way
everywhere: asked for, or picked by the call's `Environment` (stdout a terminal, CI). The run
verb can also follow its command live (`--format jsonl`, and pretty): see display/. Nothing here
imports rich, or anything a JSON run does not need.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, BinaryIO, TextIO
from collections.abc import Callable

import click

from ..environment import Environment
from ..core.result import Result, Status

if TYPE_CHECKING:
    from click.decorators import FC

# Every value --format takes on some verb (the run verb takes them all).
FORMATS = ("auto", "json", "jsonl", "pretty")
# The session verbs answer once; there is nothing to stream.
SINGLE_ANSWER_FORMATS = ("auto", "json", "pretty")


class AnswerLost(Exception):
    """Standard output would not take the answer: it is closed, or its reader went away."""

    def __init__(self, reason: str, result: Result | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.result = result


def utf8_stdout(stdout: TextIO | None) -> None:
    """Make stdout's text layer UTF-8, for JSON lines written by others (jsonl events) as they come."""
    if isinstance(stdout, io.TextIOWrapper) and stdout.encoding.lower().replace("-", "") != "utf8":
        try:
            stdout.reconfigure(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            pass


def write_json_line(text: str, stdout: TextIO | None, result: Result | None = None) -> None:
    """One line of JSON on stdout, as UTF-8 whatever the locale or PYTHONIOENCODING says.

    JSON is UTF-8 by definition, and the caller must get the answer even when Python was told to
    encode its text streams as ASCII. A stdout that will not take it raises AnswerLost.
    """
    try:
        if stdout is None:
            raise AnswerLost("standard output is closed", result)
        stdout.flush()
        _write_all(stdout.buffer, (text + "\n").encode("utf-8", "replace"))
        stdout.buffer.flush()
    except BrokenPipeError as exc:
        raise AnswerLost("the reader of standard output went away", result) from exc
    except (OSError, ValueError) as exc:
        raise AnswerLost(f"standard output failed: {getattr(exc, 'strerror', None) or exc}", result) from exc


def _write_all(out: BinaryIO, data: bytes) -> None:
    """Every byte, or an error: an unbuffered stdout (PYTHONUNBUFFERED, -u) is a raw file, whose
    write may take only part (its reader went away mid-answer, a signal came) and says so by its
    count instead of raising; the next write then raises what went wrong."""
    view = memoryview(data)
    while view:
        written = out.write(view)
        if written is None:
            raise BlockingIOError("standard output is non-blocking and full")
        view = view[written:]


def json_line(result: Result, output_format: str) -> str:
    """The result as a machine reads it: the JSON object, or for jsonl the `finished` event."""
    if output_format == "jsonl":
        from ..core.events import finished_event

        return json.dumps(finished_event(result), ensure_ascii=False)
    return result.to_json()


def emit(result: Result, output_format: str, env: Environment) -> None:
    if env.wants_json(output_format):
        write_json_line(json_line(result, output_format), env.stdout, result)
        if result.message and result.status is Status.ERROR:
            warn(f"safe-run: {result.message}", env.stderr)
        return
    from ..core.render import render_pretty

    render_pretty(result, env)


def warn(line: str, stderr: TextIO | None) -> None:
    """A line on stderr that may be lost (stderr closed, full or gone) but never fails the answer."""
    if stderr is None:
        return
    try:
        stderr.write(line + "\n")
        stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def annotate(result: Result, env: Environment) -> None:
    """In GitHub Actions, flag a fallback (warning) or an abort (error) on stderr, whatever the format."""
    if not env.github_actions:
        return
    from ..core.events import github_annotation

    line = github_annotation(result)
    if line is not None:
        warn(line, env.stderr)


def _format_option(choices: tuple[str, ...], help_text: str) -> Callable[[FC], FC]:
    return click.option(
        "--format", "output_format", type=click.Choice(choices), default="auto", show_default=True, help=help_text,
    )


# The --format option every session verb shares (click makes a new Option each time it decorates).
format_option = _format_option(
    SINGLE_ANSWER_FORMATS,
    "json: one JSON object on stdout; pretty: for people; auto: pretty on a terminal or under CI, else json.",
)
# The run verb's: the same, and jsonl, which follows the command as it runs.
run_format_option = _format_option(
    FORMATS,
    "json: one JSON object on stdout; jsonl: events as the command runs (started, output, downgrade, "
    "finished), one JSON object per line; pretty: for people, output live on a terminal; "
    "auto: pretty on a terminal or under CI, else json.",
)

"""The result for people: a compact summary that reads at a glance, with or without colour.

The command's output goes to stdout, so it can be piped as usual; the summary goes to stderr.

    ✓ completed · exit 0 · 0.04 s · rich/shell_integration
    ! completed · exit 6 · 1.12 s · none/sentinel
      downgrade rich → none at 0.52 s: shell integration did not start: ...
      no shell integration: the end and the exit code came from a marked status echo ...
    ✗ timeout · 2.00 s · rich/timeout
      the command did not finish within --timeout 2 s and was stopped; output so far included

The first line always starts with a mark and the status word, so colour is never the only cue:
✓ (green) the shell itself reported a clean success, or a named shell was closed as asked; !
(yellow) a fallback decided the end or a downgrade was needed; ✗ (red) the command failed or was
stopped.

The summary is a few lines of one style each, written with SGR codes of its own: importing rich
for them took 25 ms after the command had ended, most of what a pretty run added to its answer.
rich draws only the session list, which a table needs, and is imported only for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from .events import decided_by_fallback
from ..environment import Environment
from .result import Downgrade, Result, Status, exit_sentence

SUCCESS_STYLE = "green"
FALLBACK_STYLE = "yellow"
FAILURE_STYLE = "red"
RUNNING_STYLE = "cyan"

MARKS = {SUCCESS_STYLE: "✓", FALLBACK_STYLE: "!", FAILURE_STYLE: "✗", RUNNING_STYLE: "…"}
ASCII_MARKS = {SUCCESS_STYLE: "+", FALLBACK_STYLE: "!", FAILURE_STYLE: "x", RUNNING_STYLE: "."}
# The SGR parameters of each style.
_SGR = {SUCCESS_STYLE: "32", FALLBACK_STYLE: "33", FAILURE_STYLE: "31", RUNNING_STYLE: "36"}
# Characters that would move the cursor back over a line or ring the bell: never part of a summary.
_UNSHOWN = str.maketrans("", "", "\a\b\v\f\r")


class Summary:
    """The summary's lines, each with its style: a colour, "bold" and a colour, or None. (A plain
    class: a pretty run loads this module once its command has ended, and making a dataclass
    took a millisecond of that.)"""

    def __init__(self, lines: tuple[tuple[str, str | None], ...]) -> None:
        self.lines = lines

    @property
    def plain(self) -> str:
        return "\n".join(line for line, _ in self.lines)

    def written(self, colour: bool) -> str:
        """As a terminal shows it: each styled line between its SGR code and a reset, with `colour`."""
        return "".join(_styled(line.translate(_UNSHOWN), style if colour else None) + "\n" for line, style in self.lines)


def _styled(line: str, style: str | None) -> str:
    if style is None or not line:
        return line
    *bold, colour = style.split()
    return f"\x1b[{';'.join(['1'] * len(bold) + [_SGR[colour]])}m{line}\x1b[0m"


def summary_style(result: Result) -> str:
    """Green for a clean success, yellow when a fallback decided the end, red for failure.

    A command still going on in its session (running, or waiting for an answer) has failed at
    nothing yet: it gets a colour of its own. A named shell closed is what `close` asked for (its
    exit status is 0).
    """
    if result.session_id is not None:
        return RUNNING_STYLE
    if result.status is Status.CLOSED:
        return SUCCESS_STYLE
    if result.status is Status.COMPLETED and result.exit_code == 0:
        return FALLBACK_STYLE if decided_by_fallback(result) else SUCCESS_STYLE
    return FAILURE_STYLE


def summary_text(
    result: Result, unicode: bool = True, omitted: int | None = None, notes: Sequence[str] = ()
) -> Summary:
    """`omitted`: the bytes of output the reader did not see, when that is not the result's count
    (a live display shows every line even when the result keeps only the head and the tail).
    `notes`: what the display itself has to say about what it showed."""
    style = summary_style(result)
    dot, arrow = (" · ", "→") if unicode else (" | ", "->")
    mark = (MARKS if unicode else ASCII_MARKS)[style]
    lines: list[tuple[str, str | None]] = [(f"{mark} {dot.join(_headline(result))}", f"bold {style}")]
    lines += [(_downgrade_line(downgrade, arrow), FALLBACK_STYLE) for downgrade in result.downgrades]
    for detail in _details(result, omitted, notes):
        lines += [(f"  {line}" if n == 0 else line, None) for n, line in enumerate(detail.split("\n"))]
    return Summary(tuple(lines))


def _headline(result: Result) -> list[str]:
    """The first line's parts: how it ended, in how long, and what decided it."""
    parts = [result.status.value]
    if result.exit_code is not None:
        parts.append(f"exit {result.exit_code}")
    parts.append(f"{result.duration_s:.2f} s")
    if result.strategy is not None or result.completion_reason is not None:
        how = [v.value for v in (result.strategy, result.completion_reason) if v is not None]
        parts.append("/".join(how))
    return parts


def _downgrade_line(downgrade: Downgrade, arrow: str) -> str:
    # A step to the same strategy is evidence the command went without, not a step down.
    step = f"downgrade {downgrade.from_} {arrow} {downgrade.to}" if downgrade.from_ != downgrade.to else "note"
    return f"  {step} at {downgrade.at_s:.2f} s: {downgrade.reason}"


def _details(result: Result, omitted: int | None, notes: Sequence[str]) -> list[str]:
    """What the reader may need besides the first line, each detail a line or more of its own."""
    omitted = result.output_dropped_bytes if omitted is None else omitted
    details = [f"{omitted} bytes of output omitted from the middle"] if omitted else []
    details += notes
    if result.prompt and result.status is Status.INPUT_REQUIRED:
        details.append(f"prompt: {result.prompt}")
    if result.killed:
        details.append("killed: " + ", ".join(f"{k.pid} {k.command}" for k in result.killed))
    if result.session_id:
        details.append(f"session {result.session_id}: safe-run poll|send|stop {result.session_id}")
    if result.message and not _said_by_the_exit(result):
        details.append(result.message)
    return details


def _said_by_the_exit(result: Result) -> bool:
    """A message that only repeats the line's `exit N` (a signal's name says more: it is kept)."""
    code = result.exit_code
    return code is not None and code <= 128 and result.message == exit_sentence(code)


def print_summary(
    result: Result, env: Environment, omitted: int | None = None, notes: Sequence[str] = ()
) -> None:
    """The summary on `env`'s stderr, coloured and marked as it allows. `omitted`, `notes`: see
    `summary_text`."""
    try:
        env.stderr.write(summary_text(result, env.unicode, omitted, notes).written(env.presentation.colour))
        env.stderr.flush()
    except (OSError, ValueError):
        pass  # stderr is gone; the exit status still says how it ended


def render_pretty(result: Result, env: Environment) -> None:
    """A result that was not followed live (a session's): its output, then the summary."""
    if result.output:
        env.stdout.write(result.output)
        if not result.output.endswith("\n"):
            env.stdout.write("\n")
        env.stdout.flush()
    print_summary(result, env)


def render_sessions(rows: list[dict[str, object]], stream: TextIO) -> None:
    """The session list as a table for people.

    Every cell is a `Text`, never a markup string: a command such as `read -p "[y/N] "` is shown
    as typed, and one holding `[/x]` cannot break the listing.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    # Through a pipe each session stays on one line, for grep; a terminal's width is its own.
    width = None if stream.isatty() else 1 << 12
    console = Console(file=stream, highlight=False, markup=False, emoji=False, width=width)
    if not rows:
        console.print(Text("no sessions"))
        return
    shells = any(row.get("shell_name") is not None for row in rows)
    table = Table(box=None)
    # An id is never cut (it is copied into the next call); the other columns wrap when narrow.
    table.add_column("id", no_wrap=True, min_width=24)
    if shells:
        table.add_column("shell", overflow="fold")
    table.add_column("status", no_wrap=True, min_width=len("input_required"))
    for name in ("exit", "age", "idle", "command"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(*(Text(cell) for cell in _cells(row, shells)))
    console.print(table)


def _cells(row: dict[str, object], shells: bool) -> tuple[str, ...]:
    """A session's row as the columns read: its command's first line only, so that one session
    takes one line; the shell column only when the list has one."""
    exit_code = "" if row["exit_code"] is None else str(row["exit_code"])
    status = str(row["status"]) + (f" ({row['attached']} attached)" if row.get("attached") else "")
    command = str(row["command"]).splitlines()[0] if row["command"] else ""
    shell = [_shell_cell(row)] if shells else []
    return (str(row["session_id"]), *shell, status, exit_code, _duration(row["age_s"]), _idle_cell(row), command)


def _shell_cell(row: dict[str, object]) -> str:
    """A persistent shell's name, program and directory (a command of it: the name alone, its
    shell's row says the rest); blank otherwise."""
    if row.get("shell_name") is None:
        return ""
    if row.get("shell") is None and row.get("cwd") is None:
        return str(row["shell_name"])
    return f"{row['shell_name']} ({row.get('shell') or '?'} in {row.get('cwd') or '?'})"


def _idle_cell(row: dict[str, object]) -> str:
    """How long nobody asked about it, and when it ends for that (an input wait, an idle shell)."""
    idle = _duration(row.get("idle_s"))
    expires = row.get("expires_in_s")
    if not idle or not isinstance(expires, (int, float)):
        return idle
    what = "closes" if row.get("status") == "idle" else "stops"
    return f"{idle}, {what} in {_duration(expires)}"


def _duration(seconds: object) -> str:
    if not isinstance(seconds, (int, float)):
        return ""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h"

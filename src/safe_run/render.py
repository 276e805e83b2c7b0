"""The result for people: the command's output as it printed it, then a one-glance summary.

The output goes to stdout, so it can be piped as usual; the summary goes to stderr. rich is only
imported here, so a JSON run never pays for it.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.text import Text

from .result import Reason, Result, Status

FALLBACK_STYLE = "yellow"


def summary_style(result: Result) -> str:
    """Green for a clean success, yellow when a fallback decided the end, red for failure."""
    if result.status is Status.COMPLETED and result.exit_code == 0:
        ended_by_shell = result.completion_reason in (Reason.SHELL_INTEGRATION, Reason.SHELL_EXITED)
        return "green" if ended_by_shell and not result.downgrades else FALLBACK_STYLE
    return "red"


def summary_text(result: Result) -> Text:
    parts = [result.status.value]
    if result.exit_code is not None:
        parts.append(f"exit {result.exit_code}")
    if result.strategy is not None:
        parts.append(f"{result.strategy.value}/{result.completion_reason.value}")
    parts.append(f"{result.duration_s:.2f} s")
    if result.output_truncated:
        parts.append(f"{result.output_dropped_bytes} bytes of output omitted")
    text = Text(" · ".join(parts), style=f"bold {summary_style(result)}")
    for downgrade in result.downgrades:
        text.append(f"\n  {downgrade.from_} → {downgrade.to} at {downgrade.at_s:.2f} s: {downgrade.reason}")
    if result.message:
        text.append(f"\n{result.message}")
    return text


def render_pretty(result: Result) -> None:
    if result.output:
        sys.stdout.write(result.output)
        if not result.output.endswith("\n"):
            sys.stdout.write("\n")
        sys.stdout.flush()
    Console(stderr=True, highlight=False).print(summary_text(result))

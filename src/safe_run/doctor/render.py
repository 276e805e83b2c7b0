"""The doctor report: JSON for programs, and for people a table, the problems with their advice,
and a one-line verdict (see pretty.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.result import SCHEMA_VERSION
from ..core.tracker import NO_KERNEL_VIEW
from .verdict import ShellReport, kernel_view

if TYPE_CHECKING:
    from rich.console import Console


def report_dict(reports: Sequence[ShellReport]) -> dict[str, object]:
    default = next((r.path for r in reports if r.default and r.installed), None)
    seen = kernel_view(reports)
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": all(r.ok for r in reports),
        "default_shell": default,
        "kernel_view": seen,
        "notes": [] if seen else [NO_KERNEL_VIEW],
        "shells": [r.to_dict() for r in reports],
    }


def render_pretty(reports: Sequence[ShellReport], console: Console | None = None) -> None:
    """A table (one row per shell), then each problem with its advice, then a one-line verdict."""
    from .pretty import print_report  # rich is loaded only for people, never for JSON

    print_report(reports, console)

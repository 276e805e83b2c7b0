"""The doctor report for people: a table (one row per shell), then each problem with its advice,
then a one-line verdict."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.tracker import NO_KERNEL_VIEW
from .verdict import ShellReport, kernel_view


def print_report(reports: Sequence[ShellReport], console: Console | None = None) -> None:
    out = console if console is not None else Console(highlight=False, markup=False, emoji=False)
    out.print(_table(reports))
    if any(r.default for r in reports):
        out.print(Text("* used by a plain `safe-run COMMAND` ($SHELL, else passwd, else /bin/sh)", style="dim"))
    for r in reports:
        for line in _findings(r):
            out.print(line, soft_wrap=True)
    if not kernel_view(reports):
        out.print(Text(f"\nnote: {NO_KERNEL_VIEW}", style="yellow"), soft_wrap=True)
    out.print(_summary(reports))


def _table(reports: Sequence[ShellReport]) -> Table:
    table = Table("shell", "path", "strategy", "integration", "start-up", "no rc", "verdict", box=None)
    table.columns[1].overflow = "fold"
    for r in reports:
        name = Text(f"{r.name} *" if r.default else r.name)
        if not r.installed:
            table.add_row(name, Text(r.path or "—"), "", "", "", "", _verdict(r))
            continue
        integration = "n/a" if not r.integration_available else ("yes" if r.integration else "no")
        table.add_row(name, Text(r.path or ""), r.strategy or r.status or "", integration,
                      _seconds(r.startup_s), _seconds(r.startup_no_rc_s), _verdict(r))
    return table


def _verdict(r: ShellReport) -> Text:
    if not r.installed:
        return Text("not installed", style="dim") if r.ok else Text("missing", style="bold red")
    if r.ok:
        return Text("ok", style="green")
    if r.rc_breaks_integration:
        return Text("rc breaks it", style="bold red")
    return Text("problem", style="bold red")


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def _findings(r: ShellReport) -> list[Text]:
    """The shell's problem with its advice, then its notes, each set off by a blank line."""
    lines = []
    if r.problem:
        lines.append(Text(f"\n{r.name}: {r.problem}", style="red"))
        if r.advice:
            lines.append(Text(f"  {r.advice}"))
    lines.extend(Text(f"\n{r.name}: note: {note}") for note in r.notes)
    return lines


def _summary(reports: Sequence[ShellReport]) -> Text:
    problems = [r.name for r in reports if not r.ok]
    if problems:
        return Text(f"\n{len(problems)} problem{'s' if len(problems) > 1 else ''} found ({', '.join(problems)})",
                    style="bold red")
    checked = sum(1 for r in reports if r.installed)
    summary = ("the shell gets its best strategy" if checked == 1
               else f"all {checked} installed shells get their best strategy")
    return Text(f"\n{summary}", style="bold green")

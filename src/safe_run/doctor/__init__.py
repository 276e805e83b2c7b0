"""`safe-run doctor`: for each shell, does integration activate, how long does start-up take, and
do the user's start-up files get in the way?

The checks use the real machinery, not a copy of it: a trivial command goes through
`runner.execute` twice per shell, once with the user's start-up files and once without
(`load_rc=False`), and the two `Result`s say everything — the strategy a run gets, the
downgrades and why, the duration, the error of a shell that would not start. Everything after
the runs (the verdict, the advice, the JSON and the pretty report) is pure and takes its inputs
as arguments, paths already resolved, so it is tested without a terminal.

Integration starting says nothing about whether the user's files loaded as they should, so the
same command also lists the names they define (functions, aliases, exported variables), and the
shell run plainly (`SHELL -i -c`, no safe-run between) lists them too: a name that plain start-up
defines and a run lacks means a file was not loaded, or not the way the user's shell loads it.

`discovery` finds the shells and their start-up files, `probe` is the check command and reads its
output, `run` runs the checks, `verdict` and `advice` judge them, `render` and `pretty` report.
"""

from __future__ import annotations

from .advice import tilde
from .discovery import ExecLine, Target, find_exec_lines, find_targets, named_target, rc_files, read_texts
from .probe import CHECK_TIMERS, FISH_PROBE, POSIX_PROBE, best_strategy, gets_best, probe
from .render import render_pretty, report_dict
from .run import check, plain_names
from .verdict import ShellReport, exit_code, judge, missing_report

__all__ = [
    "CHECK_TIMERS", "FISH_PROBE", "POSIX_PROBE", "ExecLine", "ShellReport", "Target", "best_strategy", "check",
    "exit_code", "find_exec_lines", "find_targets", "gets_best", "judge", "missing_report", "named_target",
    "plain_names", "probe", "rc_files", "read_texts", "render_pretty", "report_dict", "tilde",
]

"""The verdict on each shell, from the facts the checks gathered.

Pure: the two results, the start-up files and what they hold, and every path already resolved
come in as arguments, so each verdict is tested without a terminal or a file system.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from ..core.result import Result, Status
from ..shells.registry import kind_of
from ..core.tracker import NO_KERNEL_VIEW
from .advice import MAX_MISSING_NAMES, explain, not_loaded
from .discovery import ExecLine, Target
from .probe import CHECK_TIMERS, best_strategy, defined_names, gets_best, runs_as

# Start-up slower than this is worth a note (every run pays it); it is not a problem.
SLOW_STARTUP_S = 1.0
# Names a shell defines itself and drops once its first prompt is drawn (fish), or defines only
# when the user has no start-up files (zsh's new-user menu): a run shows a prompt and has files.
SHELLS_OWN_NAMES = frozenset({"__fish_on_interactive", "zsh-newuser-install"})


@dataclass
class ShellReport:
    """The verdict on one shell; its fields, in this order, are the stable JSON form."""

    name: str
    path: str | None
    installed: bool
    default: bool = False
    integration_available: bool = False
    integration: bool = False
    integration_no_rc: bool = False
    best_strategy: str | None = None
    strategy: str | None = None
    strategy_no_rc: str | None = None
    status: str | None = None
    status_no_rc: str | None = None
    completion_reason: str | None = None
    startup_s: float | None = None
    startup_no_rc_s: float | None = None
    rc_breaks_integration: bool = False
    rc_files: list[str] = field(default_factory=list)
    rc_loaded: bool | None = None
    rc_missing: list[str] = field(default_factory=list)
    runs_as: str | None = None
    downgrades: list[dict[str, object]] = field(default_factory=list)
    ok: bool = True
    problem: str | None = None
    advice: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def missing_names(reference: frozenset[str] | None, result: Result) -> list[str] | None:
    """Names plain start-up defines and the run lacks; None when there is nothing to compare."""
    if reference is None or result.status is not Status.COMPLETED:
        return None
    return sorted(reference - defined_names(result.output) - SHELLS_OWN_NAMES)


def judge(
    target: Target,
    with_rc: Result,
    without_rc: Result,
    rc_paths: Sequence[str] = (),
    exec_lines: Sequence[ExecLine] = (),
    home: str = "",
    reference: frozenset[str] | None = None,
    real_paths: Mapping[str, str] | None = None,
) -> ShellReport:
    """Two runs of the trivial command (with and without the start-up files) into a verdict.

    `reference` is the names the shell's own start-up defines (None when unknown): a run that
    gets its best strategy but lacks some of them did not load the user's files as the shell does.
    `real_paths` maps the shell's path and the program that ran the command to where they resolve
    (a path missing from it is taken as it is).
    """
    assert target.path is not None
    best = best_strategy(target.name)
    available = kind_of(target.name).integrated
    good_rc, good_no_rc = gets_best(with_rc, best), gets_best(without_rc, best)
    running = runs_as(with_rc)
    report = ShellReport(
        name=target.name,
        path=target.path,
        installed=True,
        default=target.default,
        integration_available=available,
        integration=available and good_rc,
        integration_no_rc=available and good_no_rc,
        best_strategy=best.value,
        strategy=_strategy(with_rc),
        strategy_no_rc=_strategy(without_rc),
        status=with_rc.status.value,
        status_no_rc=without_rc.status.value,
        completion_reason=with_rc.completion_reason.value if with_rc.completion_reason else None,
        startup_s=_startup(with_rc),
        startup_no_rc_s=_startup(without_rc),
        rc_breaks_integration=good_no_rc and not good_rc,
        rc_files=list(rc_paths),
        runs_as=running,
        downgrades=[d.to_dict() for d in with_rc.downgrades],
        ok=good_rc,
    )
    missing = missing_names(reference, with_rc)
    if missing is not None:
        report.rc_loaded = not missing
        report.rc_missing = missing[:MAX_MISSING_NAMES]
    if not good_rc:
        replaced = _replaced_by(target.path, running, real_paths or {})
        report.problem, report.advice = explain(target, best, with_rc, without_rc, rc_paths, exec_lines, home,
                                                replaced)
    elif missing:
        report.ok = False
        report.problem, report.advice = not_loaded(target, missing, report.rc_files, home)
    report.notes = _notes(target, good_rc, good_no_rc, with_rc, without_rc)
    return report


def _replaced_by(path: str, running: str | None, real_paths: Mapping[str, str]) -> str | None:
    """The program that ran the check command in the shell's place, if it was not the shell."""
    if running and real_paths.get(running, running) != real_paths.get(path, path):
        return posixpath.basename(running)
    return None


def missing_report(target: Target) -> ShellReport:
    """A shell that is not there: merely not installed, or a problem when runs would use it."""
    return ShellReport(
        name=target.name,
        path=target.path,
        installed=False,
        default=target.default,
        integration_available=kind_of(target.name).integrated,
        best_strategy=best_strategy(target.name).value,
        ok=target.missing is None,
        problem=target.missing,
        advice=None if target.missing is None else
        "set SHELL to an installed shell (or fix your passwd entry), or pass --shell to every run",
    )


def _strategy(result: Result) -> str | None:
    return result.strategy.value if result.status is Status.COMPLETED and result.strategy else None


def _startup(result: Result) -> float | None:
    return round(result.duration_s, 3) if result.status is Status.COMPLETED else None


def _notes(target: Target, good_rc: bool, good_no_rc: bool, with_rc: Result, without_rc: Result) -> list[str]:
    notes = []
    startup = _startup(with_rc)
    if good_rc and startup is not None and startup >= SLOW_STARTUP_S:
        without = _startup(without_rc)
        compared = f" ({without:.2f} s without them)" if without is not None else ""
        notes.append(f"start-up takes {startup:.2f} s with your start-up files{compared}; every run pays it, "
                     f"and safe-run gives up after {CHECK_TIMERS.activation:g} s (--activation-timeout)")
    if good_rc and not good_no_rc:
        notes.append(f"without start-up files (--no-rc) {target.name} does not get its best strategy: "
                     f"{without_rc.message or without_rc.status.value}")
    return notes


def kernel_view(reports: Sequence[ShellReport]) -> bool:
    """Whether the checks' runs could ask the kernel how the terminal stands: a machine's fact, not
    a shell's, so it is no shell's problem, but it is said once, with what it costs every run."""
    return not any(d.get("reason") == NO_KERNEL_VIEW for r in reports for d in r.downgrades)


def exit_code(reports: Sequence[ShellReport]) -> int:
    """0 when every checked shell gets its best strategy, 1 when some check found a problem."""
    return 0 if all(r.ok for r in reports) else 1


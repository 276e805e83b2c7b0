"""What a problem found by the check means for every run, and what to do about it.

Pure: the facts come in as arguments, paths already resolved, and the words go out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from ..core.result import Downgrade, Result, Status, Strategy
from .discovery import ExecLine, Target
from .probe import gets_best, steps_down

# Names listed in a problem (and in the JSON report), at most.
MAX_MISSING_NAMES = 10


def explain(
    target: Target,
    best: Strategy,
    with_rc: Result,
    without_rc: Result,
    rc_paths: Sequence[str],
    exec_lines: Sequence[ExecLine],
    home: str,
    replaced: str | None,
) -> tuple[str, str]:
    """The problem and the advice when a run with the start-up files misses its best strategy.

    `replaced` is the program that ran the check command instead of the shell, if any.
    """
    if not gets_best(without_rc, best):
        return _not_the_rc_files(target.name, str(target.path), best, without_rc)
    files = _listed(rc_paths, home)
    evidence = exec_lines[0] if exec_lines else None
    if with_rc.status is Status.COMPLETED and with_rc.strategy is best and not steps_down(with_rc):
        return _wrong_exit_code(target.name, files, with_rc)
    where = _where(target.name, files, evidence, replaced, home)
    if with_rc.status is Status.COMPLETED:
        problem, advice = _integration_lost(files, where, with_rc)
    else:
        problem, advice = _cannot_run(target.name, files, where, with_rc)
    return problem, advice + _fix(files, evidence, replaced, home)


def _listed(rc_paths: Sequence[str], home: str) -> str:
    return ", ".join(tilde(p, home) for p in rc_paths) or "your start-up files"


def _where(name: str, files: str, evidence: ExecLine | None, replaced: str | None, home: str) -> str | None:
    """Where the start-up files take the shell away, as far as the clues tell."""
    if evidence is not None:
        where = f"your {tilde(evidence.path, home)} replaces the shell (line {evidence.line}: {evidence.text})"
        if replaced and posixpath.basename(evidence.program) != replaced:
            where += f"; the command ran in {replaced}"
        return where
    if replaced:
        return f"your start-up files ({files}) replace {name} with {replaced}"
    return None


def _wrong_exit_code(name: str, files: str, with_rc: Result) -> tuple[str, str]:
    problem = (f"with your start-up files ({files}) the check command, which exits 0, is reported with "
               f"exit code {with_rc.exit_code}; without them it is right")
    advice = (f"Exit codes safe-run reports in {name} may be wrong: look in {files} for traps or hooks "
              "that change $?, or run safe-run with --no-rc.")
    return problem, advice


def _integration_lost(files: str, where: str | None, with_rc: Result) -> tuple[str, str]:
    if where:
        problem = f"{where}, so safe-run's integration never starts; without start-up files it does"
    else:
        lost = steps_down(with_rc)
        reason = lost[0].reason if lost else (with_rc.message or "")
        problem = (f"with your start-up files ({files}) safe-run's integration does not work ({reason}); "
                   "without them it does")
    strategy = with_rc.strategy.value if with_rc.strategy else "none"
    advice = (f"safe-run falls back to strategy {strategy}: the end and the exit code come from a "
              f"marked echo typed after the command instead of the shell's own marks"
              f"{_startup_wait(steps_down(with_rc))}. ")
    return problem, advice


def _cannot_run(name: str, files: str, where: str | None, with_rc: Result) -> tuple[str, str]:
    problem = f"with your start-up files ({files}) {name} cannot run a command: {with_rc.message}"
    if where:
        problem += f" ({where})"
    problem += "; without them it can"
    return problem, f"every `safe-run` in {name} fails this way. "


def _fix(files: str, evidence: ExecLine | None, replaced: str | None, home: str) -> str:
    if evidence is not None:
        return (f"Fix: move `{evidence.text}` out of {tilde(evidence.path, home)} (into your terminal's "
                f"settings, for instance), or run safe-run with --shell {evidence.program} or --no-rc.")
    if replaced:
        return f"Fix: find the `exec {replaced}` in {files}, or run safe-run with --shell {replaced} or --no-rc."
    return (f"Fix: look in {files} for what disturbs an interactive shell (an exec, an exit, a read, "
            "a prompt framework that takes over the terminal), or run safe-run with --no-rc.")


def not_loaded(target: Target, missing: Sequence[str], rc_paths: Sequence[str], home: str) -> tuple[str, str]:
    """The problem and the advice when a run lacks names that the shell's own start-up defines."""
    files = _listed(rc_paths, home)
    shown = ", ".join(missing[:MAX_MISSING_NAMES]) + (", ..." if len(missing) > MAX_MISSING_NAMES else "")
    problem = (f"your start-up files did not load in safe-run's {target.name} as they do in plain "
               f"`{target.name} -i`: {len(missing)} name{'s' if len(missing) > 1 else ''} they define "
               f"{'are' if len(missing) > 1 else 'is'} missing ({shown})")
    advice = (f"Commands that use them fail or act differently under safe-run. Look in {files} for a test "
              "that tells safe-run's shell apart (its __sr_ variables, ZDOTDIR), and report it with the "
              f"output of `safe-run --format json --shell {target.path} -- true`.")
    return problem, advice


def _startup_wait(downgrades: Sequence[Downgrade]) -> str:
    """The time every run loses waiting for integration, when it is worth a mention.

    A shell that shows at once that integration will not come (it exited, or another program took
    over) costs no wait, and "waits 0.0 s" would only puzzle.
    """
    first = downgrades[0] if downgrades else None
    if first is None or not first.reason.startswith("shell integration did not start") or first.at_s < 0.05:
        return ""
    return f", and every run first waits {first.at_s:.1f} s for integration that never comes"


def _not_the_rc_files(name: str, path: str, best: Strategy, without_rc: Result) -> tuple[str, str]:
    report_it = f"report it with the output of `safe-run --format json --no-rc --shell {path} -- true`"
    if without_rc.status is not Status.COMPLETED:
        problem = f"{name} does not work with safe-run even without start-up files: {without_rc.message}"
        advice = f"This is not caused by your start-up files: check that `{path} -i` starts, and {report_it}."
    elif steps_down(without_rc) or without_rc.strategy is not best:
        lost = steps_down(without_rc)
        reason = lost[0].reason if lost else (without_rc.message or "")
        problem = f"safe-run's integration does not work in {name} even without start-up files: {reason}"
        advice = (f"safe-run falls back to strategy none for {name}; this is not caused by your start-up "
                  f"files: {report_it}.")
    else:
        problem = f"the check command `true` exits {without_rc.exit_code} in {name} even without start-up files"
        advice = f"This is not caused by your start-up files: {report_it}."
    return problem, advice


def tilde(path: str, home: str) -> str:
    if home and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")):]
    return path


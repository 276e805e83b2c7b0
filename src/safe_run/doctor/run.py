"""Running the checks: the check command through a real run, with and without the start-up
files, and the shell started plainly to list the names its own start-up defines."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Mapping

from ..core.result import Result, Status
from ..core.request import RunRequest
from ..engine.shell_start import CALLER_TERMINAL_VARS, TERM
from ..shells.registry import kind_of
from .discovery import Target, find_exec_lines, rc_files, read_texts
from .probe import CHECK_TIMERS, best_strategy, defined_names, gets_best, probe, reported_zdotdir, runs_as
from .verdict import ShellReport, judge, missing_report

# The plain start-up is given this long; a shell that takes longer is not compared.
PLAIN_TIMEOUT_S = 10.0


def check(
    target: Target,
    execute: Callable[[RunRequest], Result],
    environ: Mapping[str, str],
    home: str,
    plain: Callable[[Target, Mapping[str, str]], frozenset[str] | None] | None = None,
) -> tuple[ShellReport, Result | None]:
    """Run the trivial command with and without the start-up files and judge the pair, with the
    names `plain` start-up defines (`plain_names` unless given). The second item is a result that
    interrupted the check (SIGINT, SIGTERM, SIGHUP to safe-run), else None."""
    if target.path is None or target.missing is not None:
        return missing_report(target), None
    command = probe(target.name)
    results = []
    for load_rc in (True, False):
        result = execute(RunRequest(command=command, shell=target.path, load_rc=load_rc, timers=CHECK_TIMERS))
        if result.status is Status.INTERRUPTED:
            return missing_report(target), result
        results.append(result)
    with_rc, without_rc = results
    paths = rc_files(target.name, environ, home, reported_zdotdir(with_rc))
    exec_lines = find_exec_lines(read_texts(paths)) if not gets_best(with_rc, best_strategy(target.name)) else []
    reference = (plain or plain_names)(target, environ) if kind_of(target.name).doctor.names_probe else None
    real_paths = {path: os.path.realpath(path) for path in (target.path, runs_as(with_rc)) if path}
    return judge(target, with_rc, without_rc, paths, exec_lines, home, reference, real_paths), None


def plain_names(target: Target, environ: Mapping[str, str]) -> frozenset[str] | None:
    """The names the user's files define when the shell starts them itself (`SHELL -i -c`), in the
    environment a run gets; None when it does not list them in time."""
    assert target.path is not None
    facts = kind_of(target.name).doctor
    # Before listing, the plain shell is kept out of the user's history.
    argv = [target.path, *facts.plain_options, "-i", "-c", facts.history_off + probe(target.name)]
    env = {k: v for k, v in environ.items() if k not in CALLER_TERMINAL_VARS} | {"TERM": TERM}
    try:
        with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              env=env, start_new_session=True) as proc:
            try:
                out, _ = proc.communicate(timeout=PLAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                return None
    except OSError:
        return None
    names = defined_names(out.decode("utf-8", "replace"))
    return names or None


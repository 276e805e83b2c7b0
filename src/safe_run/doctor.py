"""`safe-run doctor`: for each shell, does integration activate, how long does start-up take, and
do the user's start-up files get in the way?

The checks use the real machinery, not a copy of it: a trivial command goes through
`runner.execute` twice per shell, once with the user's start-up files and once without
(`load_rc=False`), and the two `Result`s say everything — the strategy a run gets, the
downgrades and why, the duration, the error of a shell that would not start. Everything after
the runs (the verdict, the advice, the JSON and the pretty report) is pure and takes its inputs
as arguments, so it is tested without a terminal.

Integration starting says nothing about whether the user's files loaded as they should, so the
same command also lists the names they define (functions, aliases, exported variables), and the
shell run plainly (`SHELL -i -c`, no safe-run between) lists them too: a name that plain start-up
defines and a run lacks means a file was not loaded, or not the way the user's shell loads it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from glob import escape, glob
from typing import TYPE_CHECKING

from . import shells
from .result import SCHEMA_VERSION, Downgrade, Result, Status, Strategy
from .runner import CALLER_TERMINAL_VARS, INTEGRATED, TERM, RunRequest
from .tracker import Timers

if TYPE_CHECKING:
    from rich.console import Console

# The shells looked for on PATH, in report order; $SHELL and the passwd shell are added to them.
KNOWN_SHELLS = ("bash", "zsh", "fish", "dash", "sh")
# Start-up slower than this is worth a note (every run pays it); it is not a problem.
SLOW_STARTUP_S = 1.0
# A check may take the activation time of a real run, and a little more; never longer than this.
CHECK_TIMERS = Timers(timeout=20.0)

# The check's command: prints the program that actually runs it (Linux /proc; nothing elsewhere),
# so that a shell replaced by an rc file's `exec` is named. It always exits 0.
POSIX_PROBE = "command readlink /proc/$$/exe 2>/dev/null; true"
FISH_PROBE = "command readlink /proc/$fish_pid/exe 2>/dev/null; true"
# The names the user's files define, one `name:` line each, where a shell can list them.
NAMES_PROBES = {
    "bash": "builtin printf 'name:%s\\n' $(builtin compgen -A function -A alias -A export); ",
    "zsh": "builtin printf 'name:%s\\n' ${(k)functions} ${(k)aliases} ${(k)parameters[(R)*export*]}; "
           "builtin printf 'zdotdir:%s\\n' \"${ZDOTDIR-}\"; ",
    "fish": "printf 'name:%s\\n' (functions -a -n) (set -xn); ",
}
# Before listing, the plain shell is kept out of the user's history (fish by --private).
_HISTORY_OFF = {"bash": "builtin set +o history; builtin unset HISTFILE; ", "zsh": "builtin unset HISTFILE; "}
# The plain start-up is given this long; a shell that takes longer is not compared.
PLAIN_TIMEOUT_S = 10.0
NAME_LINE = "name:"
# Names a shell defines itself and drops once its first prompt is drawn (fish), or defines only
# when the user has no start-up files (zsh's new-user menu): a run shows a prompt and has files.
SHELLS_OWN_NAMES = frozenset({"__fish_on_interactive", "zsh-newuser-install"})
MAX_MISSING_NAMES = 10

# `exec PROGRAM` in a start-up file (not `exec >file` or `exec 2>&1`, which only redirect).
EXEC_LINE = re.compile(
    r"(?:^|[;&|({]|\bthen|\bdo|\belse)\s*exec\s+(?:-\w+\s+)*(?![\d\s]*[<>&])([^\s;&|()<>#'\"]+)"
)
MAX_EXEC_LINES = 3
MAX_RC_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One shell to check: found, or named but missing (then `missing` says why it matters)."""

    name: str
    path: str | None
    default: bool = False
    missing: str | None = None  # a problem, when a shell that runs would use is missing


@dataclass(frozen=True)
class ExecLine:
    """A line of a start-up file that replaces the shell with another program."""

    path: str
    line: int
    text: str
    program: str


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


# ---- which shells ------------------------------------------------------------------------------


def find_targets(environ: Mapping[str, str], passwd_shell: str | None) -> list[Target]:
    """bash, zsh, fish, dash and sh as found on PATH, then $SHELL and the passwd shell if they
    are others; the one a plain run would use is marked `default`. A standard shell not on PATH
    is listed as not installed; a missing $SHELL is a problem, since plain runs would fail."""
    default = _default_shell(environ, passwd_shell)
    targets: list[Target] = []
    seen: set[tuple[str, str]] = set()

    def add(path: str) -> None:
        name = shells.shell_name(path)
        key = (name, os.path.realpath(path))
        if key in seen:
            return
        seen.add(key)
        targets.append(Target(name, path, default=default is not None and key == _key(default)))

    for name in KNOWN_SHELLS:
        path = shells.find_shell(name, environ)
        if path is None:
            targets.append(Target(name, None))
        else:
            add(path)
    for extra in (environ.get("SHELL"), passwd_shell, default):
        if not extra:
            continue
        path = shells.find_shell(extra, environ)
        if path is not None:
            add(path)
        elif extra == (environ.get("SHELL") or passwd_shell) and all(t.path != extra for t in targets):
            where = "$SHELL" if extra == environ.get("SHELL") else "your passwd entry"
            missing = Target(
                shells.shell_name(extra), extra, default=True,
                missing=f"{where} names {extra}, which is not an executable file: "
                "safe-run without --shell cannot run anything",
            )
            # A standard shell that is merely not installed is replaced by this, its problem.
            targets = [t for t in targets if not (t.path is None and t.name == missing.name)]
            targets.append(missing)
    return targets


def named_target(path: str, environ: Mapping[str, str], passwd_shell: str | None) -> Target:
    """The one shell named with --shell (already resolved), marked `default` if plain runs use it."""
    default = _default_shell(environ, passwd_shell)
    return Target(shells.shell_name(path), path, default=default is not None and _key(default) == _key(path))


def _default_shell(environ: Mapping[str, str], passwd_shell: str | None) -> str | None:
    """The shell `safe-run CMD` would use (as `shells.resolve_shell`), or None if it is missing."""
    return shells.find_shell(environ.get("SHELL") or passwd_shell or "/bin/sh", environ)


def _key(path: str) -> tuple[str, str]:
    return (shells.shell_name(path), os.path.realpath(path))


# ---- the start-up files a run loads --------------------------------------------------------------


def rc_files(name: str, environ: Mapping[str, str], home: str, zdotdir: str | None = None) -> list[str]:
    """The start-up files that exist and that a run of this shell loads (as safe-run starts it).

    zsh reads .zshrc from the ZDOTDIR that .zshenv leaves (`zdotdir`, as a run reported it), not
    necessarily the one it started with."""
    if name == "bash":
        candidates = ["/etc/bash.bashrc", os.path.join(home, ".bashrc")]
    elif name == "zsh":
        first = environ.get("ZDOTDIR") or home
        candidates = ["/etc/zsh/zshenv", "/etc/zshenv", os.path.join(first, ".zshenv"),
                      "/etc/zsh/zshrc", "/etc/zshrc", os.path.join(zdotdir or first, ".zshrc")]
    elif name == "fish":
        config = os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "fish")
        candidates = [*sorted(glob("/etc/fish/conf.d/*.fish")), "/etc/fish/config.fish",
                      *sorted(glob(os.path.join(escape(config), "conf.d", "*.fish"))),
                      os.path.join(config, "config.fish")]
    else:
        env_file = environ.get("ENV")
        candidates = [os.path.expanduser(os.path.expandvars(env_file))] if env_file else []
    return [path for path in candidates if os.path.isfile(path)]


def find_exec_lines(texts: Iterable[tuple[str, str]]) -> list[ExecLine]:
    """`exec PROGRAM` lines in (path, text) pairs of start-up files: the usual way one replaces
    the shell (and so the integration) with another program."""
    found: list[ExecLine] = []
    for path, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("#"):
                continue
            match = EXEC_LINE.search(stripped)
            if match:
                found.append(ExecLine(path, number, stripped, match.group(1)))
                if len(found) >= MAX_EXEC_LINES:
                    return found
    return found


def read_texts(paths: Iterable[str]) -> list[tuple[str, str]]:
    texts = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                texts.append((path, handle.read(MAX_RC_BYTES).decode("utf-8", "replace")))
        except OSError:
            continue
    return texts


# ---- the verdict (pure) ------------------------------------------------------------------------------


def best_strategy(name: str) -> Strategy:
    """What a run can get at best: rich with integration (bash, zsh, fish), none without."""
    return Strategy.RICH if name in INTEGRATED else Strategy.NONE


def gets_best(result: Result, best: Strategy) -> bool:
    return (
        result.status is Status.COMPLETED
        and result.exit_code == 0
        and result.strategy is best
        and not result.downgrades
    )


def probe(name: str) -> str:
    """The check command for this shell: the names its files define, then the program running it."""
    return NAMES_PROBES.get(name, "") + (FISH_PROBE if name == "fish" else POSIX_PROBE)


def defined_names(output: str) -> frozenset[str]:
    """The names listed by the check command's `name:` lines."""
    return frozenset(line[len(NAME_LINE):].strip() for line in output.splitlines() if line.startswith(NAME_LINE))


def missing_names(reference: frozenset[str] | None, result: Result) -> list[str] | None:
    """Names plain start-up defines and the run lacks; None when there is nothing to compare."""
    if reference is None or result.status is not Status.COMPLETED:
        return None
    return sorted(reference - defined_names(result.output) - SHELLS_OWN_NAMES)


def reported_zdotdir(result: Result) -> str | None:
    """The ZDOTDIR a zsh run ended up with, from the check command's `zdotdir:` line."""
    for line in result.output.splitlines():
        if line.startswith("zdotdir:"):
            return line[len("zdotdir:"):] or None
    return None


def runs_as(result: Result) -> str | None:
    """The program that ran the check command, from its own output (None if it could not tell)."""
    for line in reversed(result.output.splitlines()):
        line = line.strip().removesuffix(" (deleted)")
        if line.startswith("/"):
            return line
    return None


def judge(
    target: Target,
    with_rc: Result,
    without_rc: Result,
    rc_paths: Sequence[str] = (),
    exec_lines: Sequence[ExecLine] = (),
    home: str = "",
    reference: frozenset[str] | None = None,
) -> ShellReport:
    """Two runs of the trivial command (with and without the start-up files) into a verdict.

    `reference` is the names the shell's own start-up defines (None when unknown): a run that
    gets its best strategy but lacks some of them did not load the user's files as the shell does.
    """
    assert target.path is not None
    best = best_strategy(target.name)
    available = target.name in INTEGRATED
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
        report.problem, report.advice = _explain(target, best, with_rc, without_rc, report, exec_lines, home)
    elif missing:
        report.ok = False
        report.problem, report.advice = _not_loaded(target, missing, report.rc_files, home)
    report.notes = _notes(target, good_rc, good_no_rc, with_rc, without_rc)
    return report


def missing_report(target: Target) -> ShellReport:
    """A shell that is not there: merely not installed, or a problem when runs would use it."""
    return ShellReport(
        name=target.name,
        path=target.path,
        installed=False,
        default=target.default,
        integration_available=target.name in INTEGRATED,
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


def _explain(
    target: Target,
    best: Strategy,
    with_rc: Result,
    without_rc: Result,
    report: ShellReport,
    exec_lines: Sequence[ExecLine],
    home: str,
) -> tuple[str, str]:
    name, path = target.name, target.path
    if not gets_best(without_rc, best):
        return _not_the_rc_files(name, str(path), best, with_rc, without_rc)
    files = ", ".join(tilde(p, home) for p in report.rc_files) or "your start-up files"
    expected = os.path.realpath(str(path))
    replaced = None
    if report.runs_as and os.path.realpath(report.runs_as) != expected:
        replaced = os.path.basename(report.runs_as)
    evidence = exec_lines[0] if exec_lines else None
    if evidence is not None:
        where = f"your {tilde(evidence.path, home)} replaces the shell (line {evidence.line}: {evidence.text})"
        if replaced and os.path.basename(evidence.program) != replaced:
            where += f"; the command ran in {replaced}"
    elif replaced:
        where = f"your start-up files ({files}) replace {name} with {replaced}"
    else:
        where = None
    if with_rc.status is Status.COMPLETED and with_rc.strategy is best and not with_rc.downgrades:
        problem = (f"with your start-up files ({files}) the check command, which exits 0, is reported with "
                   f"exit code {with_rc.exit_code}; without them it is right")
        advice = (f"Exit codes safe-run reports in {name} may be wrong: look in {files} for traps or hooks "
                  "that change $?, or run safe-run with --no-rc.")
        return problem, advice
    if with_rc.status is Status.COMPLETED:
        reason = with_rc.downgrades[0].reason if with_rc.downgrades else (with_rc.message or "")
        if where:
            problem = f"{where}, so safe-run's integration never starts; without start-up files it does"
        else:
            problem = (f"with your start-up files ({files}) safe-run's integration does not work ({reason}); "
                       "without them it does")
        delay = _startup_wait(with_rc.downgrades)
        strategy = with_rc.strategy.value if with_rc.strategy else "none"
        advice = (f"safe-run falls back to strategy {strategy}: the end and the exit code come from a "
                  f"marked echo typed after the command instead of the shell's own marks{delay}. ")
    else:
        problem = f"with your start-up files ({files}) {name} cannot run a command: {with_rc.message}"
        if where:
            problem += f" ({where})"
        problem += "; without them it can"
        advice = f"every `safe-run` in {name} fails this way. "
    if evidence is not None:
        advice += (f"Fix: move `{evidence.text}` out of {tilde(evidence.path, home)} (into your terminal's "
                   f"settings, for instance), or run safe-run with --shell {evidence.program} or --no-rc.")
    elif replaced:
        advice += f"Fix: find the `exec {replaced}` in {files}, or run safe-run with --shell {replaced} or --no-rc."
    else:
        advice += (f"Fix: look in {files} for what disturbs an interactive shell (an exec, an exit, a read, "
                   "a prompt framework that takes over the terminal), or run safe-run with --no-rc.")
    return problem, advice


def _not_loaded(target: Target, missing: Sequence[str], rc_paths: Sequence[str], home: str) -> tuple[str, str]:
    files = ", ".join(tilde(p, home) for p in rc_paths) or "your start-up files"
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


def _not_the_rc_files(
    name: str, path: str, best: Strategy, with_rc: Result, without_rc: Result
) -> tuple[str, str]:
    report_it = f"report it with the output of `safe-run --format json --no-rc --shell {path} -- true`"
    if without_rc.status is not Status.COMPLETED:
        problem = f"{name} does not work with safe-run even without start-up files: {without_rc.message}"
        advice = f"This is not caused by your start-up files: check that `{path} -i` starts, and {report_it}."
    elif without_rc.downgrades or without_rc.strategy is not best:
        reason = without_rc.downgrades[0].reason if without_rc.downgrades else (without_rc.message or "")
        problem = f"safe-run's integration does not work in {name} even without start-up files: {reason}"
        advice = (f"safe-run falls back to strategy none for {name}; this is not caused by your start-up "
                  f"files: {report_it}.")
    else:
        problem = f"the check command `true` exits {without_rc.exit_code} in {name} even without start-up files"
        advice = f"This is not caused by your start-up files: {report_it}."
    return problem, advice


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


def tilde(path: str, home: str) -> str:
    if home and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")):]
    return path


# ---- running the checks ------------------------------------------------------------------------


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
    reference = (plain or plain_names)(target, environ) if target.name in NAMES_PROBES else None
    return judge(target, with_rc, without_rc, paths, exec_lines, home, reference), None


def plain_names(target: Target, environ: Mapping[str, str]) -> frozenset[str] | None:
    """The names the user's files define when the shell starts them itself (`SHELL -i -c`), in the
    environment a run gets; None when it does not list them in time."""
    assert target.path is not None
    argv = [target.path, "-i", "-c", _HISTORY_OFF.get(target.name, "") + probe(target.name)]
    if target.name == "fish":
        argv.insert(1, "--private")
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


def report_dict(reports: Sequence[ShellReport]) -> dict[str, object]:
    default = next((r.path for r in reports if r.default and r.installed), None)
    return {
        "schema_version": SCHEMA_VERSION,
        "ok": all(r.ok for r in reports),
        "default_shell": default,
        "shells": [r.to_dict() for r in reports],
    }


def exit_code(reports: Sequence[ShellReport]) -> int:
    """0 when every checked shell gets its best strategy, 1 when some check found a problem."""
    return 0 if all(r.ok for r in reports) else 1


# ---- the report for people ---------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def render_pretty(reports: Sequence[ShellReport], console: Console | None = None) -> None:
    """A table (one row per shell), then each problem with its advice, then a one-line verdict."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = console if console is not None else Console(highlight=False, markup=False, emoji=False)
    table = Table("shell", "path", "strategy", "integration", "start-up", "no rc", "verdict", box=None)
    table.columns[1].overflow = "fold"
    for r in reports:
        name = f"{r.name} *" if r.default else r.name
        if not r.installed:
            verdict = Text("not installed", style="dim") if r.ok else Text("missing", style="bold red")
            table.add_row(Text(name), Text(r.path or "—"), "", "", "", "", verdict)
            continue
        integration = "n/a" if not r.integration_available else ("yes" if r.integration else "no")
        if r.ok:
            verdict = Text("ok", style="green")
        elif r.rc_breaks_integration:
            verdict = Text("rc breaks it", style="bold red")
        else:
            verdict = Text("problem", style="bold red")
        table.add_row(Text(name), Text(r.path or ""), r.strategy or r.status or "", integration,
                      _seconds(r.startup_s), _seconds(r.startup_no_rc_s), verdict)
    out.print(table)
    if any(r.default for r in reports):
        out.print(Text("* used by a plain `safe-run COMMAND` ($SHELL, else passwd, else /bin/sh)", style="dim"))
    for r in reports:
        if r.problem:
            out.print(Text(f"\n{r.name}: {r.problem}", style="red"), soft_wrap=True)
            if r.advice:
                out.print(Text(f"  {r.advice}"), soft_wrap=True)
        for note in r.notes:
            out.print(Text(f"\n{r.name}: note: {note}"), soft_wrap=True)
    problems = [r.name for r in reports if not r.ok]
    checked = sum(1 for r in reports if r.installed)
    if problems:
        out.print(Text(f"\n{len(problems)} problem{'s' if len(problems) > 1 else ''} found ({', '.join(problems)})",
                       style="bold red"))
    else:
        summary = ("the shell gets its best strategy" if checked == 1
                   else f"all {checked} installed shells get their best strategy")
        out.print(Text(f"\n{summary}", style="bold green"))

"""`safe-run doctor`: real shells in a private HOME, and the verdict logic on hand-made results."""

from __future__ import annotations

import io
import os
import shutil
import stat
from pathlib import Path

import pytest
from rich.console import Console

from conftest import SafeRun, program_on_path, shell_path
from safe_run import doctor
from safe_run.core.result import Downgrade, Killed, Reason, Result, ShellInfo, Status, Strategy, error_result
from safe_run.core.request import RunRequest

SHELL_KEYS = {
    "name", "path", "installed", "default", "integration_available", "integration", "integration_no_rc",
    "best_strategy", "strategy", "strategy_no_rc", "status", "status_no_rc", "completion_reason",
    "startup_s", "startup_no_rc_s", "rc_breaks_integration", "rc_files", "rc_loaded", "rc_missing", "runs_as",
    "downgrades",
    "ok", "problem", "advice", "notes",
}
BEST = {"bash": "rich", "zsh": "rich", "fish": "rich", "dash": "none", "sh": "none"}


def by_name(report: dict) -> dict[str, dict]:
    return {entry["name"]: entry for entry in report["shells"]}


def replacement_shell() -> str:
    """A shell for a .bashrc to `exec`: dash where installed, else sh."""
    return "dash" if shutil.which("dash") else "sh"


# ---- real shells ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_clean_home_gets_the_best_strategy_everywhere(safe_run: SafeRun) -> None:
    shell_path("bash")
    outcome = safe_run("doctor", "--format", "json", timeout=90)
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    report = outcome.json
    assert report["schema_version"] == 1 and report["ok"] is True
    shells = by_name(report)
    assert list(shells)[:5] == ["bash", "zsh", "fish", "dash", "sh"]
    for entry in report["shells"]:
        assert set(entry) == SHELL_KEYS
    for name, best in BEST.items():
        entry = shells[name]
        if shutil.which(name) is None:
            assert (entry["installed"], entry["path"], entry["ok"]) == (False, None, True)
            continue
        assert entry["installed"] is True
        assert (entry["strategy"], entry["best_strategy"], entry["strategy_no_rc"]) == (best, best, best)
        assert entry["integration"] is (best == "rich") and entry["integration_available"] is (best == "rich")
        assert (entry["rc_breaks_integration"], entry["ok"]) == (False, True)
        assert (entry["problem"], entry["advice"]) == (None, None)
        assert entry["status"] == entry["status_no_rc"] == "completed"
        assert entry["downgrades"] == []
        assert isinstance(entry["startup_s"], float) and 0 < entry["startup_s"] < 10
        assert isinstance(entry["startup_no_rc_s"], float) and 0 < entry["startup_no_rc_s"] < 10
    # the fixture's SHELL is /bin/sh: that is the shell a plain run uses
    assert [entry["name"] for entry in report["shells"] if entry["default"]] == ["sh"]
    assert report["default_shell"] == shells["sh"]["path"]


def test_clean_home_pretty(safe_run: SafeRun) -> None:
    shell_path("bash")
    outcome = safe_run("doctor", "--shell", "bash", "--format", "pretty")
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    assert "\x1b[" not in outcome.stdout
    row = next(line for line in outcome.stdout.splitlines() if line.split()[:1] == ["bash"])
    assert row.split()[1:4] == [shell_path("bash"), "rich", "yes"] and row.split()[-1] == "ok"
    assert "the shell gets its best strategy" in outcome.stdout


@pytest.mark.slow
def test_bashrc_that_execs_another_shell_breaks_integration(safe_run: SafeRun) -> None:
    shell_path("bash")
    other = replacement_shell()
    (safe_run.home / ".bashrc").write_text(f"alias ll='ls -l'\nexec {other}\n")
    outcome = safe_run("doctor", "--shell", "bash", "--format", "json")
    assert outcome.returncode == 1, outcome.stdout + outcome.stderr
    [bash] = outcome.json["shells"]
    assert outcome.json["ok"] is False
    assert (bash["rc_breaks_integration"], bash["integration"], bash["integration_no_rc"]) == (True, False, True)
    assert (bash["strategy"], bash["strategy_no_rc"], bash["ok"]) == ("none", "rich", False)
    assert bash["downgrades"] and "integration did not start" in bash["downgrades"][0]["reason"]
    assert f"~/.bashrc replaces the shell (line 2: exec {other})" in bash["problem"]
    assert "strategy none" in bash["advice"] and f"--shell {other}" in bash["advice"]
    assert str(safe_run.home / ".bashrc") in bash["rc_files"]
    if os.path.isdir("/proc/self"):
        assert bash["runs_as"] == os.path.realpath(shutil.which(other))

    pretty = safe_run("doctor", "--shell", "bash", "--format", "pretty")
    assert pretty.returncode == 1
    assert "rc breaks it" in pretty.stdout and f"exec {other}" in pretty.stdout
    assert "1 problem found (bash)" in pretty.stdout


def test_rc_file_that_does_not_load_under_safe_run_is_reported(safe_run: SafeRun) -> None:
    (safe_run.home / ".bashrc").write_text('[ -n "${__sr_nonce-}" ] && return\nalias rc_alias=true\n')
    outcome = safe_run("doctor", "--shell", "bash", "--format", "json", timeout=60)
    entry = by_name(outcome.json)["bash"]
    assert outcome.returncode == 1
    assert (entry["ok"], entry["integration"], entry["rc_loaded"], entry["rc_missing"]) == (
        False, True, False, ["rc_alias"])
    assert "rc_alias" in entry["problem"]


def test_zsh_zdotdir_from_zshenv_is_checked_as_loaded(safe_run: SafeRun) -> None:
    zdotdir = safe_run.home / ".config" / "zsh"
    zdotdir.mkdir(parents=True)
    (safe_run.home / ".zshenv").write_text("export ZDOTDIR=$HOME/.config/zsh\n")
    (zdotdir / ".zshrc").write_text("alias from_zdotdir=true\nexport FROM_ZDOTDIR=yes\n")
    outcome = safe_run("doctor", "--shell", "zsh", "--format", "json", timeout=60)
    entry = by_name(outcome.json)["zsh"]
    assert (outcome.returncode, entry["ok"], entry["rc_loaded"], entry["rc_missing"]) == (0, True, True, [])
    assert str(zdotdir / ".zshrc") in entry["rc_files"] and str(safe_run.home / ".zshenv") in entry["rc_files"]


def test_shell_option_restricts_the_check_to_one_shell(safe_run: SafeRun) -> None:
    path = shell_path("dash")
    report = safe_run("doctor", "--shell", path, "--format", "json").json
    assert [(e["name"], e["path"], e["strategy"], e["ok"]) for e in report["shells"]] == [("dash", path, "none", True)]
    by_word = safe_run("doctor", "--shell", "dash", "--format", "json").json
    assert [e["path"] for e in by_word["shells"]] == [path]


@pytest.mark.parametrize("name", ["zsh", "fish"])
def test_zsh_and_fish_get_rich(safe_run: SafeRun, name: str) -> None:
    path = shell_path(name)
    outcome = safe_run("doctor", "--shell", path, "--format", "json")
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    [entry] = outcome.json["shells"]
    assert (entry["name"], entry["strategy"], entry["integration"], entry["ok"]) == (name, "rich", True, True)


def test_missing_shell_is_a_one_line_usage_error(safe_run: SafeRun) -> None:
    outcome = safe_run("doctor", "--shell", "/no/such", "--format", "pretty")
    assert outcome.returncode == 2
    assert outcome.stderr.count("\n") == 1 and "/no/such" in outcome.stderr and "Traceback" not in outcome.stderr
    assert outcome.stdout == ""


@pytest.mark.parametrize("verb", ["doctor", "sessions", "poll"])
def test_jsonl_is_a_usage_error_for_verbs_that_answer_once(safe_run: SafeRun, verb: str) -> None:
    """No run-style `finished` event: the usage error object, as for any other refused option."""
    outcome = safe_run(verb, "--format", "jsonl")
    assert outcome.returncode == 2
    assert "'jsonl' is not one of" in outcome.stderr and outcome.stderr.count("\n") == 1
    assert "event" not in outcome.json
    assert (outcome.json["status"], outcome.json["completion_reason"]) == ("error", "error")


@pytest.mark.slow
def test_a_missing_dollar_shell_is_a_problem(safe_run: SafeRun) -> None:
    shell_path("bash")
    outcome = safe_run("doctor", "--format", "json", env={"SHELL": "/no/such/shell"}, timeout=90)
    assert outcome.returncode == 1
    entry = by_name(outcome.json)["shell"]
    assert (entry["installed"], entry["default"], entry["ok"]) == (False, True, False)
    assert "$SHELL names /no/such/shell" in entry["problem"]


def test_a_program_called_doctor_runs_after_double_dash(safe_run: SafeRun, tmp_path: Path) -> None:
    env = {"PATH": program_on_path(tmp_path, "doctor", 'echo "program called doctor: $*"')}
    outcome = safe_run("--format", "json", "--", "doctor", "--shell", "x", env=env)
    assert (outcome.json["output"], outcome.json["exit_code"]) == ("program called doctor: --shell x\n", 0)


def test_help_documents_the_exit_statuses(safe_run: SafeRun) -> None:
    outcome = safe_run("doctor", "--help")
    assert outcome.returncode == 0
    assert "--shell PATH|NAME" in outcome.stdout and "Exit status: 0" in outcome.stdout


# ---- the verdict, without a terminal -------------------------------------------------------------

HOME = "/home/u"
BASH = doctor.Target("bash", "/usr/bin/bash")
DASH = doctor.Target("dash", "/usr/bin/dash")
LOST = Downgrade("rich", "none", "shell integration did not start: the shell waits at its prompt without "
                 "integration marks", 0.502)


def result(strategy: Strategy = Strategy.RICH, *, output: str = "", duration: float = 0.02,
           downgrades: tuple[Downgrade, ...] = (), exit_code: int | None = 0,
           killed: tuple[Killed, ...] = ()) -> Result:
    reason = Reason.SHELL_INTEGRATION if strategy is Strategy.RICH else Reason.SENTINEL
    return Result(Status.COMPLETED, exit_code, strategy, reason, doctor.POSIX_PROBE,
                  ShellInfo("bash", "/usr/bin/bash"), output=output, duration_s=duration,
                  downgrades=downgrades, killed=killed)


def failed(message: str) -> Result:
    return error_result(doctor.POSIX_PROBE, message)


def test_judge_clean_rich_shell() -> None:
    report = doctor.judge(BASH, result(duration=0.01234, output="/usr/bin/bash\n"), result(duration=0.009))
    assert (report.ok, report.integration, report.integration_no_rc) == (True, True, True)
    assert report.rc_breaks_integration is False
    assert (report.strategy, report.best_strategy) == ("rich", "rich")
    assert (report.startup_s, report.startup_no_rc_s) == (0.012, 0.009)
    assert (report.problem, report.advice, report.notes) == (None, None, [])
    assert report.runs_as == "/usr/bin/bash"
    assert doctor.exit_code([report]) == 0


def test_judge_names_that_plain_start_up_defines_and_the_run_lacks() -> None:
    with_rc = result(output="name:PATH\nname:greet\n/usr/bin/bash\n")
    reference = frozenset({"PATH", "greet", "rc_only", "__fish_on_interactive"})
    report = doctor.judge(BASH, with_rc, result(), [f"{HOME}/.bashrc"], home=HOME, reference=reference)
    assert (report.ok, report.rc_loaded, report.rc_missing) == (False, False, ["rc_only"])
    assert report.integration is True and report.problem is not None and "rc_only" in report.problem
    assert "~/.bashrc" in (report.advice or "")
    loaded = doctor.judge(BASH, with_rc, result(), reference=frozenset({"PATH"}))
    assert (loaded.ok, loaded.rc_loaded, loaded.rc_missing) == (True, True, [])
    unknown = doctor.judge(BASH, with_rc, result())
    assert (unknown.ok, unknown.rc_loaded) == (True, None)


def test_judge_shell_without_integration_is_fine_with_none() -> None:
    report = doctor.judge(DASH, result(Strategy.NONE), result(Strategy.NONE))
    assert (report.ok, report.integration, report.integration_available) == (True, False, False)
    assert report.best_strategy == "none"
    assert report.problem is None


def test_judge_rc_file_that_execs_another_shell() -> None:
    with_rc = result(Strategy.NONE, output="/usr/bin/dash\n", duration=0.51, downgrades=(LOST,))
    exec_lines = doctor.find_exec_lines([(f"{HOME}/.bashrc", "alias ll='ls -l'\nexec dash\n")])
    report = doctor.judge(BASH, with_rc, result(), [f"{HOME}/.bashrc"], exec_lines, HOME)
    assert (report.ok, report.rc_breaks_integration, report.integration) == (False, True, False)
    assert report.strategy == "none"
    assert report.problem.startswith("your ~/.bashrc replaces the shell (line 2: exec dash)")
    assert "strategy none" in report.advice and "0.5 s" in report.advice
    assert "move `exec dash` out of ~/.bashrc" in report.advice and "--shell dash" in report.advice
    assert report.downgrades == [LOST.to_dict()]
    assert doctor.exit_code([report]) == 1


@pytest.mark.parametrize("at_s", [0.0, 0.004, 0.049])
def test_judge_mentions_no_wait_that_did_not_happen(at_s: float) -> None:
    """An rc file that replaces the shell at once costs no wait: no "every run first waits 0.0 s"."""
    at_once = Downgrade("rich", "none", "shell integration did not start: the shell exited", at_s)
    with_rc = result(Strategy.NONE, output="/usr/bin/dash\n", downgrades=(at_once,))
    exec_lines = doctor.find_exec_lines([(f"{HOME}/.bashrc", "exec dash\n")])
    report = doctor.judge(BASH, with_rc, result(), [f"{HOME}/.bashrc"], exec_lines, HOME)
    assert "strategy none" in report.advice
    assert "waits" not in report.advice and "0.0 s" not in report.advice


def test_judge_names_the_replacement_without_an_exec_line() -> None:
    with_rc = result(Strategy.NONE, output="/usr/bin/zsh\n", downgrades=(LOST,))
    report = doctor.judge(BASH, with_rc, result(), [f"{HOME}/.bashrc"], [], HOME)
    assert report.problem.startswith("your start-up files (~/.bashrc) replace bash with zsh")
    assert "--shell zsh" in report.advice


def test_judge_without_evidence_gives_the_downgrade_reason() -> None:
    report = doctor.judge(BASH, result(Strategy.NONE, downgrades=(LOST,)), result(), [f"{HOME}/.bashrc"], [], HOME)
    assert report.rc_breaks_integration
    assert "(~/.bashrc)" in report.problem and LOST.reason in report.problem
    assert "--no-rc" in report.advice


def test_judge_rc_file_that_stops_the_shell() -> None:
    with_rc = failed("the shell exited with status 3 before the command started")
    report = doctor.judge(BASH, with_rc, result(), [f"{HOME}/.bashrc"], [], HOME)
    assert (report.ok, report.rc_breaks_integration, report.status, report.strategy, report.startup_s) == (
        False, True, "error", None, None)
    assert "bash cannot run a command: the shell exited with status 3" in report.problem
    assert "fails this way" in report.advice


def test_judge_shell_broken_even_without_rc_files_is_not_blamed_on_them() -> None:
    report = doctor.judge(BASH, failed("the shell died"), failed("the shell died"), [f"{HOME}/.bashrc"], [], HOME)
    assert (report.ok, report.rc_breaks_integration) == (False, False)
    assert "even without start-up files" in report.problem and "not caused by your start-up files" in report.advice

    lost = result(Strategy.NONE, downgrades=(LOST,))
    lost_anyway = doctor.judge(BASH, lost, lost)
    assert (lost_anyway.ok, lost_anyway.rc_breaks_integration, lost_anyway.integration_no_rc) == (False, False, False)
    assert "integration does not work in bash even without start-up files" in lost_anyway.problem


def test_judge_notes_slow_start_up_without_calling_it_a_problem() -> None:
    report = doctor.judge(BASH, result(duration=1.5), result(duration=0.01))
    assert report.ok and report.problem is None
    assert report.notes == [
        "start-up takes 1.50 s with your start-up files (0.01 s without them); every run pays it, "
        "and safe-run gives up after 10 s (--activation-timeout)"
    ]


def test_missing_targets() -> None:
    absent = doctor.missing_report(doctor.Target("zsh", None))
    assert (absent.installed, absent.ok, absent.problem, absent.path) == (False, True, None, None)
    broken = doctor.missing_report(doctor.Target("such", "/no/such", default=True, missing="$SHELL names /no/such"))
    assert (broken.ok, broken.problem) == (False, "$SHELL names /no/such")
    assert doctor.exit_code([absent]) == 0 and doctor.exit_code([absent, broken]) == 1
    data = doctor.report_dict([absent, broken])
    assert (data["schema_version"], data["ok"], data["default_shell"]) == (1, False, None)
    assert all(set(entry) == SHELL_KEYS for entry in data["shells"])


@pytest.mark.parametrize(("line", "program"), [
    ("exec dash", "dash"),
    ("  exec zsh -l", "zsh"),
    ("[ -x /bin/zsh ] && exec /bin/zsh", "/bin/zsh"),
    ("if [ -t 1 ]; then exec fish; fi", "fish"),
    ("exec >/tmp/log 2>&1", None),
    ("exec 2>&1", None),
    ("exec 3< /etc/passwd", None),
    ("# exec dash", None),
    ("echo exec dash", None),
])
def test_find_exec_lines(line: str, program: str | None) -> None:
    found = doctor.find_exec_lines([("/f", f"true\n{line}\n")])
    assert [(e.program, e.line, e.text) for e in found] == ([] if program is None else [(program, 2, line.strip())])


def executable(path: Path) -> str:
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_find_targets(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("bash", "fish", "dash", "ksh"):
        executable(bindir / name)
    (bindir / "sh").symlink_to("dash")
    env = {"PATH": str(bindir), "SHELL": str(bindir / "ksh")}
    targets = doctor.find_targets(env, passwd_shell=str(bindir / "bash"))
    assert [(t.name, t.path, t.default) for t in targets] == [
        ("bash", str(bindir / "bash"), False),
        ("zsh", None, False),
        ("fish", str(bindir / "fish"), False),
        ("dash", str(bindir / "dash"), False),
        ("sh", str(bindir / "sh"), False),
        ("ksh", str(bindir / "ksh"), True),
    ]
    # $SHELL naming a standard shell by another path is the same shell, marked as the default
    same = doctor.find_targets({"PATH": str(bindir), "SHELL": str(tmp_path / "bin" / "." / "sh")}, None)
    assert [t.name for t in same if t.default] == ["sh"] and len(same) == 5
    # a $SHELL that is not there is a problem; plain runs would fail
    missing = doctor.find_targets({"PATH": str(bindir), "SHELL": "/no/such"}, None)
    assert [(t.path, t.default, bool(t.missing)) for t in missing if t.path == "/no/such"] == [("/no/such", True, True)]
    assert sum(t.default for t in missing) == 1


def test_rc_files_are_those_a_run_loads(tmp_path: Path) -> None:
    home = tmp_path
    (home / ".bashrc").write_text("")
    (home / ".zshrc").write_text("")
    (home / "envfile").write_text("")
    assert str(home / ".bashrc") in doctor.rc_files("bash", {}, str(home))
    assert str(home / ".zshrc") in doctor.rc_files("zsh", {}, str(home))
    assert str(home / ".zshrc") not in doctor.rc_files("zsh", {"ZDOTDIR": str(home / "nowhere")}, str(home))
    assert doctor.rc_files("dash", {"ENV": str(home / "envfile")}, str(home)) == [str(home / "envfile")]
    assert doctor.rc_files("dash", {}, str(home)) == []


def test_check_runs_with_and_without_rc_files_and_stops_when_interrupted() -> None:
    requests: list[RunRequest] = []

    def fake_execute(request: RunRequest) -> Result:
        requests.append(request)
        return result(output="/usr/bin/bash\n")

    report, interrupted = doctor.check(BASH, fake_execute, {}, HOME, plain=lambda target, environ: frozenset())
    assert interrupted is None and report.ok and report.rc_loaded is True
    probe = doctor.probe("bash")
    assert probe.endswith(doctor.POSIX_PROBE)
    assert [(r.shell, r.load_rc, r.command) for r in requests] == [
        ("/usr/bin/bash", True, probe), ("/usr/bin/bash", False, probe)]
    assert all(r.timers.timeout is not None for r in requests)

    stopped = Result(Status.INTERRUPTED, None, None, Reason.INTERRUPTED, "", None, signal="SIGINT")
    _, interrupted = doctor.check(BASH, lambda request: stopped, {}, HOME)
    assert interrupted is stopped
    absent, interrupted = doctor.check(doctor.Target("zsh", None), fake_execute, {}, HOME)
    assert interrupted is None and absent.installed is False and len(requests) == 2


def test_render_pretty_shows_rows_problems_and_a_verdict() -> None:
    with_rc = result(Strategy.NONE, output="/usr/bin/dash\n", duration=0.51, downgrades=(LOST,))
    exec_lines = doctor.find_exec_lines([(f"{HOME}/.bashrc", "exec dash [/etc]\n")])
    broken = doctor.judge(doctor.Target("bash", "/usr/bin/bash", default=True), with_rc, result(),
                          [f"{HOME}/.bashrc"], exec_lines, HOME)
    fine = doctor.judge(DASH, result(Strategy.NONE), result(Strategy.NONE))
    absent = doctor.missing_report(doctor.Target("zsh", None))
    buffer = io.StringIO()
    doctor.render_pretty([broken, absent, fine], Console(file=buffer, width=100, color_system=None))
    text = buffer.getvalue()
    rows = {words[0]: words for words in map(str.split, text.splitlines())
            if words[:1] in (["bash"], ["zsh"], ["dash"])}
    assert rows["bash"][1:] == ["*", "/usr/bin/bash", "none", "no", "0.51", "s", "0.02", "s", "rc", "breaks", "it"]
    assert rows["zsh"][1:] == ["—", "not", "installed"]
    assert rows["dash"][1:] == ["/usr/bin/dash", "none", "n/a", "0.02", "s", "0.02", "s", "ok"]
    assert "bash: your ~/.bashrc replaces the shell (line 1: exec dash [/etc])" in text  # brackets are not markup
    assert "1 problem found (bash)" in text and "* used by a plain" in text

    buffer = io.StringIO()
    doctor.render_pretty([fine, absent], Console(file=buffer, width=100, color_system=None))
    assert "the shell gets its best strategy" in buffer.getvalue()


def test_named_target_is_marked_default_when_plain_runs_use_it(tmp_path: Path) -> None:
    bash = executable(tmp_path / "bash")
    dash = executable(tmp_path / "dash")
    assert doctor.named_target(bash, {"SHELL": bash}, None) == doctor.Target("bash", bash, default=True)
    assert doctor.named_target(dash, {"SHELL": bash}, None).default is False
    assert doctor.named_target(dash, {}, dash).default is True

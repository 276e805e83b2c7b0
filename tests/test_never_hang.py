"""Never hang, never lie: each way a command can fail to end cleanly, through real shells.

Timer options are set short where a test waits on them, so the suite stays fast; silent commands
run for real, because ending them early is exactly the failure these tests exist to catch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

# Every test here waits in real time (silences, timeouts, faults) for seconds.
pytestmark = pytest.mark.slow

SHORT = ("--idle", "0.3")


def with_shell(safe_run: SafeRun, name: str) -> SafeRun:
    safe_run.shell = shell_path(name)
    return safe_run


def assert_no_process_mentions(marker: str) -> None:
    """Nothing whose command line holds `marker` is still running anywhere on the machine."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        assert marker not in cmdline, f"left running: {cmdline}"


# ---- integration that never starts, or breaks mid-command -------------------------------------


def test_rc_that_execs_dash_falls_back_to_none(safe_run: SafeRun) -> None:
    shell_path("dash")
    (safe_run.home / ".bashrc").write_text("exec dash\n")
    result = with_shell(safe_run, "bash")(*SHORT, "--", "echo via dash; sh -c 'exit 6'").json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 6, "none")
    assert result["output"] == "via dash\n"
    assert [(d["from"], d["to"]) for d in result["downgrades"]] == [("rich", "none")]


def test_forced_rich_strategy_reports_that_integration_did_not_start(safe_run: SafeRun) -> None:
    shell_path("dash")
    (safe_run.home / ".bashrc").write_text("exec dash\n")
    outcome = with_shell(safe_run, "bash")(*SHORT, "--strategy", "rich", "--", "echo hi")
    assert outcome.returncode == 125 and "integration" in outcome.json["message"]


@pytest.mark.parametrize("after", ["echo after", ""])
def test_prompt_command_cleared_mid_command_keeps_the_lines_own_end(safe_run: SafeRun, after: str) -> None:
    """The typed line sends D itself at its end: the prompt's hooks are not needed for it."""
    command = f"unset PROMPT_COMMAND; trap - DEBUG; {after}\nsh -c 'exit 4'"
    result = with_shell(safe_run, "bash")(*SHORT, "--", command).json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 4, "rich")
    assert result["completion_reason"] == "shell_integration" and result["downgrades"] == []
    assert result["output"] == ("after\n" if after else "")


@pytest.mark.parametrize("after", ["echo after", ""])
def test_a_line_whose_end_mark_is_lost_downgrades_to_basic(safe_run: SafeRun, after: str) -> None:
    """Without the nonce the line's D is nobody's; the prompt's marks still come, and the status is asked."""
    command = f"unset __sr_nonce; trap - DEBUG; {after}\nsh -c 'exit 4'"
    result = with_shell(safe_run, "bash")(*SHORT, "--", command).json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 4, "basic")
    assert result["completion_reason"] == "prompt_idle"
    assert result["output"] == ("after\n" if after else "")
    assert [(d["from"], d["to"]) for d in result["downgrades"]] == [("rich", "basic")]


def test_all_integration_removed_mid_command_ends_by_the_lines_own_status(safe_run: SafeRun) -> None:
    (safe_run.home / ".bashrc").write_text("PS1='mine$ '\n")
    # The user's prompt again, as a theme would rebuild it, without the integration's marks.
    command = "unset PROMPT_COMMAND __sr_nonce; PS1='mine$ '; echo gone; sh -c 'exit 5'"
    result = with_shell(safe_run, "bash")(*SHORT, "--", command).json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 5, "none")
    assert result["completion_reason"] == "sentinel"
    assert result["output"] == "gone\n"


def test_zsh_hooks_removed_mid_command(safe_run: SafeRun) -> None:
    command = "precmd_functions=(); echo later; false"
    result = with_shell(safe_run, "zsh")(*SHORT, "--", command).json
    assert (result["status"], result["exit_code"]) == ("completed", 1)
    # The line sends its own D at its end: the precmd hooks are not needed for it.
    assert result["strategy"] == "rich" and result["output"] == "later\n"


# ---- silence is not an end ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "strategy"),
    [("bash", "rich"), ("bash", "basic"), ("bash", "none"), ("zsh", "rich"), ("zsh", "none"),
     ("fish", "rich"), ("dash", "auto")],
)
def test_silent_five_seconds_is_not_ended_early(safe_run: SafeRun, name: str, strategy: str) -> None:
    started = time.monotonic()
    outcome = with_shell(safe_run, name)(*SHORT, "--strategy", strategy, "--", "sleep 5; echo woke")
    elapsed = time.monotonic() - started
    result = outcome.json
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 0, "woke\n")
    assert elapsed >= 5


@pytest.mark.long
@pytest.mark.parametrize(("name", "strategy"), [("bash", "rich"), ("dash", "auto")])
def test_silent_fifteen_seconds_is_not_ended_early(safe_run: SafeRun, name: str, strategy: str) -> None:
    outcome = with_shell(safe_run, name)(*SHORT, "--strategy", strategy, "--", "sleep 15; echo woke")
    assert (outcome.json["status"], outcome.json["output"]) == ("completed", "woke\n")


def test_output_with_long_pauses(sr: SafeRun) -> None:
    result = sr(*SHORT, "--", "echo a; sleep 1.5; echo b; sleep 1.5; echo c").json
    assert (result["status"], result["output"]) == ("completed", "a\nb\nc\n")


def test_output_that_looks_like_prompts(sr: SafeRun) -> None:
    command = "printf '$ '; sleep 1; printf 'user@host:~$ '; sleep 1; printf '>>> '; sleep 1; echo; echo end"
    result = sr(*SHORT, "--", command).json
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert result["output"] == "$ user@host:~$ >>> \nend\n"
    assert result["completion_reason"] in ("shell_integration", "shell_exited")


# ---- shells without integration -----------------------------------------------------------------


def test_dash(safe_run: SafeRun) -> None:
    result = with_shell(safe_run, "dash")("--", "echo 'dash here'; cat <<EOF\nheredoc\nEOF\nfalse").json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 1, "none")
    assert result["completion_reason"] == "sentinel" and result["output"] == "dash here\nheredoc\n"


def test_bash_in_posix_mode(safe_run: SafeRun, tmp_path: Path) -> None:
    link = tmp_path / "sh"
    link.symlink_to(shell_path("bash"))
    safe_run.shell = str(link)
    result = safe_run("--", "echo posix; sh -c 'exit 3'").json
    assert (result["status"], result["exit_code"], result["strategy"]) == ("completed", 3, "none")
    assert result["output"] == "posix\n"


def test_dash_exit_ends_the_shell(safe_run: SafeRun) -> None:
    result = with_shell(safe_run, "dash")("--", "echo bye; exit 9").json
    assert (result["exit_code"], result["completion_reason"]) == (9, "shell_exited")


@pytest.mark.parametrize("command", [': "${API_KEY:?must be set}"; echo deploying', ". /nonexistent", "exit -1"])
def test_dash_abandoning_the_line_on_an_error_is_the_commands_end_not_an_input_wait(
    safe_run: SafeRun, command: str,
) -> None:
    """dash drops the rest of a line on these errors and is back at its prompt, reading its
    terminal as its own `read` would: its marked prompt, not a guess, says the command ended."""
    result = with_shell(safe_run, "dash")("--", command).json
    assert (result["status"], result["exit_code"], result["completion_reason"]) == ("completed", 2, "sentinel"), result
    assert "deploying" not in result["output"] and "marked prompt" in result["message"]


def test_dash_in_a_named_shell_goes_on_after_a_line_it_abandoned(safe_run: SafeRun) -> None:
    dash = with_shell(safe_run, "dash")
    try:
        assert dash("--in", "d", "--", "V=kept; cd /tmp").json["exit_code"] == 0
        assert dash("--in", "d", "--", 'echo "${NOPE:?unset}"').json["exit_code"] == 2
        after = dash("--in", "d", "--", 'echo "$V $PWD"').json
        assert (after["status"], after["output"]) == ("completed", "kept /tmp\n"), after
    finally:
        safe_run("close", "d")


# ---- syntax errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bash", "zsh", "fish", "dash"])
@pytest.mark.parametrize(
    ("command", "construct"),
    [("echo start; echo \"unclosed", "quote"), ("echo start; echo 'unclosed", "quote")],
)
def test_unmatched_quotes_run_nothing(safe_run: SafeRun, name: str, command: str, construct: str) -> None:
    outcome = with_shell(safe_run, name)("--", command)
    result = outcome.json
    assert outcome.returncode == 2
    assert (result["status"], result["completion_reason"], result["output"]) == ("syntax_error", "syntax_check", "")
    assert construct in result["message"] and "retry" in result["message"]


@pytest.mark.parametrize("name", ["bash", "zsh", "dash"])
def test_unterminated_heredoc(safe_run: SafeRun, name: str, tmp_path: Path) -> None:
    witness = tmp_path / "ran"
    outcome = with_shell(safe_run, name)("--", f"touch {witness}\ncat <<EOF\nnever closed\n")
    assert outcome.json["status"] == "syntax_error" and "heredoc" in outcome.json["message"]
    assert not witness.exists(), "nothing of a broken command may run"


def test_unclosed_if(safe_run: SafeRun) -> None:
    outcome = with_shell(safe_run, "bash")("--", "if true; then echo x")
    assert outcome.json["status"] == "syntax_error" and outcome.returncode == 2


# ---- waiting for input -------------------------------------------------------------------------------


def assert_input_required(outcome, prompt_part: str) -> dict:
    result = outcome.json
    assert outcome.returncode == 124
    assert (result["status"], result["exit_code"]) == ("input_required", None)
    assert prompt_part in (result["prompt"] or ""), result
    assert result["message"]
    return result


def test_python_repl(sr: SafeRun) -> None:
    result = assert_input_required(sr(*SHORT, "--", sys.executable), ">>>")
    assert result["completion_reason"] == "input_wait"
    assert any(k["command"].startswith("python") for k in result["killed"]), result["killed"]


def test_read_builtin(sr: SafeRun) -> None:
    result = assert_input_required(sr(*SHORT, "--", "echo before; read answer; echo never"), "")
    assert result["output"].startswith("before\n") and "never" not in result["output"]


def test_read_with_a_question(safe_run: SafeRun) -> None:
    assert_input_required(with_shell(safe_run, "bash")(*SHORT, "--", "read -p 'Continue? (y/n) ' a"), "(y/n)")


def test_password_prompt(sr: SafeRun) -> None:
    command = f"{sys.executable} -c 'import getpass; getpass.getpass()'"
    assert_input_required(sr(*SHORT, "--", command), "Password:")


def test_cat_waiting_on_the_terminal(safe_run: SafeRun) -> None:
    assert_input_required(with_shell(safe_run, "dash")(*SHORT, "--", "cat"), "")


def test_less_is_a_full_screen_program(sr: SafeRun, tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("".join(f"line {n}\n" for n in range(200)))
    result = assert_input_required(sr(*SHORT, "--", f"less {text}"), "")
    assert (result["completion_reason"], result["alternate_screen"]) == ("alternate_screen", True)


@pytest.mark.parametrize(("program", "reason"), [("vim -u NONE", "alternate_screen"), ("node", "input_wait")])
def test_editor_and_repl(safe_run: SafeRun, program: str, reason: str) -> None:
    shell_path(program.split()[0])
    result = assert_input_required(with_shell(safe_run, "bash")(*SHORT, "--", program), "")
    assert result["completion_reason"] == reason


def test_pager_defaults_keep_git_from_paging(safe_run: SafeRun) -> None:
    result = with_shell(safe_run, "bash")(*SHORT, "--", "echo $PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT").json
    assert result["output"] == "cat cat 0\n"
    kept = with_shell(safe_run, "bash")("--no-batch-env", "--", "echo [$GIT_PAGER]").json
    assert kept["output"] == "[]\n"


# ---- timeouts, background jobs, signals ---------------------------------------------------------------


def test_timeout_stops_everything(sr: SafeRun) -> None:
    seconds = 600 + os.getpid() % 1000  # a run that waited for it would outlast the test's own limit
    outcome = sr("--timeout", "2", "--", f"echo begun; sleep {seconds}")
    result = outcome.json
    assert outcome.returncode == 124
    assert (result["status"], result["completion_reason"]) == ("timeout", "timeout")
    assert result["output"] == "begun\n"
    assert_no_process_mentions(f"sleep {seconds}")


def test_background_jobs_are_killed_and_reported(sr: SafeRun) -> None:
    seconds = 300 + os.getpid() % 1000
    job = "$last_pid" if "fish" in str(sr.shell) else "$!"
    outcome = sr("--", f"sleep {seconds} & echo started {job}")
    result = outcome.json
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    # bash and zsh announce the job ("[1] 12345") as they would on any terminal.
    job_pid = int(result["output"].split()[-1])
    # Named as it was when killed: a fork that has not yet become `sleep` still shows the shell.
    assert job_pid in [k["pid"] for k in result["killed"]]
    assert_no_process_mentions(f"sleep {seconds}")


def test_a_job_in_the_shells_own_group_that_ignores_signals_is_still_killed(safe_run: SafeRun) -> None:
    """Without job control a background job shares the shell's group; SIGTERM and SIGHUP do not end it."""
    seconds = 500 + os.getpid() % 1000
    command = f"set +m; (trap '' TERM HUP; exec sleep {seconds}) & echo started"
    outcome = with_shell(safe_run, "bash")("--", command)
    assert outcome.json["status"] == "completed" and outcome.json["killed"]
    assert_no_process_mentions(f"sleep {seconds}")


def test_keep_background_leaves_jobs_running(safe_run: SafeRun) -> None:
    seconds = 400 + os.getpid() % 1000
    outcome = with_shell(safe_run, "bash")("--keep-background", "--", f"sleep {seconds} & echo started")
    assert outcome.json["killed"] == []
    # The job may not have become `sleep` yet when the answer comes (a fork of the shell until it
    # execs, slow on a loaded machine): it is looked for until then, bounded.
    deadline = time.monotonic() + 5
    while True:
        survivors = subprocess.run(["pgrep", "-f", f"^sleep {seconds}$"], capture_output=True, text=True).stdout.split()
        if survivors or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    try:
        assert survivors, "the background job should still run"
    finally:
        for pid in survivors:
            os.kill(int(pid), signal.SIGKILL)


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_to_safe_run_stops_the_command(safe_run: SafeRun, signum: int, status: int) -> None:
    seconds = 500 + os.getpid() % 1000
    proc = subprocess.Popen(
        [sys.executable, "-m", "safe_run", "--shell", shell_path("bash"), "--", f"echo up; sleep {seconds}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=safe_run.environment(),
    )
    try:
        deadline = time.monotonic() + 10
        while not subprocess.run(["pgrep", "-f", f"^sleep {seconds}$"], capture_output=True).stdout:
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        proc.send_signal(signum)
        stdout, _ = proc.communicate(timeout=10)
    finally:
        proc.kill()
    result = json.loads(stdout)
    assert proc.returncode == status
    assert (result["status"], result["completion_reason"], result["output"]) == ("interrupted", "interrupted", "up\n")
    assert result["signal"] == signal.Signals(signum).name
    assert_no_process_mentions(f"sleep {seconds}")
    assert safe_run.leftovers() == []


@pytest.mark.parametrize("name", ["INT", "TERM"])
def test_output_written_just_before_a_stop_signal_is_in_the_result(safe_run: SafeRun, name: str) -> None:
    """The signal comes a moment after the output (the shell's parent is safe-run itself): the
    terminal hands the output over a moment after it was written, and it is still the command's."""
    outcomes = [with_shell(safe_run, "bash")("--", f"echo hi; kill -{name} $PPID; sleep 5") for _ in range(3)]
    for outcome in outcomes:
        result = outcome.json
        assert (result["status"], result["signal"], result["output"]) == ("interrupted", f"SIG{name}", "hi\n"), result


# ---- huge and hostile output --------------------------------------------------------------------------


def test_binary_output_gives_valid_json(sr: SafeRun) -> None:
    # Random bytes may open an OSC string that swallows what follows, as on a real terminal,
    # so only validity and the end are asserted here.
    outcome = sr("--", "head -c 200000 /dev/urandom")
    assert (outcome.json["status"], outcome.json["exit_code"]) == ("completed", 0)
    assert len(outcome.json["output"]) > 1000


def test_invalid_utf8_is_replaced_not_fatal(sr: SafeRun) -> None:
    result = sr("--", "printf 'ok \\377\\376 \\303\\050 end\\n'").json
    assert result["output"] == "ok \ufffd\ufffd \ufffd( end\n"


def test_long_lines(safe_run: SafeRun) -> None:
    result = with_shell(safe_run, "bash")("--", "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end").json
    assert result["output_truncated"] and result["output"].endswith("x\nend\n")
    assert result["output"].startswith("x" * 1000)


@pytest.mark.long
def test_a_flood_of_output_keeps_memory_flat(safe_run: SafeRun) -> None:
    """256 MB through the terminal: head and tail survive, the middle is counted, and the peak
    memory stays under a quarter of what went through (it is about 32 MB here, for 64 MB as for
    1 GB): keeping any sizable share of the flood would cross the bound."""
    code = (
        "import resource, subprocess, sys;"
        "p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, capture_output=True);"
        "sys.stdout.write(p.stdout.decode());"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    command = "echo first; yes 'a line of output' 2>/dev/null | head -n 15058824; echo last"  # 17 B a line: 256 MB
    argv = [sys.executable, "-m", "safe_run", "--shell", shell_path("bash"), "--", command]
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=safe_run.environment(), timeout=600)
    json_line, rss_kb = proc.stdout.rstrip("\n").rsplit("\n", 1)
    result = json.loads(json_line)
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert result["output"].startswith("first\na line of output\n")
    assert result["output"].endswith("a line of output\nlast\n")
    assert result["output_truncated"] and result["output_dropped_bytes"] > 250_000_000
    assert int(rss_kb) < 64 * 1024, f"peak RSS {int(rss_kb) // 1024} MB"


def test_log_keeps_the_raw_transcript(sr: SafeRun, tmp_path: Path) -> None:
    log = tmp_path / "raw.log"
    result = sr("--log", str(log), "--", "printf '\\033[31mred\\033[0m\\n'").json
    assert result["output"] == "red\n"
    assert b"\x1b[31mred\x1b[0m" in log.read_bytes()

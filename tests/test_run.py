"""One command through each real shell in a real PTY, as a caller sees it: JSON and exit status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

RESULT_KEYS = {
    "schema_version", "status", "exit_code", "strategy", "completion_reason", "command", "shell",
    "output", "output_truncated", "output_dropped_bytes", "duration_s", "message", "downgrades",
    "session_id", "prompt", "alternate_screen", "reads_keyboard", "secret", "recording", "killed", "signal", "shell_id", "shell_name", "cwd", "fresh",
    "reinjected",
}


def completed(outcome, exit_code: int = 0, output: str | None = None) -> dict:
    result = outcome.json
    assert result["status"] == "completed", result
    assert result["exit_code"] == exit_code, result
    assert outcome.returncode == exit_code
    if output is not None:
        assert result["output"] == output
    return result


@pytest.mark.parametrize("code", [0, 1, 42])
def test_exit_codes(sr: SafeRun, code: int) -> None:
    result = completed(sr("--", f"echo start; sh -c 'exit {code}'"), code, "start\n")
    assert result["strategy"] == "rich"
    assert result["completion_reason"] == "shell_integration"


def test_json_shape(sr: SafeRun) -> None:
    outcome = sr("--format", "json", "echo", "hello", "world")
    result = outcome.json
    assert set(result) == RESULT_KEYS
    assert outcome.stdout.count("\n") == 1, "exactly one JSON object on stdout"
    assert result["command"] == "echo hello world"
    assert result["output"] == "hello world\n"
    assert result["shell"]["path"] == sr.shell
    assert result["shell"]["name"] in sr.shell
    assert result["downgrades"] == [] and result["session_id"] is None and result["message"] is None
    assert result["killed"] == [] and result["prompt"] is None and result["alternate_screen"] is False
    assert result["output_truncated"] is False
    assert 0 < result["duration_s"] < 30


def test_multiline_and_blank_lines(sr: SafeRun) -> None:
    command = "echo\necho\necho a\n\necho\necho\necho b\necho\n"
    completed(sr("--", command), 0, "\n\na\n\n\nb\n\n")


def test_output_without_final_newline(sr: SafeRun) -> None:
    completed(sr("--", "printf 'x\\ny'"), 0, "x\ny")


POSIX_QUOTING = r"""cat <<'EOF'
single $HOME `date` \n "quoted"
EOF
cat <<EOF
expanded $((1 + 2))
EOF
printf '%s|' "a b" 'c"d' "e'f" back\\slash $'tab\there' 'bang!' "wow!!"
echo
echo héllo → 世界 🎉
"""

POSIX_EXPECTED = (
    'single $HOME `date` \\n "quoted"\n'
    "expanded 3\n"
    "a b|c\"d|e'f|back\\slash|tab\there|bang!|wow!!|\n"
    "héllo → 世界 🎉\n"
)


@pytest.mark.parametrize("name", ["bash", "zsh"])
def test_posix_quoting_heredoc_unicode(safe_run: SafeRun, name: str) -> None:
    safe_run.shell = shell_path(name)
    completed(safe_run("--", POSIX_QUOTING), 0, POSIX_EXPECTED)


def test_fish_quoting_and_unicode(safe_run: SafeRun) -> None:
    safe_run.shell = shell_path("fish")
    command = "printf '%s|' \"a b\" 'c\"d' \"e'f\" 'bang!' \"wow!!\" back\\\\slash\necho\necho héllo → 世界 🎉\n"
    completed(safe_run("--", command), 0, "a b|c\"d|e'f|bang!|wow!!|back\\slash|\nhéllo → 世界 🎉\n")


def test_command_file_from_stdin(sr: SafeRun) -> None:
    completed(sr("--command-file", "-", stdin=b"echo from stdin\n"), 0, "from stdin\n")


def test_command_file(sr: SafeRun, tmp_path: Path) -> None:
    path = tmp_path / "cmd.txt"
    path.write_text("echo from file; false\n")
    completed(sr("--command-file", str(path)), 1, "from file\n")


def test_colour_and_progress_lines_are_cleaned(sr: SafeRun) -> None:
    command = r"printf '\033[1;31mred\033[0m plain\n'; printf ' 10%%\r 50%%\r100%%\n'; printf 'abc\bd\n'"
    completed(sr("--", command), 0, "red plain\n100%\nabd\n")


def test_large_command(sr: SafeRun) -> None:
    """Far beyond the tty's 4 KB line buffer: the text travels by file, not by typing."""
    line = "echo " + "x" * 95 + "\n"
    command = line * 2000 + "echo done"
    assert len(command) > 200_000
    result = completed(sr("--command-file", "-", stdin=command.encode()), 0)
    lines = result["output"].splitlines()
    assert len(lines) == 2001 and lines[-1] == "done" and lines[0] == "x" * 95


@pytest.mark.parametrize("family", ["633", "133"])
def test_spoofed_end_marks_do_not_end_the_run(sr: SafeRun, family: str) -> None:
    command = (
        f"printf '\\033]{family};D;0\\007'; printf '\\033]{family};A\\007\\033]{family};B\\007'; "
        f"printf '\\033]633;D;0;0123456789abcdef0123456789abcdef\\007'; sleep 0.3; echo after; sh -c 'exit 5'"
    )
    completed(sr("--", command), 5, "after\n")


def test_exit_ends_the_shell(sr: SafeRun) -> None:
    result = completed(sr("--", "echo bye; exit 3"), 3)
    # fish runs its fish_postexec event, and so sends a trusted D, before it exits.
    expected = {"shell_exited", "shell_integration"} if "fish" in str(sr.shell) else {"shell_exited"}
    assert result["completion_reason"] in expected
    assert result["output"].startswith("bye\n")


def test_a_background_job_ending_during_the_command_keeps_the_end_mark(sr: SafeRun) -> None:
    """fish draws its prompt before fish_postexec when a job's report comes first."""
    job = "sleep 0.1 &; sleep 0.5; false" if "fish" in str(sr.shell) else "sleep 0.1 & sleep 0.5; false"
    result = completed(sr("--", job), 1)
    assert (result["strategy"], result["completion_reason"], result["downgrades"]) == ("rich", "shell_integration", [])


def test_a_job_reported_during_wait_is_no_prompt_and_nothing_is_typed(sr: SafeRun) -> None:
    """fish asks for its prompt, without drawing it, when a job's report comes during `wait`."""
    job = "sleep 0.1 &; wait; echo waited" if "fish" in str(sr.shell) else "sleep 0.1 & wait; echo waited"
    result = completed(sr("--", job), 0)
    assert result["output"].endswith("waited\n") and result["downgrades"] == [], result


@pytest.mark.parametrize("name", ["bash", "zsh"])
def test_set_e_failure_ends_the_shell(safe_run: SafeRun, name: str) -> None:
    safe_run.shell = shell_path(name)
    result = completed(safe_run("--", "set -e; echo one; false; echo never"), 1, "one\n")
    assert result["completion_reason"] == "shell_exited"


def test_exec_replaces_the_shell(sr: SafeRun) -> None:
    result = completed(sr("--", "exec true"), 0, "")
    assert result["completion_reason"] == "shell_exited"


def test_cwd_and_env(sr: SafeRun, tmp_path: Path) -> None:
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    outcome = sr("--cwd", str(workdir), "--env", "GREETING=it's a \"test\"", "--env", "EMPTY=", "--",
                 "pwd; echo \"$GREETING\"; echo \"[$EMPTY]\"")
    completed(outcome, 0, f"{workdir}\nit's a \"test\"\n[]\n")


def test_nonce_never_reaches_the_command_environment(sr: SafeRun) -> None:
    result = completed(sr("--", "env"), 0)
    assert not re.search(r"[0-9a-f]{32}", result["output"]), "a nonce-like value leaked into env"
    assert "__sr" not in result["output"]


def test_private_directory_is_removed(sr: SafeRun) -> None:
    completed(sr("--", "echo $SHELL >/dev/null"), 0)
    assert [name for name in sr.leftovers() if name.startswith("safe-run")] == []


def test_term_is_set_for_the_emulated_terminal(sr: SafeRun) -> None:
    completed(sr("--", "echo $TERM", env={"TERM": "dumb"}), 0, "xterm-256color\n")


def test_pretty_output(sr: SafeRun) -> None:
    outcome = sr("--format", "pretty", "--", "echo visible; sh -c 'exit 4'")
    assert outcome.returncode == 4
    assert outcome.stdout == "visible\n"
    assert "completed" in outcome.stderr and "exit 4" in outcome.stderr
    assert "\x1b[" not in outcome.stderr, "no colour when stderr is not a terminal"


def test_auto_format_is_json_without_a_tty(sr: SafeRun) -> None:
    assert sr("echo hi").json["output"] == "hi\n"


def test_a_sigterm_to_the_shell_is_its_own_way_and_said(sr: SafeRun) -> None:
    """`kill $$`, as a script's `die` does: bash and zsh at a prompt ignore it and go on, and the
    result says so; fish at a prompt ends, and the result names the signal."""
    assert sr.shell is not None
    if "fish" in Path(sr.shell).name:
        result = completed(sr("--", "echo x; kill -TERM $fish_pid; echo y"), 143, "x\n")
        assert "ended by SIGTERM" in result["message"]
        return
    result = completed(sr("--", "echo x; kill -TERM $$; echo y"), 0, "x\ny\n")
    assert "sent its shell SIGTERM (`kill $$`), which an interactive shell ignores" in result["message"]
    assert completed(sr("--", "echo plain"), 0, "plain\n")["message"] is None

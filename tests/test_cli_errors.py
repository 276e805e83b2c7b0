"""Bad input: one clear line, a documented exit status, JSON when JSON was asked for, no leftovers."""

from __future__ import annotations

import pytest

from conftest import SafeRun


def assert_usage_error(outcome, needle: str) -> None:
    assert outcome.returncode == 2
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("safe-run: "), outcome.stderr
    assert needle in lines[0]
    assert "Traceback" not in outcome.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "no command"),
        (["--", ""], "no command"),
        (["--", "   \n "], "no command"),
        (["--bogus-option", "true"], "--bogus-option"),
        (["--env", "NOEQUALS", "true"], "NAME=VALUE"),
        (["--env", "1BAD=x", "true"], "--env: '1BAD' is not a variable name"),
        (["--env", "=x", "true"], "--env: '' is not a variable name"),
        (["--activation-timeout", "-1", "true"], "negative"),
        (["--format", "xml", "true"], "xml"),
        (["--cwd", "/no/such/dir", "true"], "--cwd '/no/such/dir' is not a directory"),
        (["--max-output", "10", "true"], "--max-output must be a whole number of at least 1024 bytes, not 10"),
        (["--in", "bad name", "true"], "'bad name' is not a shell name"),
        (["--command-file", "/no/such/file"], "/no/such/file"),
        (["--command-file", "-", "echo", "x"], "not both"),
        (["--idle-expire", "5", "true"], "--idle-expire is a persistent shell's: it goes with --in NAME"),
    ],
)
def test_usage_errors(safe_run: SafeRun, args: list[str], needle: str) -> None:
    outcome = safe_run(*args)
    assert_usage_error(outcome, needle)
    assert outcome.json["status"] == "error", "stdout is not a TTY, so JSON was asked for"


def test_nul_byte_is_a_usage_error(safe_run: SafeRun) -> None:
    assert_usage_error(safe_run("--command-file", "-", stdin=b"echo a\0b"), "NUL")


def test_invalid_utf8_command_file(safe_run: SafeRun) -> None:
    assert_usage_error(safe_run("--command-file", "-", stdin=b"echo \xff"), "UTF-8")


def test_usage_error_in_pretty_mode_prints_nothing_on_stdout(safe_run: SafeRun) -> None:
    outcome = safe_run("--format", "pretty", "--bogus")
    assert outcome.returncode == 2 and outcome.stdout == ""


@pytest.mark.parametrize("shell", ["/no/such/shell", "/etc/passwd", "no-such-shell-anywhere"])
def test_bad_shell(safe_run: SafeRun, shell: str) -> None:
    outcome = safe_run("--shell", shell, "--format", "json", "true")
    assert outcome.returncode == 125
    result = outcome.json
    assert result["status"] == "error" and result["exit_code"] is None
    assert shell in result["message"]
    assert outcome.stderr.strip().count("\n") == 0 and "Traceback" not in outcome.stderr
    assert safe_run.leftovers() == []


def test_shell_that_dies_at_start_up(safe_run: SafeRun) -> None:
    (safe_run.home / ".bashrc").write_text("echo 'rc is broken' >&2; exit 9\n")
    outcome = safe_run("--shell", "/bin/bash", "true")
    assert outcome.returncode == 125
    result = outcome.json
    assert result["status"] == "error"
    assert "status 9" in result["message"] and "rc is broken" in result["message"]
    assert safe_run.leftovers() == []


def test_help_and_version(safe_run: SafeRun) -> None:
    assert safe_run("--help").returncode == 0
    version = safe_run("--version")
    assert version.returncode == 0 and version.stdout.startswith("safe-run")

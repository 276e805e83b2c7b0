"""bash prints "exit" when the exit builtin ends it: the shell's word, never the command's output."""

from __future__ import annotations

import pytest

from conftest import SafeRun


@pytest.fixture
def bash(safe_run: SafeRun) -> SafeRun:
    safe_run.shell = "bash"
    return safe_run


@pytest.mark.parametrize(
    ("command", "output", "exit_code"),
    [
        ("echo working; exit 3", "working\n", 3),
        ("echo exit; exit 3", "exit\n", 3),
        ("echo exit", "exit\n", 0),
        ("f() { builtin exit 4; }; echo a; f", "a\n", 4),
        ("(echo exit; exit 0); echo b; exit 1", "exit\nb\n", 1),
        ("set -e; echo exit; false", "exit\n", 1),
        ("echo exit; exec true", "exit\n", 0),
        ("echo exit; kill -HUP $$", "exit\n", 129),
        ("echo working; exit 130", "working\n", 130),
        ("echo working; exit -1", "working\n", 255),
    ],
)
def test_only_the_shells_own_word_is_taken_out(bash: SafeRun, command: str, output: str, exit_code: int) -> None:
    result = bash("--format", "json", "--", command).json
    assert (result["output"], result["exit_code"]) == (output, exit_code)


def test_an_exit_trap_from_the_users_files_still_runs(bash: SafeRun) -> None:
    (bash.home / ".bashrc").write_text("trap 'echo rc-bye' EXIT\n")
    result = bash("--format", "json", "--", "echo working; exit 3").json
    assert (result["output"], result["exit_code"]) == ("working\nrc-bye\n", 3)


def test_an_exit_trap_the_command_sets_keeps_the_word(bash: SafeRun) -> None:
    result = bash("--format", "json", "--", "trap 'echo bye' EXIT; echo working; exit 2").json
    assert result["output"] == "working\nexit\nbye\n"

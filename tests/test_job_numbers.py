"""A command's own background jobs are numbered as at a prompt: its first is %1, and `kill %1`,
`wait %1` and `%%` act on it, in bash, zsh and fish (fish's `kill` takes no %1, as at its prompt)."""

from __future__ import annotations

import os

import pytest

from conftest import SafeRun, shell_path


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_kill_percent_one_ends_the_commands_first_job(safe_run: SafeRun, shell: str) -> None:
    safe_run.shell = shell_path(shell)
    seconds = 400 + os.getpid() % 500
    result = safe_run("--format", "json", "--", f"sleep {seconds} & jobs; kill %1; wait %1; echo status $?").json
    assert result["status"] == "completed", result
    assert result["output"].startswith("[1] "), "the first job is [1]"
    assert "status 143" in result["output"], "kill %1 reached the sleep, and wait %1 saw it end"
    assert result["killed"] == [], "nothing was left for the sweep"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_the_current_job_is_the_commands_latest(safe_run: SafeRun, shell: str) -> None:
    safe_run.shell = shell_path(shell)
    result = safe_run("--format", "json", "--", "sleep 301 & sleep 302 & kill %% %-; wait; jobs; echo done").json
    assert result["status"] == "completed" and result["output"].rstrip().endswith("done"), result
    assert result["killed"] == []


def test_fish_numbers_the_commands_first_job_one(safe_run: SafeRun) -> None:
    safe_run.shell = shell_path("fish")
    result = safe_run("--format", "json", "--", "sleep 303 &; jobs; kill (jobs -lp)").json
    assert result["status"] == "completed", result
    assert result["output"].splitlines()[1].startswith("1\t"), result["output"]
    assert result["killed"] == []


def test_comments_in_a_zsh_command_are_comments_and_the_option_stays_the_users(safe_run: SafeRun) -> None:
    safe_run.shell = shell_path("zsh")
    command = "# a note\necho 'a # b' # said\n[[ -o interactivecomments ]] && echo on || echo off"
    result = safe_run("--format", "json", "--", command).json
    assert (result["status"], result["output"]) == ("completed", "a # b\noff\n"), result


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_job_left_as_the_line_ends_is_reported_as_its_program(safe_run: SafeRun, shell: str) -> None:
    """The sweep came before the forked job had started `sleep`: it was reported as the shell
    (`zsh`), and an agent read that safe-run had killed a shell."""
    safe_run.shell = shell_path(shell)
    result = safe_run("--format", "json", "--", "sleep 304 & echo started").json
    assert result["status"] == "completed" and result["output"].strip().endswith("started"), result
    assert [killed["command"] for killed in result["killed"]] == ["sleep"], result

"""The command runs with the process state of a fresh terminal window, whatever Python changed.

Python ignores SIGPIPE and SIGXFSZ in its own process, and an ignored signal stays ignored across
exec: a shell started from Python without care runs every pipeline with SIGPIPE ignored. These
tests run real shells through safe-run and compare with a shell started the way a terminal
emulator starts one.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

ALL_SHELLS = ("bash", "zsh", "fish", "dash")
# Integrated shells report the end themselves; dash's end is found by the sentinel fallback.
PROMPT_REASONS = ("shell_integration", "sentinel")


@pytest.fixture(params=ALL_SHELLS)
def any_shell(request: pytest.FixtureRequest, safe_run: SafeRun) -> SafeRun:
    """safe-run bound to bash, zsh, fish and dash in turn (dash runs without integration)."""
    safe_run.shell = shell_path(request.param)
    return safe_run


def signal_lines(text: str) -> dict[str, str]:
    """The Sig* lines of /proc/PID/status by name. SigQ's first figure counts the signals queued
    for the whole user at that moment (other processes' too), so only its limit is compared."""
    lines = dict(line.split(":", 1) for line in text.splitlines() if line.startswith("Sig"))
    lines = {name: value.strip() for name, value in lines.items()}
    if "SigQ" in lines:
        lines["SigQ"] = lines["SigQ"].split("/")[-1]
    return lines


def reference_signal_state(safe_run: SafeRun, out: Path) -> str:
    """`grep Sig /proc/self/status` typed into the same shell started as a terminal window starts it.

    The reference is `script(1)` (a terminal emulator in C) running `env --default-signal SHELL -i`:
    a new PTY and session, every signal at its default disposition (what a login or a terminal
    emulator hands a shell; env resets whatever Python and this test runner changed), and the
    signal mask of this test process, which Python leaves empty. The shell is the same binary with
    the same empty HOME, interactive, and grep is run by it as a foreground job, exactly as the
    command is inside safe-run. Output goes to a file so that no prompt or colour is in the way.
    """
    script = shutil.which("script")
    if script is None:
        pytest.skip("script(1) is not installed")
    if subprocess.run(["env", "--default-signal", "true"], capture_output=True).returncode != 0:
        pytest.skip("env has no --default-signal (coreutils older than 8.31)")
    assert safe_run.shell is not None
    # zsh with no .zshrc asks an ordinary user (never root) to make one first: an empty one keeps
    # the typed line for the shell's prompt, and safe-run's zsh reads the same file.
    (safe_run.home / ".zshrc").touch()
    subprocess.run(
        [script, "-qec", f"env --default-signal {shlex.quote(safe_run.shell)} -i", "/dev/null"],
        input=f"grep Sig /proc/self/status >{out}\nexit\n".encode(),
        env=safe_run.environment({"TERM": "xterm-256color"}),
        cwd=safe_run.home,
        capture_output=True,
        timeout=30,
    )
    return out.read_text()


def test_signal_state_is_that_of_a_plain_interactive_shell(any_shell: SafeRun, tmp_path: Path) -> None:
    reference = signal_lines(reference_signal_state(any_shell, tmp_path / "reference"))
    assert set(reference) >= {"SigQ", "SigPnd", "SigBlk", "SigIgn", "SigCgt"}, reference

    inside = tmp_path / "inside"
    outcome = any_shell("--format", "json", "--timeout", "20", "--", f"grep Sig /proc/self/status >{inside}")
    assert outcome.json["status"] == "completed", outcome.json
    assert signal_lines(inside.read_text()) == reference
    assert int(reference["SigIgn"], 16) & (1 << 12) == 0, "SIGPIPE (13) must not be ignored in the reference"


def test_no_descriptor_of_the_caller_reaches_the_command(any_shell: SafeRun, tmp_path: Path) -> None:
    """A descriptor safe-run was started with (and did not mark close-on-exec) stays out of the shell."""
    marker = tmp_path / "caller-descriptor"
    shell_pid = "$fish_pid" if any_shell.shell and "fish" in os.path.basename(any_shell.shell) else "$$"
    command = f"readlink /proc/{shell_pid}/fd/*; echo children; command ls -1 /proc/self/fd"
    with marker.open("w") as held:
        proc = subprocess.run(
            [sys.executable, "-m", "safe_run", "--shell", str(any_shell.shell), "--format", "json",
             "--timeout", "20", "--", command],
            stdin=subprocess.DEVNULL, capture_output=True, env=any_shell.environment(),
            pass_fds=(held.fileno(),), timeout=60,
        )
    output = json.loads(proc.stdout)["output"]
    assert str(marker) not in output
    # ls itself holds 0-2 and the directory it lists.
    assert output.split("children\n")[1].split() == ["0", "1", "2", "3"], output


def pipeline_cases() -> list[tuple[str, str, str]]:
    """(shell, command, expected output as a regular expression), as a plain terminal gives them.

    `while true; do echo y; done | head -n 1` is left out for fish: fish runs the loop in the shell
    process itself, which keeps SIGPIPE ignored in any terminal, so it never ends there either.
    dash has no pipefail: the writer's own status shows the SIGPIPE instead.
    """
    cases = []
    for shell in ALL_SHELLS:
        cases.append((shell, "yes | head -n 5", re.escape("y\n" * 5)))
        cases.append((shell, "tr -dc a-z0-9 </dev/urandom | head -c 16", "[a-z0-9]{16}"))
    for shell in ("bash", "zsh"):
        cases.append((shell, "set -o pipefail; seq 1 1000000 | head -n 3; echo $?", re.escape("1\n2\n3\n141\n")))
    cases.append(("fish", "seq 1 1000000 | head -n 3; echo $pipestatus", re.escape("1\n2\n3\n141 0\n")))
    for shell in ("bash", "zsh", "dash"):
        cases.append((shell, "while true; do echo y; done | head -n 1", re.escape("y\n")))
        cases.append((shell, '{ seq 1 1000000; echo "writer=$?" >&2; } | head -n 3', re.escape("1\n2\n3\nwriter=141\n")))
    return cases


@pytest.mark.parametrize(("shell", "command", "expected"), pipeline_cases())
def test_a_writer_to_a_closed_pipe_dies_of_sigpipe(safe_run: SafeRun, shell: str, command: str, expected: str) -> None:
    safe_run.shell = shell_path(shell)
    outcome = safe_run("--format", "json", "--timeout", "20", "--", command)
    result = outcome.json
    assert result["status"] == "completed", result
    assert result["exit_code"] == 0 and outcome.returncode == 0
    assert result["completion_reason"] in PROMPT_REASONS, result
    assert re.fullmatch(expected, result["output"]), result["output"]
    assert "Broken pipe" not in outcome.stdout + outcome.stderr
    assert [name for name in safe_run.leftovers() if name.startswith("safe-run")] == []

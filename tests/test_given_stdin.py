"""The caller's standard input as the command's (`--stdin`, and a person's pipeline by default).

At a prompt `seq 9 | sh -c fzf` gives fzf the pipe as its standard input, while its keys come from
the terminal. safe-run does the same: the pipe is the command's standard input, the command's
terminal stays its terminal, and the descriptor that carried the pipe into the shell is not left
to the command.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path
from test_streaming import Tmux, tmux  # noqa: F401 - the tmux fixture, a person's pane

FAMILIES = ["bash", "zsh", "fish"]


@pytest.fixture
def bash(safe_run: SafeRun) -> SafeRun:
    safe_run.shell = shell_path("bash")
    return safe_run
# Reads its standard input to the end, then asks the person on the terminal, as fzf does.
BOTH = """
import sys
n = len(sys.stdin.read().split())
out, keys = open("/dev/tty", "w"), open("/dev/tty")
out.write(f"{n} lines; keep? [y/N] "); out.flush()
print("answer", keys.readline().strip(), n)
"""


@pytest.mark.parametrize("name", FAMILIES)
def test_the_command_reads_the_given_stdin_and_nothing_else_of_it_is_left_open(safe_run: SafeRun, name: str) -> None:
    safe_run.shell = shell_path(name)
    listing = "ls /proc/self/fd | tr '\\n' ' '" if name != "fish" else "ls /proc/self/fd | string join ' '"
    done = safe_run("--stdin", "--format", "json", "--", f"cat; echo; {listing}", stdin=b"one\ntwo\n")
    answer = done.json
    assert answer["status"] == "completed" and answer["exit_code"] == 0, answer
    lines = str(answer["output"]).splitlines()
    assert lines[:2] == ["one", "two"]
    assert lines[-1].split() == ["0", "1", "2", "3"], "only the terminal and ls's own directory"


@pytest.mark.parametrize("name", FAMILIES)
def test_the_shells_own_read_reads_the_given_stdin(safe_run: SafeRun, name: str) -> None:
    """fish's builtins read the shell's own standard input, not the `<&N` of the block around the
    command, and `read` waited on the terminal: the given stdin is piped into the block."""
    safe_run.shell = shell_path(name)
    loop = 'while read -l l; echo "<$l>"; end' if name == "fish" else 'while read -r l; do echo "<$l>"; done'
    answer = safe_run("--stdin", "--format", "json", "--", loop, stdin=b"b\na\n").json
    assert (answer["status"], answer["output"]) == ("completed", "<b>\n<a>\n"), answer


def test_a_command_that_ignores_the_given_stdin_still_reads_its_terminal_as_usual(bash: SafeRun) -> None:
    answer = bash("--stdin", "--format", "json", "--", "test -t 0 && echo tty || echo not-a-tty; "
                       "test -t 1 && echo out-tty", stdin=b"").json
    assert answer["output"] == "not-a-tty\nout-tty\n"


def test_the_given_stdin_goes_with_the_commands_own_cd_and_variables(bash: SafeRun, tmp_path: Path) -> None:
    """The command runs in the shell itself, not a subshell: what it changes is seen after it."""
    answer = bash("--stdin", "--format", "json", "--", f"read x; cd {tmp_path}; y=$x; echo $y; pwd",
                       stdin=b"value\n").json
    assert answer["output"] == f"value\n{tmp_path}\n"


@pytest.mark.parametrize("args", [["--in", "dev"], ["--yield-after", "5"]])
def test_stdin_cannot_go_to_a_named_shell_or_a_session(bash: SafeRun, args: list[str]) -> None:
    done = bash("--stdin", *args, "--", "cat", stdin=b"x\n")
    assert done.returncode == 2 and "--stdin" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3


def test_a_slow_writer_is_waited_for_without_a_person(bash: SafeRun, tmp_path: Path) -> None:
    """Nothing is stopped for a pipe quiet longer than the idle window (its writer may be slow)."""
    script = tmp_path / "slow.sh"
    script.write_text(f"(sleep 1.5; echo late) | {sys.executable} -m safe_run --stdin --format json -- cat\n")
    done = bash("--format", "json", "--", f"sh {script}")
    inner = json.loads(str(done.json["output"]))
    assert inner["status"] == "completed" and inner["output"] == "late\n", inner


# ---- at a person's terminal: the pipe is the command's, the keys are the person's ---------------


def line(command: str, source: str) -> str:
    return f"{source} | {sys.executable} -m safe_run --shell {shell_path('bash')} -- {command}"


@pytest.mark.slow
def test_in_tmux_a_pipe_into_safe_run_reaches_the_command(tmux: Tmux) -> None:  # noqa: F811
    tmux.keys(line("cat", "echo hi") + "; echo rc=$?", "Enter")
    screen = tmux.wait_for("rc=0")
    rows = [row.rstrip() for row in screen.splitlines() if row.strip()]
    assert rows[-4:-1] == ["hi", rows[-3], "rc=0"] and "completed" in rows[-3], rows


@pytest.mark.slow
def test_in_tmux_the_command_reads_the_pipe_and_the_person_answers_on_the_terminal(
    tmux: Tmux, tmp_path: Path,  # noqa: F811
) -> None:
    script = tmp_path / "both.py"
    script.write_text(BOTH)
    tmux.keys(line(f"python3 {script}", "seq 50"), "Enter")
    tmux.wait_for("50 lines; keep? [y/N]")
    tmux.keys("y", "Enter")
    assert "answer y 50" in tmux.wait_for("completed")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_in_tmux_less_pages_a_pipe_as_at_a_plain_terminal(tmux: Tmux) -> None:  # noqa: F811
    """`seq 1000 | less`, then G: the same screen, line by line, with and without safe-run."""
    screens = []
    for command in ("seq 1000 | less", line("less", "seq 1000")):
        tmux.keys("clear", "Enter")
        tmux.keys(command, "Enter")
        tmux.wait_for("\n3\n")
        tmux.keys("G")
        screens.append(tmux.wait_for("(END)").splitlines())
        tmux.keys("q")
        tmux.wait_for("$ ")
    plain, through = screens
    assert through == plain

"""What a holder answers, shaped from plain facts: no shell, no socket."""

from __future__ import annotations

import signal

import pytest

from safe_run.core.result import Killed, Reason, Result, ShellInfo, Status
from safe_run.core import answers
from safe_run.core.answers import Going, NamedShell
from safe_run.core.phrases import COMMAND_LINE, MCP

BASH = ShellInfo("bash", "/bin/bash")
SHELL = NamedShell("s" * 24, "build", fresh_note="a new shell: build had exited")
RUNNING = Result(Status.RUNNING, None, None, None, "make", BASH, duration_s=2.0)
WAITING = Result(Status.INPUT_REQUIRED, None, None, Reason.INPUT_WAIT, "read x", BASH, message="read is waiting for input")


def test_a_shells_first_answer_says_why_it_is_new_and_later_ones_do_not() -> None:
    first = answers.in_shell(RUNNING, SHELL, "/src", fresh=True)
    later = answers.in_shell(RUNNING, SHELL, "/src", fresh=False)
    assert (first.shell_id, first.shell_name, first.cwd, first.fresh) == (SHELL.shell_id, "build", "/src", True)
    assert first.message == "a new shell: build had exited"
    assert (later.fresh, later.message) == (False, None)


def test_progress_carries_the_output_since_the_last_answer_and_the_next_step() -> None:
    answer = answers.progress(RUNNING, "c1", COMMAND_LINE, output=("tail\n", 10), notes="typed 3 bytes")
    assert (answer.output, answer.output_truncated, answer.output_dropped_bytes) == ("tail\n", True, 10)
    assert answer.message is not None
    assert answer.message.startswith("typed 3 bytes. still running after 2.0 s in session c1")
    assert "`safe-run poll c1 --wait 60`" in answer.message


def test_progress_without_output_keeps_the_runs_and_speaks_the_front_ends_words() -> None:
    answer = answers.progress(WAITING, "c2", MCP)
    assert (answer.output, answer.output_truncated) == (WAITING.output, False)
    assert answer.message is not None and answer.message.startswith("read is waiting for input; it is still running")
    assert "the `send` tool" in answer.message


def test_busy_names_what_runs_and_types_nothing() -> None:
    answer = answers.busy("ls", BASH, "sleep 100\nsecond line", "c3", SHELL, COMMAND_LINE)
    assert (answer.status, answer.completion_reason, answer.command, answer.session_id) == (
        Status.BUSY, Reason.BUSY, "ls", "c3")
    assert answer.message is not None
    assert answer.message.startswith("nothing was run: the shell build is running 'sleep 100' (session c3)")


def test_a_shells_own_id_is_not_a_command() -> None:
    said = answers.not_a_command(SHELL, "c4", MCP)
    assert said.startswith(f"{SHELL.shell_id} is the shell build's own id")
    assert "the one running or last run is c4" in said and said.endswith("ends the shell")


@pytest.mark.parametrize(("going", "why"), [
    (Going(unreachable=True, closing=True), f"was closed: {answers.UNREACHABLE}"),
    (Going(closing=True, signals=(signal.SIGTERM,)), "was closed"),
    (Going(signals=(signal.SIGTERM,), shell_alive=False), "was ended by SIGTERM to its holder"),
    (Going(shell_ended=True, shell_alive=False), "was ended with its command: the shell itself was reading"),
    (Going(shell_alive=False), "exited"),
    (Going(idle_limit=3600.0), "was idle for 3600 s and closed itself"),
])
def test_why_a_shell_went_takes_the_first_reason_that_holds(going: Going, why: str) -> None:
    assert answers.why_it_went(going).startswith(why)


def test_a_closed_shell_says_so_with_what_its_close_ended() -> None:
    note = answers.gone_note(SHELL, "was closed", COMMAND_LINE)
    assert note == "the shell build was closed; the next `safe-run --in build` starts a new shell"
    last = Result(Status.COMPLETED, 0, None, Reason.SHELL_INTEGRATION, "true", BASH, cwd="/src")
    stopped = (Killed(42, "sleep"),)
    closed = answers.closed(last, SHELL, note, stopped)
    assert (closed.status, closed.completion_reason, closed.command, closed.exit_code) == (
        Status.CLOSED, Reason.CLOSED, None, None)
    assert (closed.shell, closed.cwd, closed.killed, closed.message, closed.fresh) == (BASH, "/src", stopped, note, False)

"""The decision logic, driven event by event with an injected clock: no terminal, no sleeps."""

from __future__ import annotations

import pytest

from dataclasses import replace

from safe_run.core.evidence import Observation
from safe_run.core.output import HeadTail
from safe_run.core.result import Reason, Status, Strategy
from safe_run.core.screen import ScreenTail
from safe_run.core.sequences import Osc
from safe_run.core.request import Timers
from safe_run.core.tracker import (
    HELD_LOOK_S, NO_KERNEL_VIEW, UNCORROBORATED, Action, CommandTracker, Config, Decision, Downgraded,
    EndCheck, Lines, Look, Output, Phase, Reinjected, Replacement, Send, TrackerError, Waiting,
)

NONCE = "0123456789abcdef0123456789abcdef"
LINES = Lines(integrated=b"RUN\r", fallback=b"FALLBACK\r", status_query=b"STATUS?\r")
T0 = 1000.0
# An end mark the loop checked only against the terminal, which the shell held: the tests of
# decisions that do not turn on the line's record.
SHELLS = EndCheck(None, True, asked=False)


def mark(kind: str, *args: str, nonce: str = NONCE, family: int = 633) -> Osc:
    fields = [str(family), kind, *args] + ([nonce] if nonce else [])
    return Osc(";".join(fields).encode())


def seen(shell: bool, waiting: bool, command: str | None = "prog") -> Observation:
    return Observation(
        shell_in_foreground=shell,
        foreground_pgrp=1 if shell else 2,
        waiting_for_terminal=waiting,
        canonical=True,
        foreground_command=None if shell else command,
    )


AT_PROMPT = seen(shell=True, waiting=True)
BUSY = seen(shell=False, waiting=False)
READING = seen(shell=False, waiting=True, command="python3")


def tracker(integrated: bool = True, auto: bool = True, hold: bool = False, **timers: float) -> CommandTracker:
    t = CommandTracker(
        config=Config(nonce=NONCE, lines=LINES, allow_downgrade=auto, hold_on_input=hold),
        capture=HeadTail(1 << 20, 1 << 20),
        screen=ScreenTail(80, 24),
        strategy=Strategy.RICH if integrated else Strategy.NONE,
        integrated=integrated,
        timers=Timers(**timers),
    )
    t.start(T0)
    return t


def tick(t: CommandTracker, now: float, seen: Observation | None, status: int | None = None) -> list[Action]:
    """A look: what the kernel sees, and the typed line's status when it left one."""
    return t.look(now, Look(seen, status))


def running(t: CommandTracker, at: float = T0) -> None:
    """Bring a rich tracker to the point where the command runs."""
    t.feed(b"user@host:~$ ", at)
    assert t.feed(mark("B"), at) == [Send(LINES.integrated, command_line=True)]
    t.feed(b" RUN\r\n", at)
    t.feed(mark("C"), at)
    assert t.phase is Phase.RUNNING


def sent(actions: list[Action]) -> list[Send]:
    return [a for a in actions if isinstance(a, Send)]


def downgrades(actions: list[Action]) -> list[tuple[str, str, float]]:
    return [(a.downgrade.from_, a.downgrade.to, a.downgrade.at_s) for a in actions if isinstance(a, Downgraded)]


def waits(actions: list[Action]) -> list[Decision]:
    return [a.decision for a in actions if isinstance(a, Waiting)]


def only_finish(actions: list) -> Decision:
    assert len(actions) == 1 and isinstance(actions[0], Decision), actions
    return actions[0]


@pytest.mark.parametrize(("code", "said"), [
    (3, "the command exited with status 3"),
    (143, "the command was ended by SIGTERM (exit status 143 is 128 + 15)"),
    (137, "the command was ended by SIGKILL (exit status 137 is 128 + 9): often the kernel's out-of-memory killer"),
    (200, "the command exited with status 200"),
])
def test_a_failing_exit_has_a_message_and_a_signal_is_named(code: int, said: str) -> None:
    t = tracker()
    running(t)
    finish = only_finish(t.feed(mark("D", str(code)), T0 + 0.2, SHELLS))
    assert finish.message is not None and finish.message.startswith(said)


def test_a_sigterm_the_shell_ignored_during_the_command_is_said() -> None:
    t = tracker()
    running(t)
    assert t.feed(mark("T"), T0 + 0.1) == []
    finish = only_finish(t.feed(mark("D", "0"), T0 + 0.2, SHELLS))
    assert finish.exit_code == 0 and "an interactive shell ignores" in (finish.message or "")


def test_rich_run_frames_output_with_c_and_d() -> None:
    t = tracker()
    running(t)
    t.feed(b"hello\r\n", T0 + 0.1)
    finish = only_finish(t.feed(mark("D", "42"), T0 + 0.2, SHELLS))
    assert (finish.status, finish.reason, finish.exit_code, finish.strategy) == (
        Status.COMPLETED, Reason.SHELL_INTEGRATION, 42, Strategy.RICH)
    assert t.capture.text() == "hello\n"
    assert finish.message == "the command exited with status 42"


@pytest.mark.parametrize(
    "spoof",
    [mark("D", "0", nonce=""), mark("D", "0", nonce="f" * 32), mark("D", "0", nonce="", family=133),
     mark("D", "0", family=133), Osc(b"633;D;0;" + NONCE.encode() + b"x")],
)
def test_marks_without_this_runs_nonce_are_ignored(spoof: Osc) -> None:
    t = tracker()
    running(t)
    assert t.feed(spoof, T0 + 0.1) == []
    assert t.phase is Phase.RUNNING


def test_prompt_and_echo_before_c_are_not_output() -> None:
    t = tracker()
    running(t)
    assert t.capture.text() == ""


def test_prompt_without_d_downgrades_to_basic_and_asks_for_the_status() -> None:
    t = tracker()
    running(t)
    t.feed(b"out\r\n", T0 + 1)
    actions = t.feed(mark("A"), T0 + 2)
    assert sent(actions) == [Send(LINES.status_query)]
    assert downgrades(actions) == [("rich", "basic", 2.0)], "said before the question it leads to"
    assert isinstance(actions[0], Downgraded)
    t.feed(b"user@host:~$ ", T0 + 2)
    assert t.feed(mark("B"), T0 + 2) == []
    finish = only_finish(t.feed(mark("D", "3"), T0 + 2.01, SHELLS))
    assert (finish.status, finish.exit_code, finish.strategy, finish.reason) == (
        Status.COMPLETED, 3, Strategy.BASIC, Reason.PROMPT_IDLE)
    assert t.capture.text() == "out\n", "the prompt after the command is not its output"
    assert finish.message


@pytest.mark.parametrize("end", [EndCheck(None, True), EndCheck(0, False)], ids=["before the record", "program in front"])
def test_a_prompt_mark_the_command_printed_is_output_and_types_nothing(end: EndCheck) -> None:
    """`echo "$PS1"` mid-command, or a program that prints the prompt's marks: not the prompt."""
    t = tracker()
    running(t)
    for kind in "AB":
        assert t.feed(mark(kind), T0 + 1, end) == []
    t.feed(b"after\r\n", T0 + 1.5)
    finish = only_finish(t.feed(mark("D", "3"), T0 + 2, EndCheck(3, True)))
    assert (finish.exit_code, finish.strategy, finish.reason) == (3, Strategy.RICH, Reason.SHELL_INTEGRATION)
    assert t.capture.text() == "after\n"


def test_a_prompt_mark_after_the_lines_record_is_the_prompt() -> None:
    t = tracker()
    running(t)
    actions = t.feed(mark("A"), T0 + 1, EndCheck(3, True))
    assert sent(actions) == [Send(LINES.status_query)] and downgrades(actions) == [("rich", "basic", 1.0)]


def test_forced_rich_strategy_reports_broken_integration_instead_of_guessing() -> None:
    t = tracker(auto=False)
    running(t)
    finish = only_finish(t.feed(mark("A"), T0 + 1))
    assert finish.status is Status.ERROR and "--strategy rich" in (finish.message or "")


def test_integration_never_activating_is_decided_once_the_shell_waits_quietly() -> None:
    t = tracker(idle=0.5)
    t.feed(b"$ ", T0 + 0.05)
    assert tick(t, T0 + 0.3, AT_PROMPT) == [], "not quiet long enough yet"
    actions = tick(t, T0 + 0.6, AT_PROMPT)
    assert sent(actions) == [Send(LINES.fallback, command_line=True)]
    assert [(f, to) for f, to, _ in downgrades(actions)] == [("rich", "none")]


def test_shell_that_never_becomes_ready_is_an_error_at_the_activation_timeout() -> None:
    t = tracker(activation=3)
    assert tick(t, T0 + 2.9, BUSY) == []
    finish = only_finish(tick(t, T0 + 3.0, BUSY))
    assert finish.status is Status.ERROR and finish.stop


def test_plain_shell_is_typed_to_as_soon_as_it_waits() -> None:
    t = tracker(integrated=False, idle=0.5)
    t.feed(b"$ ", T0)
    assert tick(t, T0 + 0.06, AT_PROMPT) == [Send(LINES.fallback, command_line=True)], "no integration was expected: nothing lost"


def test_without_the_kernel_a_prompt_on_screen_means_ready() -> None:
    t = tracker(integrated=False)
    t.feed(b"\r\nsh-5.2$ ", T0)
    assert tick(t, T0 + 0.7, None) == [Send(LINES.fallback, command_line=True)]


def plain_running() -> CommandTracker:
    """A tracker of a shell without integration, its typed line's C read: the command runs."""
    t = tracker(integrated=False)
    t.feed(b"$ ", T0)
    tick(t, T0 + 0.1, AT_PROMPT)
    t.feed(mark("C"), T0 + 0.2)
    return t


def test_sentinel_d_ends_a_plain_run() -> None:
    t = plain_running()
    t.feed(b"data\r\n", T0 + 0.3)
    finish = only_finish(t.feed(mark("D", "0"), T0 + 0.4, SHELLS))
    assert (finish.reason, finish.strategy, finish.exit_code) == (Reason.SENTINEL, Strategy.NONE, 0)
    assert t.capture.text() == "data\n"


def test_a_plain_shells_marked_prompt_ends_a_line_it_abandoned_and_says_so() -> None:
    """dash abandons the typed line on `${VAR:?}`: no D of the line's, but its prompt's."""
    t = plain_running()
    t.feed(b"dash: 1: VAR: must be set\r\n", T0 + 0.3)
    finish = only_finish(t.feed(mark("D", "2", "prompt"), T0 + 0.4, SHELLS))
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 2)
    assert finish.message is not None and "marked prompt" in finish.message
    assert t.capture.text() == "dash: 1: VAR: must be set\n"


@pytest.mark.parametrize("quiet", [5, 15, 600])
def test_a_silent_command_that_still_runs_is_never_done(quiet: float) -> None:
    t = tracker()
    running(t)
    assert all(tick(t, T0 + s, BUSY) == [] for s in range(1, quiet + 1))
    assert t.phase is Phase.RUNNING


def test_program_waiting_on_the_terminal_is_input_required() -> None:
    t = tracker(idle=0.5)
    running(t)
    t.feed(b"Python 3\r\n>>> ", T0 + 1)
    assert tick(t, T0 + 1.2, READING) == [], "it only just printed"
    finish = only_finish(tick(t, T0 + 1.6, READING))
    assert (finish.status, finish.reason, finish.stop) == (Status.INPUT_REQUIRED, Reason.INPUT_WAIT, True)
    assert finish.prompt == ">>>" and "python3" in (finish.message or "")


def test_full_screen_program_is_reported_as_such() -> None:
    t = tracker()
    running(t)
    t.feed(b"\x1b[?1049h\x1b[H\x1b[2Jline one\r\n\x1b[24;1H(END)", T0 + 1)
    finish = only_finish(tick(t, T0 + 2, READING))
    assert (finish.status, finish.reason) == (Status.INPUT_REQUIRED, Reason.ALTERNATE_SCREEN)
    assert "(END)" in (finish.prompt or "")


def test_shell_builtin_read_is_input_required() -> None:
    t = tracker()
    running(t)
    t.feed(b"Your name: ", T0 + 1)
    finish = only_finish(tick(t, T0 + 2, AT_PROMPT))
    assert finish.status is Status.INPUT_REQUIRED and finish.prompt == "Your name:"


def test_shell_back_at_its_prompt_without_marks_ends_by_the_lines_status_and_nothing_is_typed() -> None:
    t = tracker()
    running(t)
    t.feed(b"done\r\nuser@host:~$ ", T0 + 1)
    assert tick(t, T0 + 2, AT_PROMPT, status=7) == [], "the shell's own end mark gets the idle window to arrive"
    actions = tick(t, T0 + 2.5, AT_PROMPT)
    assert sent(actions) == [] and downgrades(actions) == [("rich", "none", 2.5)]
    finish = actions[-1]
    assert isinstance(finish, Decision)
    assert (finish.status, finish.reason, finish.exit_code, finish.strategy) == (
        Status.COMPLETED, Reason.SENTINEL, 7, Strategy.NONE)
    assert t.output_text() == "done\n", "the prompt drawn after it is the shell's"


def test_the_shell_reading_before_its_line_left_a_status_is_the_commands_read() -> None:
    """The same screen and the same kernel answer, but the line is not over: a `read` that drew
    the prompt's very text (`read -e -p "$PS1"`) gets nothing typed into it."""
    t = tracker()
    running(t)
    t.feed(b"done\r\nuser@host:~$ ", T0 + 1)
    finish = only_finish(tick(t, T0 + 2, AT_PROMPT))
    assert (finish.status, finish.prompt) == (Status.INPUT_REQUIRED, "user@host:~$")


def test_unanswered_status_question_still_completes_without_an_exit_code() -> None:
    t = tracker(fetch=2)
    running(t)
    assert sent(t.feed(mark("A"), T0 + 2)) == [Send(LINES.status_query)], "a trusted prompt mark: the shell's own"
    assert tick(t, T0 + 3.9, AT_PROMPT) == []
    finish = only_finish(tick(t, T0 + 4.0, AT_PROMPT))
    assert finish.status is Status.COMPLETED and finish.exit_code is None and finish.message


def test_continuation_prompt_after_typing_is_a_syntax_error() -> None:
    t = tracker()
    t.feed(b"% ", T0)
    t.feed(mark("B"), T0)
    t.feed(b" RUN\r\ndquote> ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 1, AT_PROMPT))
    assert (finish.status, finish.reason, finish.stop) == (Status.SYNTAX_ERROR, Reason.CONTINUATION_PROMPT, True)
    assert "double quote" in (finish.message or "")


def test_line_typed_but_never_started_is_an_error_not_a_completion() -> None:
    t = tracker()
    t.feed(b"$ ", T0)
    t.feed(mark("B"), T0)
    t.feed(b" RUN\r\nbash: __sr_start: command not found\r\n$ ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 1, AT_PROMPT))
    assert finish.status is Status.ERROR


def test_timeout_stops_the_command() -> None:
    t = tracker(timeout=2)
    running(t)
    assert tick(t, T0 + 1.9, BUSY) == []
    assert t.next_deadline(T0 + 1.95) == pytest.approx(T0 + 2)
    finish = only_finish(tick(t, T0 + 2, BUSY))
    assert (finish.status, finish.reason, finish.stop) == (Status.TIMEOUT, Reason.TIMEOUT, True)


def test_without_the_kernel_long_silence_stops_rather_than_claims_completion() -> None:
    t = tracker(silence=30, no_output=10)
    running(t)
    t.feed(b"working...\r\n", T0 + 1)
    assert tick(t, T0 + 30, None) == []
    finish = only_finish(tick(t, T0 + 31, None))
    assert (finish.status, finish.reason) == (Status.TIMEOUT, Reason.EXECUTING_IDLE_FALLBACK)


def test_without_the_kernel_no_output_at_all_has_its_own_reason() -> None:
    t = tracker(silence=30, no_output=10)
    t.feed(b"$ ", T0)
    t.feed(mark("B"), T0)
    t.feed(mark("C"), T0)
    finish = only_finish(tick(t, T0 + 10, None))
    assert (finish.status, finish.reason) == (Status.TIMEOUT, Reason.NO_OUTPUT_FALLBACK)


def test_without_the_kernel_a_question_on_screen_is_input_required() -> None:
    t = tracker()
    running(t)
    t.feed(b"Overwrite? [Y/n] ", T0 + 1)
    assert only_finish(tick(t, T0 + 2, None)).status is Status.INPUT_REQUIRED


def test_shell_exit_after_the_command_started_is_its_end() -> None:
    t = tracker()
    running(t)
    finish = only_finish(t.shell_exited(3))
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.SHELL_EXITED, 3)


def worded(integrated: bool = True) -> CommandTracker:
    """A tracker of a shell that says "exit" as it goes (bash), its command running."""
    t = tracker(integrated)
    t.config = replace(t.config, exit_word=b"exit\r\n")
    running(t)
    return t


def test_the_shells_word_on_exit_is_never_passed_on() -> None:
    t = worded()
    assert t.feed(b"x\r\nexit\r\n", T0 + 0.1) == [Output(b"x\r\n")]
    assert t.feed(mark("X"), T0 + 0.1) == []
    assert only_finish(t.shell_exited(3)).exit_code == 3
    assert t.capture.text() == "x\n"


def test_output_held_as_a_possible_word_on_exit_goes_on_with_what_follows() -> None:
    t = worded()
    assert t.feed(b"exit\r\n", T0 + 0.1) == []
    assert t.feed(b"after\r\n", T0 + 0.2) == [Output(b"exit\r\nafter\r\n")]


def test_output_held_as_a_possible_word_on_exit_goes_out_before_any_other_end() -> None:
    t = worded()
    t.feed(b"exit\r\n", T0 + 0.1)
    assert t.feed(mark("D", "0"), T0 + 0.2, SHELLS)[0] == Output(b"exit\r\n")
    kept = worded()
    kept.feed(b"exit\r\n", T0 + 0.1)
    assert kept.shell_exited(3)[0] == Output(b"exit\r\n"), "without X, the command's own: shown, as it is kept"


@pytest.mark.parametrize(("status", "by_signal", "kept"), [(200, False, ""), (129, True, "exit\n")])
def test_a_signal_that_ends_the_shell_takes_no_word_back(status: int, by_signal: bool, kept: str) -> None:
    """`exit 200` says the word; a shell a signal ended said none, though its trap sent X."""
    t = worded()
    t.feed(b"x\r\nexit\r\n", T0 + 0.1)
    t.feed(mark("X"), T0 + 0.1)
    t.shell_exited(status, by_signal)
    assert t.capture.text() == "x\n" + kept


def test_shell_dying_at_start_up_explains_itself() -> None:
    t = tracker()
    t.feed(b"bashrc: line 3: oops\r\n", T0)
    finish = only_finish(t.shell_exited(1))
    assert finish.status is Status.ERROR and "oops" in (finish.message or "") and "status 1" in (finish.message or "")


def test_interruption() -> None:
    t = tracker()
    running(t)
    finish = only_finish(t.interrupted("SIGTERM"))
    assert (finish.status, finish.reason, finish.stop) == (Status.INTERRUPTED, Reason.INTERRUPTED, True)
    assert tick(t, T0 + 5, BUSY) == []


def test_polling_slows_down_when_quiet() -> None:
    t = tracker()
    running(t)
    tick(t, T0 + 0.5, BUSY)
    assert t.next_deadline(T0 + 0.5) == pytest.approx(T0 + 0.6)
    tick(t, T0 + 5, BUSY)
    assert t.next_deadline(T0 + 5) == pytest.approx(T0 + 5.25)


def test_the_next_look_is_counted_from_the_last_one() -> None:
    """A loop woken more often than the looks (a status line's spinner) must not put them off."""
    t = tracker()
    running(t)
    tick(t, T0 + 0.5, BUSY)
    for now in (T0 + 0.52, T0 + 0.55, T0 + 0.58, T0 + 0.61):
        assert t.next_deadline(now) == pytest.approx(T0 + 0.6)


# ---- sessions: input waits are held, answered, and waited for again ------------------------------


def test_a_held_input_wait_is_reported_and_the_command_goes_on() -> None:
    t = tracker(hold=True, idle=0.5)
    running(t)
    t.feed(b">>> ", T0 + 1)
    [wait] = waits(tick(t, T0 + 1.6, READING))
    assert not [a for a in tick(t, T0 + 1.7, READING) if isinstance(a, Decision)], "the command goes on"
    assert (wait.status, wait.reason, wait.stop) == (Status.INPUT_REQUIRED, Reason.INPUT_WAIT, False)
    assert wait.prompt == ">>>" and "stopped" not in (wait.message or "")


def test_a_held_wait_nothing_changes_is_looked_at_seldom_and_often_again_once_it_changes() -> None:
    """Output, the command's exit and callers wake the loop anyway: a held wait needs few looks."""
    t = tracker(hold=True, idle=0.5)
    running(t)
    t.feed(b">>> ", T0 + 1)
    assert waits(tick(t, T0 + 3.5, READING))
    assert t.next_deadline(T0 + 3.5) == pytest.approx(T0 + 3.5 + HELD_LOOK_S)
    assert waits(tick(t, T0 + 8.5, READING))
    assert t.next_deadline(T0 + 8.5) == pytest.approx(T0 + 8.5 + HELD_LOOK_S)
    assert tick(t, T0 + 13.5, BUSY) == [], "it no longer reads: at work"
    assert t.next_deadline(T0 + 13.5) == pytest.approx(T0 + 13.75)


def test_a_program_that_listens_to_the_keyboard_is_looked_at_as_often_as_ever() -> None:
    """A listener is at work (its timers, its sockets): what it waits on can change at any moment."""
    t = tracker(hold=True, idle=0.5, listen=1.0)
    running(t)
    t.feed(b">>> ", T0 + 1)
    [wait] = waits(tick(t, T0 + 3.5, replace(READING, waiting_for_terminal=False, listening=True)))
    assert wait.reads_keyboard
    assert t.next_deadline(T0 + 3.5) == pytest.approx(T0 + 3.75)


def test_an_answer_clears_the_wait_and_the_next_wait_is_decided_quickly() -> None:
    t = tracker(hold=True, idle=0.5, answer=0.05)
    running(t)
    t.feed(b">>> ", T0 + 1)
    assert waits(tick(t, T0 + 1.6, READING))
    t.answered(T0 + 2)
    t.feed(b"print(1)\r\n1\r\n>>> ", T0 + 2.01)
    assert tick(t, T0 + 2.02, READING) == [], "settling"
    assert t.next_deadline(T0 + 2.02) == pytest.approx(T0 + 2.06), "woken when the answer settle ends"
    assert tick(t, T0 + 2.04, READING) == [], "still settling"
    [wait] = waits(tick(t, T0 + 2.07, READING))
    assert wait.prompt == ">>>"


def test_output_after_a_wait_means_it_is_no_longer_waiting() -> None:
    t = tracker(hold=True)
    running(t)
    t.feed(b"? ", T0 + 1)
    assert waits(tick(t, T0 + 2, READING))
    assert t.feed(b"working\r\n", T0 + 2.5) == [Output(b"working\r\n")], "output: the wait is over"
    assert tick(t, T0 + 2.6, READING) == [], "no new wait before the quiet window passes"


ON_THE_PIPE = replace(READING, keyless=True)  # blocked on the standard input its caller gave it (--stdin)


def test_a_wait_on_the_given_standard_input_is_held_for_a_person_as_any_input_wait() -> None:
    t = tracker(hold=True, idle=0.5)
    running(t)
    [wait] = waits(tick(t, T0 + 0.6, ON_THE_PIPE))
    assert wait.status is Status.INPUT_REQUIRED and "standard input" in (wait.message or "")
    assert not wait.secret


def test_without_a_person_a_quiet_given_standard_input_is_stopped_only_after_the_silence_timeout() -> None:
    """Its writer may be slow (`curl ... | safe-run --stdin -- jq`): a pipe quiet for the idle
    window is no reason to stop the command; one quiet for the silence timeout is reported."""
    t = tracker(idle=0.5, silence=30)
    running(t)
    assert tick(t, T0 + 1, ON_THE_PIPE) == []
    assert tick(t, T0 + 29.9, ON_THE_PIPE) == []
    finish = only_finish(tick(t, T0 + 30.1, ON_THE_PIPE))
    assert (finish.status, finish.stop) == (Status.INPUT_REQUIRED, True)
    assert "sent nothing for 30 s" in (finish.message or "")


def test_without_a_session_an_answer_settle_does_not_apply() -> None:
    t = tracker(hold=False, idle=0.5, answer=0.05)
    running(t)
    t.feed(b">>> ", T0 + 1)
    assert tick(t, T0 + 1.1, READING) == []


def test_stop_requested_ends_the_run_and_asks_for_the_command_to_be_stopped() -> None:
    t = tracker(hold=True)
    running(t)
    finish = only_finish(t.stop_requested())
    assert (finish.status, finish.reason, finish.stop) == (Status.INTERRUPTED, Reason.STOPPED, True)
    assert tick(t, T0 + 5, BUSY) == []


def test_command_output_is_passed_on_as_it_arrives() -> None:
    t = tracker()
    assert t.feed(b"prompt$ ", T0) == []
    running(t)
    actions = t.feed(b"one\r\n", T0 + 0.1) + t.feed(b"two\r\n", T0 + 0.2)
    assert actions == [Output(b"one\r\n"), Output(b"two\r\n")], "only the command's output, not the prompt or the echo"


# ---- the foreground's evidence: CPU time, keyboard timeouts, stopped and hidden programs -----------


def working(t: CommandTracker, seen: Observation, start: float, end: float, step: float = 0.1) -> list:
    """Tick from `start` to `end`, the foreground's CPU time growing at each look."""
    actions = []
    at, ticks = start, 0
    while at <= end:
        ticks += 1
        actions += tick(t, at, replace(seen, activity=((2, ticks),)))
        at += step
    return actions


def test_cpu_time_keeps_a_terminal_reader_from_being_an_input_wait() -> None:
    """A thread blocked on the keyboard while another computes without printing."""
    t = tracker(idle=0.5)
    running(t)
    assert working(t, READING, T0 + 0.1, T0 + 5) == []
    idle = replace(READING, activity=((2, 999),))
    assert tick(t, T0 + 5.05, idle) == [], "its CPU time moved once more"
    assert tick(t, T0 + 5.5, idle) == [], "idle only since 5.05"
    finish = only_finish(tick(t, T0 + 5.6, idle))
    assert finish.status is Status.INPUT_REQUIRED


def test_a_keyboard_poll_with_a_timeout_must_be_outlasted() -> None:
    """vi polls the keyboard for 4 s at a time: it is waiting only once that has passed in silence."""
    t = tracker(idle=0.5)
    running(t)
    polling = replace(READING, wake_in=4.0)
    assert all(tick(t, T0 + s / 10, polling) == [] for s in range(1, 45))
    finish = only_finish(tick(t, T0 + 4.6, polling))
    assert finish.status is Status.INPUT_REQUIRED


def test_a_stopped_foreground_is_reported_and_stopped() -> None:
    t = tracker()
    running(t)
    t.feed(b"before\r\n", T0 + 0.1)
    stopped = replace(BUSY, stopped="python3")
    assert tick(t, T0 + 0.3, stopped) == [], "quiet first"
    finish = only_finish(tick(t, T0 + 0.7, stopped))
    assert (finish.status, finish.reason, finish.stop) == (Status.INTERRUPTED, Reason.PROCESS_STOPPED, True)
    assert "python3" in (finish.message or "")


def test_a_stopped_shell_says_so() -> None:
    t = tracker()
    running(t)
    finish = only_finish(tick(t, T0 + 1, replace(AT_PROMPT, waiting_for_terminal=False, stopped="bash")))
    assert finish.reason is Reason.PROCESS_STOPPED and "the shell itself" in (finish.message or "")


HIDDEN = replace(BUSY, hidden=True, foreground_command="su")


def test_a_hidden_program_with_a_question_at_the_cursor_is_an_input_wait() -> None:
    t = tracker()
    running(t)
    t.feed(b"Password: ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 0.7, HIDDEN))
    assert (finish.status, finish.prompt) == (Status.INPUT_REQUIRED, "Password:")
    assert "su" in (finish.message or "")


def test_a_hidden_program_reading_a_line_without_echo_is_asking_for_a_secret() -> None:
    """`sudo -S -p 'pw: '` seen by its own user: a prompt of any shape, read with echo off."""
    t = tracker(hold=True)
    running(t)
    t.feed(b"pw: ", T0 + 0.1)
    silent = replace(HIDDEN, echo=False, foreground_command="sudo")
    assert tick(t, T0 + 0.3, silent) == [], "quiet for the idle window first"
    [waiting] = tick(t, T0 + 0.7, silent)
    assert isinstance(waiting, Waiting)
    wait = waiting.decision
    assert (wait.status, wait.secret, wait.prompt, wait.stop) == (Status.INPUT_REQUIRED, True, "pw:", False)
    assert "sudo is asking for a secret" in (wait.message or "")


def test_a_hidden_program_that_works_with_echo_off_is_not_asked_about() -> None:
    t = tracker(hold=True)
    running(t)
    assert working(t, replace(HIDDEN, echo=False), T0 + 0.1, T0 + 5) == []


def test_a_hidden_program_without_a_question_is_left_to_the_timers() -> None:
    t = tracker(silence=30)
    running(t)
    t.feed(b"working\r\n", T0 + 0.1)
    assert all(tick(t, T0 + s, HIDDEN) == [] for s in range(1, 30))
    finish = only_finish(tick(t, T0 + 30.2, HIDDEN))
    assert (finish.status, finish.reason) == (Status.TIMEOUT, Reason.EXECUTING_IDLE_FALLBACK)


def test_a_hidden_program_that_works_is_not_asked_about() -> None:
    t = tracker()
    running(t)
    t.feed(b"Password: ", T0 + 0.1)
    assert working(t, HIDDEN, T0 + 0.2, T0 + 3) == []


def test_a_hidden_program_that_works_silently_is_never_stopped_for_silence() -> None:
    """dpkg under sudo, seen by a user: no output for minutes, but CPU time."""
    t = tracker(silence=30, no_output=10)
    running(t)
    assert working(t, HIDDEN, T0 + 0.1, T0 + 120, step=0.25) == []


def test_a_reader_in_another_session_is_named() -> None:
    t = tracker()
    running(t)
    t.feed(b"Passphrase: ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 0.7, replace(READING, foreground_command="gpg", reader="pinentry")))
    assert finish.status is Status.INPUT_REQUIRED and "pinentry" in (finish.message or "")


# ---- the prompt told from a `read` by the terminal mode -----------------------------------------------

LINE_EDITOR = replace(AT_PROMPT, canonical=False, echo=False)


def test_the_line_editor_is_no_evidence_of_the_prompt() -> None:
    """`read -n1 -s`, `read -e` and the prompt all read in the line editor's mode: only the line's
    status says the command is over, whatever the screen shows (`PS1='$ '`)."""
    t = tracker()
    running(t)
    t.feed(b"broke\r\n$ ", T0 + 0.1)
    waiting = only_finish(tick(t, T0 + 0.7, LINE_EDITOR))
    assert waiting.status is Status.INPUT_REQUIRED

    t = tracker()
    running(t)
    t.feed(b"broke\r\n$ ", T0 + 0.1)
    assert tick(t, T0 + 0.7, LINE_EDITOR, status=0) == []
    actions = tick(t, T0 + 1.2, LINE_EDITOR)
    finish = actions[-1]
    assert sent(actions) == [] and isinstance(finish, Decision)
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 0)
    assert t.output_text() == "broke\n"


def test_a_canonical_read_is_an_input_wait_even_when_it_shows_the_prompt() -> None:
    t = tracker()
    running(t)
    t.feed(b"user@host:~$ ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 0.7, AT_PROMPT))
    assert finish.status is Status.INPUT_REQUIRED


def test_without_a_mode_to_tell_nothing_is_typed_into_a_prompt_like_read() -> None:
    """dash: its prompt reads like a `read`; a `read -p 'name$ '` once got the status question."""
    t = tracker(integrated=False)
    t.feed(b"$ ", T0)
    assert tick(t, T0 + 0.06, AT_PROMPT) == [Send(LINES.fallback, command_line=True)]
    t.feed(mark("C"), T0 + 0.07)
    t.feed(b"name$ ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 0.7, AT_PROMPT))
    assert (finish.status, finish.prompt) == (Status.INPUT_REQUIRED, "name$")


def test_the_status_file_ends_a_run_whose_end_mark_went_astray() -> None:
    t = tracker(integrated=False)
    t.feed(b"$ ", T0)
    tick(t, T0 + 0.06, AT_PROMPT)
    t.feed(mark("C"), T0 + 0.07)
    assert tick(t, T0 + 0.3, AT_PROMPT, status=3) == [], "the terminal's D gets the idle window to arrive"
    assert tick(t, T0 + 0.6, AT_PROMPT) == [], "counted from when the status was seen"
    finish = only_finish(tick(t, T0 + 0.8, AT_PROMPT))
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 3)


def test_an_end_mark_that_comes_after_the_lines_status_still_decides() -> None:
    """fish sends D after a job's report and its prompt: a command quiet to its end (`sleep 0.1 &;
    sleep 0.5; false`) has its status written before, and on a busy machine long before, its D."""
    t = tracker()
    running(t)
    assert tick(t, T0 + 0.7, AT_PROMPT, status=1) == []
    t.feed(b"Job 1, 'sleep 0.1 &' has ended\r\n", T0 + 0.9)
    finish = only_finish(t.feed(mark("D", "1"), T0 + 1.1, SHELLS))
    assert (finish.reason, finish.exit_code, finish.strategy) == (Reason.SHELL_INTEGRATION, 1, Strategy.RICH)


def test_the_status_file_is_ignored_once_d_arrived() -> None:
    t = tracker(integrated=False)
    t.feed(b"$ ", T0)
    tick(t, T0 + 0.06, AT_PROMPT)
    t.feed(mark("C"), T0 + 0.07)
    finish = only_finish(t.feed(mark("D", "0"), T0 + 0.1, SHELLS))
    assert finish.exit_code == 0 and tick(t, T0 + 1, AT_PROMPT, status=0) == []


def test_a_nonce_whose_case_the_terminal_changed_is_still_this_runs() -> None:
    """`stty olcuc` turns the shell's own marks to upper case on the way out."""
    t = tracker()
    running(t)
    finish = only_finish(t.feed(mark("D", "0", nonce=NONCE.upper()), T0 + 0.1, SHELLS))
    assert (finish.reason, finish.exit_code) == (Reason.SHELL_INTEGRATION, 0)


def test_without_the_kernel_a_plain_shells_prompt_like_line_is_the_commands_own() -> None:
    """Without integration the typed line ends with its own end mark: a prompt before it is a `read`."""
    t = tracker(integrated=False)
    t.feed(b"$ ", T0)
    assert tick(t, T0 + 0.7, None) == [Send(LINES.fallback, command_line=True)]
    t.feed(mark("C"), T0 + 0.71)
    t.feed(b"go> ", T0 + 0.8)
    finish = only_finish(tick(t, T0 + 1.5, None))
    assert (finish.status, finish.prompt) == (Status.INPUT_REQUIRED, "go>")


def test_a_read_after_stty_icanon_is_still_a_read() -> None:
    """Only the line editor turns echo off: `stty -icanon; read x` keeps it on."""
    t = tracker()
    running(t)
    t.feed(b"$ ", T0 + 0.1)
    finish = only_finish(tick(t, T0 + 0.7, replace(AT_PROMPT, canonical=False)))
    assert finish.status is Status.INPUT_REQUIRED


# ---- several commands through one machine (persistent shells) ------------------------------------

HEALING = Lines(integrated=b"RUN\r", fallback=b"FALLBACK\r", status_query=b"STATUS?\r", heal=b"HEAL;RUN\r")


def live_tracker() -> CommandTracker:
    t = CommandTracker(
        config=Config(nonce=NONCE, lines=HEALING, hold_on_input=True),
        capture=HeadTail(1 << 20, 1 << 20),
        screen=ScreenTail(80, 24),
        strategy=Strategy.RICH,
        integrated=True,
        timers=Timers(),
    )
    t.start(T0)
    return t


def finish_rich(t: CommandTracker, at: float, code: str = "0", prompt_back: bool = True) -> Decision:
    """The integrated command ends by its D, and the next prompt (A, B) is drawn."""
    finish = only_finish(t.feed(mark("D", code), at, SHELLS))
    if prompt_back:
        assert t.feed(mark("A"), at) == [] and t.feed(mark("B"), at) == []
    return finish


def next_cycle(t: CommandTracker, at: float, config: Config | None = None, by: str | None = None) -> list[Action]:
    return t.start_next_cycle(at, Timers(), HeadTail(1 << 20, 1 << 20), config, by)


def test_the_next_command_is_typed_at_once_when_the_prompt_is_back() -> None:
    t = live_tracker()
    running(t)
    t.feed(b"one\r\n", T0 + 0.1)
    assert finish_rich(t, T0 + 0.2, "0").exit_code == 0
    assert next_cycle(t, T0 + 5) == [Send(HEALING.integrated, command_line=True)]
    t.feed(mark("C"), T0 + 5.01)
    assert t.feed(b"two\r\n", T0 + 5.02) == [Output(b"two\r\n")]
    finish = finish_rich(t, T0 + 5.03, "4")
    assert (finish.reason, finish.exit_code) == (Reason.SHELL_INTEGRATION, 4)
    assert t.output_text() == "two\n", "each command reports only its own output"


def test_the_next_command_waits_for_a_prompt_that_is_not_back_yet() -> None:
    t = live_tracker()
    running(t)
    finish_rich(t, T0 + 0.2, prompt_back=False)
    assert next_cycle(t, T0 + 0.21) == [], "the shell still draws its prompt"
    assert t.feed(mark("B"), T0 + 0.22) == [Send(HEALING.integrated, command_line=True)]


def test_a_command_that_broke_the_integration_is_followed_by_the_heal_line() -> None:
    t = live_tracker()
    running(t)
    actions = t.feed(mark("A"), T0 + 1)  # PROMPT_COMMAND= : the prompt came without D
    assert downgrades(actions) and sent(actions) == [Send(LINES.status_query)]
    t.feed(mark("B"), T0 + 1)
    only_finish(t.feed(mark("D", "0"), T0 + 1.01, SHELLS))
    assert next_cycle(t, T0 + 2) == [Send(HEALING.heal, command_line=True)]
    [healed] = t.feed(mark("R"), T0 + 2.01)
    assert isinstance(healed, Reinjected) and "without the command-finished mark" in healed.reason
    t.feed(mark("C"), T0 + 2.02)
    finish = finish_rich(t, T0 + 2.03, "7")
    assert (finish.reason, finish.exit_code, finish.strategy) == (Reason.SHELL_INTEGRATION, 7, Strategy.RICH)
    assert next_cycle(t, T0 + 3) == [Send(HEALING.integrated, command_line=True)], "healed: the plain line again"


def test_no_prompt_mark_after_a_command_heals_once_the_shell_waits() -> None:
    t = live_tracker()
    running(t)
    finish_rich(t, T0 + 0.1, prompt_back=False)  # a command that reset PS1 and the hooks' marks
    assert next_cycle(t, T0 + 1) == []
    t.feed(b"$ ", T0 + 1.01)
    assert tick(t, T0 + 1.2, LINE_EDITOR) == [], "not quiet long enough"
    assert tick(t, T0 + 1.6, LINE_EDITOR) == [Send(HEALING.heal, command_line=True)]


def test_a_shell_replaced_by_one_without_integration_is_followed_by_the_fallback_and_says_why() -> None:
    t = live_tracker()
    running(t)
    finish_rich(t, T0 + 0.1)
    plain = Config(nonce=NONCE, lines=LINES, hold_on_input=True)
    actions = next_cycle(t, T0 + 1, plain, "dash")
    assert [to for _, to, _ in downgrades(actions)] == ["none"] and not sent(actions)
    assert tick(t, T0 + 1.1, AT_PROMPT) == [Send(LINES.fallback, command_line=True)]
    t.feed(mark("C"), T0 + 1.15)
    finish = only_finish(t.feed(mark("D", "2"), T0 + 1.2, SHELLS))
    assert (finish.reason, finish.exit_code, finish.strategy) == (Reason.SENTINEL, 2, Strategy.NONE)


def test_a_shell_replaced_by_another_integrated_shell_gets_its_integration_loaded() -> None:
    t = live_tracker()
    running(t)
    finish_rich(t, T0 + 0.1)
    zsh = Config(nonce=NONCE, lines=replace(HEALING, heal=b"ZSH-HEAL;RUN\r"), hold_on_input=True)
    assert next_cycle(t, T0 + 1, zsh, "zsh") == [Send(b"ZSH-HEAL;RUN\r", command_line=True)]
    [healed] = t.feed(mark("R"), T0 + 1.01)
    assert isinstance(healed, Reinjected) and "zsh" in healed.reason


def test_the_next_command_cannot_start_before_the_last_is_decided() -> None:
    t = live_tracker()
    running(t)
    with pytest.raises(TrackerError):
        next_cycle(t, T0 + 1)


def test_a_shell_replaced_mid_command_ends_it_and_nothing_is_asked_of_the_new_one() -> None:
    """`exec zsh`: the new shell may wait at its prompt or in a `read` of its start-up files."""
    t = tracker()
    running(t)
    t.feed(b"% ", T0 + 0.1)
    dash = Config(nonce=NONCE, lines=LINES)
    actions = t.look(T0 + 0.7, Look(AT_PROMPT, replaced=Replacement(dash, "dash")))
    assert sent(actions) == [] and downgrades(actions) == [("rich", "none", 0.7)]
    finish = actions[-1]
    assert isinstance(finish, Decision)
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.FOREGROUND_RETURNED, None)
    assert t.output_text() == ""


# ---- the table ---------------------------------------------------------------------------------------


def test_a_late_end_mark_before_the_start_mark_is_the_command_befores_and_the_line_still_ends() -> None:
    """A trusted D;0 while the line is typed but before its C is a late mark of the command
    before: ignored, and the line's own C and D decide; a line whose C never comes ends by its
    status, never as "the shell did not run the command line"."""
    t = tracker()
    running_before_c(t)
    assert t.feed(mark("D", "0"), T0 + 0.1, SHELLS) == []
    assert t.phase is Phase.TYPED
    t.feed(mark("C"), T0 + 0.2)
    t.feed(b"out\r\n", T0 + 0.3)
    decision = only_finish(t.feed(mark("D", "5"), T0 + 0.4, SHELLS))
    assert (decision.reason, decision.exit_code) == (Reason.SHELL_INTEGRATION, 5)

    t = tracker()
    running_before_c(t)
    t.feed(mark("D", "0"), T0 + 0.1, SHELLS)
    assert tick(t, T0 + 1, AT_PROMPT, status=4) == []
    actions = tick(t, T0 + 1.5, AT_PROMPT)
    assert isinstance(actions[-1], Decision)
    assert (actions[-1].status, actions[-1].reason, actions[-1].exit_code) == (Status.COMPLETED, Reason.SENTINEL, 4)


def running_before_c(t: CommandTracker) -> None:
    t.feed(b"user@host:~$ ", T0)
    assert t.feed(mark("B"), T0) == [Send(LINES.integrated, command_line=True)]


def test_an_event_that_cannot_happen_in_a_phase_is_a_bug_not_a_silent_drop() -> None:
    t = tracker()
    running(t)
    only_finish(t.feed(mark("D", "0"), T0 + 0.1, SHELLS))
    with pytest.raises(TrackerError):
        t.shell_exited(0)  # the loop reports an exit only while the command is followed
    with pytest.raises(TrackerError):
        t.stop_requested()


def test_every_pair_of_phase_and_mark_is_handled_or_ignored_on_purpose() -> None:
    from safe_run.core.tracker import HANDLERS, IGNORED

    for phase in Phase:
        for kind in ("A", "B", "C", "D", "R", "X"):
            pair = (phase, f"mark {kind}")
            assert (pair in HANDLERS) != (pair in IGNORED), pair


# ---- end marks the shell did not send ----------------------------------------------------------


def test_an_end_mark_counts_once_the_shell_recorded_the_lines_status_and_holds_the_terminal() -> None:
    t = tracker()
    running(t)
    finish = only_finish(t.feed(mark("D", "1"), T0 + 0.1, EndCheck(1, True)))
    assert (finish.status, finish.reason, finish.exit_code, finish.strategy) == (
        Status.COMPLETED, Reason.SHELL_INTEGRATION, 1, Strategy.RICH)


@pytest.mark.parametrize("check, why", [
    (EndCheck(None, False), "while a program, not the shell, held the terminal"),
    (EndCheck(None, True), "before the shell recorded the command line's status"),
    (EndCheck(3, True), "but the shell recorded status 3"),
])
def test_a_forged_end_mark_is_ignored_and_said_and_the_real_end_decides(check: EndCheck, why: str) -> None:
    """A program of the line that found the nonce prints D;42: it is ignored, said as a step down
    to `none`, and the line's own D, checked as it was, ends the command with its real status."""
    t = tracker()
    running(t)
    actions = t.feed(mark("D", "42"), T0 + 0.1, check)
    assert not any(isinstance(action, Decision) for action in actions)
    [step] = [action.downgrade for action in actions if isinstance(action, Downgraded)]
    assert (step.from_, step.to) == ("rich", "none") and why in step.reason and "status 42" in step.reason
    assert t.feed(mark("D", "42"), T0 + 0.15, EndCheck(None, False)) == []  # said once
    finish = only_finish(t.feed(mark("D", "1"), T0 + 0.2, EndCheck(1, True)))
    assert (finish.status, finish.reason, finish.exit_code) == (Status.COMPLETED, Reason.SENTINEL, 1)
    assert "the shell with the terminal back in its hands" in (finish.message or "")


def test_a_forged_end_mark_under_a_strategy_without_fallback_is_an_error() -> None:
    t = tracker(auto=False)
    running(t)
    finish = only_finish(t.feed(mark("D", "0"), T0 + 0.1, EndCheck(None, False)))
    assert finish.status is Status.ERROR and "allows no fallback" in (finish.message or "")


def test_an_end_mark_whose_terminal_could_not_say_counts_and_says_it_was_not_corroborated() -> None:
    t = tracker()
    running(t)
    finish = only_finish(t.feed(mark("D", "0"), T0 + 0.1, EndCheck(0, None)))
    assert finish.exit_code == 0 and finish.message == UNCORROBORATED


def test_a_plain_shells_prompt_end_mark_needs_only_the_shell_in_front() -> None:
    """dash abandons its line on an error and draws its marked prompt: no line record, the shell in front."""
    t = plain_running()
    finish = only_finish(t.feed(mark("D", "2", "prompt"), T0 + 0.1, EndCheck(None, True)))
    assert (finish.reason, finish.exit_code) == (Reason.SENTINEL, 2)


def test_each_command_followed_without_the_kernels_view_says_so_and_what_it_costs() -> None:
    """No /proc: input waits are judged from the screen and the timers alone, and the answer says
    so, for the first command and for every later one of the same shell."""
    t = tracker()
    t.config = replace(t.config, kernel_view=False)
    t.start(T0)
    actions = t.feed(b"user@host:~$ ", T0) + t.feed(mark("B"), T0)
    blind = [a.downgrade for a in actions if isinstance(a, Downgraded)]
    assert [(d.from_, d.to, d.reason) for d in blind] == [("rich", "rich", NO_KERNEL_VIEW)]
    assert "input waits are judged from the screen and the timers alone" in NO_KERNEL_VIEW
    t.feed(b" RUN\r\n", T0)
    t.feed(mark("C"), T0)
    assert [a for a in t.feed(mark("D", "0"), T0 + 0.1, SHELLS) if isinstance(a, Decision)]
    t.start_next_cycle(T0 + 1, Timers(), HeadTail(1 << 20, 1 << 20))
    later = t.feed(mark("A"), T0 + 1) + t.feed(mark("B"), T0 + 1)
    assert [a.downgrade.reason for a in later if isinstance(a, Downgraded)] == [NO_KERNEL_VIEW]


def test_a_command_followed_with_the_kernels_view_says_nothing_of_it() -> None:
    t = tracker()
    running(t)
    assert not downgrades(t.feed(mark("D", "0"), T0 + 0.1, SHELLS))


def test_another_programs_sequence_is_output_and_a_mark_not_of_this_run_is_dropped() -> None:
    """A hyperlink, the clipboard, a colour are the command's output, for a person's own terminal
    to get as they are (cleaning takes them out of the text); a mark with another nonce, or of
    another shell's integration, is never passed on."""
    t = tracker()
    running(t)
    link = Osc(b"8;;https://example.com")
    assert t.feed(link, T0 + 0.1) == [Output(b"\x1b]8;;https://example.com\x1b\\")]
    assert t.feed(mark("D", "0", nonce="f" * 32), T0 + 0.2) == []
    assert t.feed(mark("A", family=133), T0 + 0.3) == []
    assert t.phase is Phase.RUNNING

"""Programs that ask their terminal a question or wait for keys in an event loop, in real PTYs.

The terminal answers cursor position, status and device attribute requests in raw mode, and no
more; in a session a program quiet at its prompt is answered without outlasting its event loop's
timers: `input_required` when the terminal is all it waits on, `running` with `reads_keyboard`
when it also waits on something else. Nothing is stopped for it. Answer times are printed by
bench/bench_event_loops.py, not asserted here.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

PYTHON = sys.executable
ANSWER_S = "20"  # the session's bound: every answer here must come well before it, by its own signal

# Asks each question in raw mode and prints what came back within 2 s.
ASK = r'''
import os, select, termios, tty
saved = termios.tcgetattr(0)
tty.setraw(0)
answers = []
try:
    for question in (b"\x1b[6n", b"\x1b[?6n", b"\x1b[5n", b"\x1b[c", b"\x1b[0c", b"\x1b[>c", b"\x1b[>0c", b"\x1b[15n"):
        os.write(1, question)
        got = b""
        while select.select([0], [], [], 0.5 if question == b"\x1b[15n" else 2.0)[0]:
            got += os.read(0, 64)
            if got[-1:] in (b"R", b"n", b"c"):
                break
        answers.append(got)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
print()
for got in answers:
    print(repr(got))
'''

# An event loop on the keyboard and a timer: a prompt, then it goes on by itself and ends.
TIMER_AND_KEYS = r'''
import selectors, sys, termios, time, tty
saved = termios.tcgetattr(0)
tty.setcbreak(0)
sys.stdout.write("command? ")
sys.stdout.flush()
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
end = time.monotonic() + 3.0
try:
    while time.monotonic() < end:
        for _ in sel.select(end - time.monotonic()):
            sys.stdin.read(1)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
print("\nno command: done by itself")
'''

# Polls the keyboard between silent steps of a timer, and finishes by itself.
POLLING_STEPS = r'''
import select, termios, tty
saved = termios.tcgetattr(0)
tty.setcbreak(0)
try:
    for _ in range(25):
        select.select([0], [], [], 0.1)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
print("finished")
'''

# A prompt_toolkit prompt: asks where the cursor is, then waits in asyncio's loop.
TOOLKIT = r'''
from prompt_toolkit import prompt
print("hello " + prompt("name? "))
'''


def program(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return f"{PYTHON} {path}"


def run(safe_run: SafeRun, command: str, *options: str) -> dict:
    safe_run.shell = shell_path("bash")
    return safe_run("--format", "json", *options, "--", command).json


def send(safe_run: SafeRun, answer: dict, text: str) -> dict:
    """Type `text` and Enter into the session, and its poll of up to 10 s."""
    safe_run.shell = None
    return safe_run("send", answer["session_id"], text, "--wait", "10", "--format", "json").json


def stop(safe_run: SafeRun, answer: dict) -> None:
    if answer.get("session_id"):
        safe_run.shell = None
        safe_run("stop", answer["session_id"])


def test_the_terminal_answers_what_a_terminal_answers_in_raw_mode(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run(safe_run, "printf 'abc\\nde'; " + program(tmp_path, "ask", ASK))
    assert result["status"] == "completed", result
    assert result["output"].splitlines()[-8:] == [
        r"b'\x1b[2;3R'", r"b'\x1b[?2;3R'", r"b'\x1b[0n'", r"b'\x1b[?1;2c'", r"b'\x1b[?1;2c'",
        r"b'\x1b[>0;0;0c'", r"b'\x1b[>0;0;0c'", "b''",
    ], "the cursor at row 2, column 3; nothing is invented for a question not on the list"


def test_a_question_in_line_mode_gets_no_answer(safe_run: SafeRun) -> None:
    """Nobody reads it there: the answer would wait for the next reader, the shell among them."""
    result = run(safe_run, "printf '\\033[6n'; read -t 1 got; echo \"[$got] $?\"")
    assert result["status"] == "completed" and result["output"].endswith("[] 142\n"), result


@pytest.mark.slow
def test_node_at_its_prompt_is_answered_before_its_timer(safe_run: SafeRun) -> None:
    """node's loop waits on the terminal and its own event descriptors with an 8 s timer."""
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    answer = run(safe_run, "node", "--yield-after", ANSWER_S)
    try:
        assert (answer["status"], answer["prompt"]) == ("input_required", ">"), answer
        assert answer["duration_s"] < 8, "answered before node's timer came round"
    finally:
        stop(safe_run, answer)


@pytest.mark.slow
def test_the_asyncio_repl_listens_and_takes_what_is_sent(safe_run: SafeRun) -> None:
    """Its loop waits on a socket of its own, a thread reads the terminal: running, reading keys."""
    answer = run(safe_run, f"{PYTHON} -m asyncio", "--yield-after", ANSWER_S)
    try:
        assert (answer["status"], answer["reads_keyboard"], answer["prompt"]) == ("running", True, ">>>"), answer
        assert answer["duration_s"] < 10 and "safe-run send" in answer["message"]
        sent = send(safe_run, answer, "print(6 * 7)")
        assert "42" in sent["output"] and sent["status"] == "running", sent
    finally:
        stop(safe_run, answer)


@pytest.mark.slow
def test_a_prompt_toolkit_prompt_is_answered_and_answered_back(safe_run: SafeRun, tmp_path: Path) -> None:
    pytest.importorskip("prompt_toolkit")
    answer = run(safe_run, program(tmp_path, "toolkit", TOOLKIT), "--yield-after", ANSWER_S)
    try:
        assert answer["status"] in ("running", "input_required") and answer["prompt"] == "name?", answer
        assert answer["duration_s"] < 10
        sent = send(safe_run, answer, "bob")
        assert sent["status"] == "completed" and "hello bob" in sent["output"], sent
        assert "CPR" not in sent["output"], "the cursor position request was answered"
    finally:
        stop(safe_run, answer)


@pytest.mark.slow
def test_top_is_answered_with_its_screen(safe_run: SafeRun) -> None:
    if shutil.which("top") is None:
        pytest.skip("top is not installed")
    answer = run(safe_run, "top", "--yield-after", ANSWER_S)
    try:
        assert answer["status"] == "input_required" and answer["duration_s"] < 10, answer
        assert "load average" in answer["output"]
    finally:
        stop(safe_run, answer)


@pytest.mark.slow
def test_a_listener_that_ends_by_itself_is_never_stopped(safe_run: SafeRun, tmp_path: Path) -> None:
    """Without a session (nothing holds it for an answer) it runs to its end; in one, its prompt is
    answered at once (the terminal is all it waits on, for 3 s), and then it ends by itself."""
    command = program(tmp_path, "timer", TIMER_AND_KEYS)
    alone = run(safe_run, command)
    assert alone["status"] == "completed" and "done by itself" in alone["output"], alone
    held = run(safe_run, command, "--yield-after", ANSWER_S)
    assert (held["status"], held["prompt"]) == ("input_required", "command?"), held
    safe_run.shell = None
    deadline = time.monotonic() + 20
    ended = held
    while ended["status"] != "completed" and time.monotonic() < deadline:
        time.sleep(0.2)  # an input wait is answered at once: ask again until it ended by itself
        ended = safe_run("poll", held["session_id"], "--wait", "1", "--format", "json").json
    assert ended["status"] == "completed" and "done by itself" in ended["output"], ended


@pytest.mark.slow
def test_a_keyboard_poll_between_silent_steps_completes(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run(safe_run, program(tmp_path, "steps", POLLING_STEPS), "--yield-after", ANSWER_S)
    assert (result["status"], result["output"]) == ("completed", "finished\n"), result

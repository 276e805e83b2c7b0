"""Sessions: --yield-after, poll, send, stop and sessions, through the real CLI and real shells.

Every test runs in its own HOME, so its sessions live in a directory of their own; a finalizer
stops whatever a failing test left running.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Outcome, SafeRun, alive, program_on_path, shell_path
from safe_run.session.store import SWEEP_LOCK

SESSION_ID_LENGTH = 24


@pytest.fixture
def sessions(safe_run: SafeRun) -> Iterator[SafeRun]:
    """safe-run with sessions, and nothing of them left afterwards."""
    yield safe_run
    listing = safe_run("sessions", "--format", "json")
    for row in listing.json["sessions"] if listing.returncode == 0 else []:
        if row["status"] in ("running", "input_required"):
            safe_run("stop", row["session_id"])


def start(safe_run: SafeRun, command: str, yield_after: float = 0.5, shell: str = "bash", *extra: str) -> Outcome:
    return safe_run("--shell", shell_path(shell), "--format", "json", "--yield-after", str(yield_after), *extra,
                    "--", command)


def session_dir(safe_run: SafeRun) -> Path:
    return safe_run.store


def kept(safe_run: SafeRun) -> list[Path]:
    """What the store holds, but for its record of when it was last swept."""
    return [entry for entry in session_dir(safe_run).iterdir() if entry.name != SWEEP_LOCK]


@pytest.mark.slow
def test_a_command_that_outlives_the_yield_is_polled_to_its_end(sessions: SafeRun) -> None:
    started = start(sessions, "echo first; sleep 1.5; echo second; exit 3", yield_after=0.3)
    assert started.returncode == 75, started.stderr
    running = started.json
    assert running["status"] == "running" and running["exit_code"] is None
    assert running["completion_reason"] is None
    session_id = running["session_id"]
    assert len(session_id) == SESSION_ID_LENGTH
    assert "first" in running["output"]
    assert f"safe-run poll {session_id} --wait" in running["message"]
    assert "do not run the command again" in running["message"]

    final = sessions("poll", session_id, "--wait", "30", "--format", "json")
    assert final.returncode == 3
    result = final.json
    assert result["status"] == "completed" and result["exit_code"] == 3
    assert result["session_id"] is None
    assert "first" in result["output"] and "second" in result["output"], "the final result has the whole output"
    assert sessions("poll", session_id, "--format", "json").json == result, "a finished session answers again"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
@pytest.mark.slow
def test_every_integrated_shell_yields_and_is_polled(sessions: SafeRun, shell: str) -> None:
    started = start(sessions, "echo begun; sleep 1; echo ended", 0.3, shell)
    assert started.json["status"] == "running" and started.json["strategy"] == "rich"
    final = sessions("poll", started.json["session_id"], "--wait", "30", "--format", "json").json
    assert (final["status"], final["exit_code"], final["completion_reason"]) == ("completed", 0, "shell_integration")
    assert final["output"] == "begun\nended\n"


def test_a_command_that_ends_within_the_yield_answers_at_once_and_leaves_nothing(sessions: SafeRun) -> None:
    began = time.monotonic()
    outcome = start(sessions, "echo quick", yield_after=30)
    assert time.monotonic() - began < 15, "the yield period is not waited out"
    result = outcome.json
    assert outcome.returncode == 0 and result["status"] == "completed" and result["session_id"] is None
    assert result["output"] == "quick\n"
    assert kept(sessions) == []


@pytest.mark.slow
def test_poll_returns_only_new_output(sessions: SafeRun) -> None:
    started = start(sessions, "echo one; sleep 1; echo two; sleep 5; echo three; sleep 30", yield_after=0.4)
    session_id = started.json["session_id"]
    assert started.json["output"] == "one\n"
    deadline = time.monotonic() + 20
    while not (second := sessions("poll", session_id, "--format", "json").json)["output"]:  # until "two" is out
        assert time.monotonic() < deadline, "no more output came"
        time.sleep(0.1)
    assert second["status"] == "running" and second["output"] == "two\n"


@pytest.mark.slow
def test_read_is_answered_with_send(sessions: SafeRun) -> None:
    started = start(sessions, "read -p 'name? ' name; echo \"hello $name\"", yield_after=20)
    waiting = started.json
    assert started.returncode == 75
    assert waiting["status"] == "input_required" and waiting["session_id"]
    assert waiting["duration_s"] < 10, "an input wait answers before the yield period is over"
    assert "name?" in waiting["prompt"]
    assert f"safe-run send {waiting['session_id']}" in waiting["message"]

    answered = sessions("send", waiting["session_id"], "bob", "--wait", "20", "--format", "json")
    result = answered.json
    assert answered.returncode == 0, result
    assert result["status"] == "completed" and "hello bob" in result["output"]


@pytest.mark.parametrize(("shell", "extra"), [("dash", ()), ("bash", ("--strategy", "none"))])
def test_ctrl_c_without_integration_ends_the_command_and_types_nothing_more(
    sessions: SafeRun, tmp_path: Path, shell: str, extra: tuple[str, ...],
) -> None:
    """Ctrl-C makes the shell drop the typed line and draw its prompt: the command has ended,
    with 130, and what is sent next is not typed into that prompt."""
    started = start(sessions, "sleep 20; echo after", 0.5, shell, *extra).json
    assert started["status"] == "running", started
    ended = sessions("send", started["session_id"], "--key", "ctrl-c", "--wait", "20", "--format", "json").json
    assert (ended["status"], ended["exit_code"]) == ("completed", 130), ended
    made = tmp_path / "made"
    sessions("send", started["session_id"], f"touch {made}", "--format", "json")
    assert not made.exists(), "nothing is typed once the command has ended"


@pytest.mark.slow
def test_a_line_sent_with_its_own_newline_is_typed_once(sessions: SafeRun) -> None:
    """`send ID 'y\\n'`, as agents write it: its newline is the Enter, not a second line."""
    started = start(sessions, "read -p 'sure? ' a; read -t 1 b; echo \"[$a] [$?]\"", yield_after=20).json
    assert started["status"] == "input_required"
    answered = sessions("send", started["session_id"], "y\n", "--wait", "20", "--format", "json").json
    assert answered["status"] == "completed" and "[y] [142]" in answered["output"], "no second line was typed"


@pytest.mark.slow
def test_a_python_repl_is_driven_with_send_and_ended_with_ctrl_d(sessions: SafeRun) -> None:
    shell_path("python3")
    started = start(sessions, "python3 -q", yield_after=20)
    assert started.json["status"] == "input_required", started.json
    session_id = started.json["session_id"]

    answer = sessions("send", session_id, "print(6 * 7)", "--wait", "20", "--format", "json").json
    assert answer["status"] == "input_required" and answer["session_id"] == session_id
    assert "42" in answer["output"]

    ended = sessions("send", session_id, "--key", "ctrl-d", "--wait", "20", "--format", "json")
    assert ended.returncode == 0 and ended.json["status"] == "completed"


@pytest.mark.slow
def test_stop_ends_the_command_and_its_background_child(sessions: SafeRun, tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started = start(sessions, f"sleep 300 & echo $! > {pidfile}; sleep 300", yield_after=0.5)
    session_id = started.json["session_id"]
    child = int(pidfile.read_text())
    assert alive(child)

    stopped = sessions("stop", session_id, "--format", "json")
    result = stopped.json
    assert result["status"] == "interrupted" and result["completion_reason"] == "stopped"
    assert result["session_id"] is None and stopped.returncode == 130
    assert child in [k["pid"] for k in result["killed"]]
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child)


@pytest.mark.slow
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_stop_ends_a_program_that_replaced_the_shell(sessions: SafeRun, shell: str) -> None:
    """Its interrupt ends the terminal's session, which then has no foreground group at all: the
    holder must not take that for a group of its own to signal."""
    started = start(sessions, "exec sleep 300", 0.5, shell)
    assert started.json["status"] == "running", started.json
    stopped = sessions("stop", started.json["session_id"], "--format", "json")
    assert (stopped.json["status"], stopped.json["completion_reason"]) == ("interrupted", "stopped"), stopped.json
    assert stopped.returncode == 130


@pytest.mark.slow
def test_the_session_runs_on_after_its_caller_exits(sessions: SafeRun, tmp_path: Path) -> None:
    marker = tmp_path / "done"
    started = start(sessions, f"sleep 1; touch {marker}; echo made it", yield_after=0.2)
    assert started.json["status"] == "running", "the caller's process has exited here"
    final = sessions("poll", started.json["session_id"], "--wait", "30", "--format", "json").json
    assert final["status"] == "completed" and final["exit_code"] == 0
    assert marker.exists() and "made it" in final["output"]


@pytest.mark.slow
def test_two_sessions_do_not_see_each_others_output(sessions: SafeRun) -> None:
    first = start(sessions, "for i in 1 2 3; do echo apple$i; sleep 0.3; done", yield_after=0.2).json
    second = start(sessions, "for i in 1 2 3; do echo pear$i; sleep 0.3; done", yield_after=0.2).json
    assert first["session_id"] != second["session_id"]
    one = sessions("poll", first["session_id"], "--wait", "30", "--format", "json").json
    two = sessions("poll", second["session_id"], "--wait", "30", "--format", "json").json
    assert "apple3" in one["output"] and "pear" not in one["output"]
    assert "pear3" in two["output"] and "apple" not in two["output"]


@pytest.mark.slow
def test_sessions_lists_running_and_finished(sessions: SafeRun) -> None:
    running = start(sessions, "sleep 30", yield_after=0.2).json
    finished = start(sessions, "sleep 0.5; echo x", yield_after=0.2).json
    sessions("poll", finished["session_id"], "--wait", "30")
    rows = {row["session_id"]: row for row in sessions("sessions", "--format", "json").json["sessions"]}
    assert rows[running["session_id"]]["status"] == "running"
    assert rows[finished["session_id"]]["status"] == "completed"
    assert rows[finished["session_id"]]["exit_code"] == 0
    assert rows[running["session_id"]]["command"] == "sleep 30"


@pytest.mark.parametrize(
    ("session_id", "needle"),
    [("not-an-id", "not a session id"), ("0" * SESSION_ID_LENGTH, "no session")],
)
@pytest.mark.parametrize("verb", ["poll", "stop", "send"])
def test_unknown_ids_are_a_clear_error(sessions: SafeRun, verb: str, session_id: str, needle: str) -> None:
    args = [verb, session_id, *(["x"] if verb == "send" else []), "--format", "json"]
    outcome = sessions(*args)
    assert outcome.returncode == 123
    assert outcome.json["status"] == "error" and needle in outcome.json["message"]
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in outcome.stderr


@pytest.mark.slow
def test_send_to_a_finished_session_says_nothing_was_typed(sessions: SafeRun) -> None:
    started = start(sessions, "sleep 0.5; echo over", yield_after=0.2).json
    sessions("poll", started["session_id"], "--wait", "30")
    late = sessions("send", started["session_id"], "hello", "--format", "json").json
    assert late["status"] == "completed" and "nothing was typed" in late["message"]


@pytest.mark.slow
def test_send_dash_types_what_comes_on_standard_input(sessions: SafeRun) -> None:
    """`send ID -` keeps a secret off the command line, where every user sees it: the text is
    read from the pipe, its final line break being the Enter."""
    started = start(sessions, "read -s -p 'password: ' pw; echo \"got=[$pw]\"", yield_after=20).json
    assert started["status"] == "input_required", started
    answered = sessions("send", started["session_id"], "-", "--wait", "20", "--format", "json",
                        stdin=b"hunter5\n")
    assert answered.json["status"] == "completed", answered.json
    assert "got=[hunter5]" in answered.json["output"]


@pytest.mark.slow
def test_send_dash_at_a_terminal_reads_one_line_unseen(sessions: SafeRun) -> None:
    """At a terminal, `send ID -` asks for the line with echo off, as a password prompt does, and
    gives the terminal back as it found it."""
    import pexpect

    started = start(sessions, "read -s -p 'password: ' pw; echo \"got=[$pw]\"", yield_after=20).json
    assert started["status"] == "input_required", started
    args = ["-m", "safe_run", "send", started["session_id"], "-", "--wait", "20", "--format", "json"]
    child = pexpect.spawn(sys.executable, args, env=sessions.environment(), timeout=30)
    try:
        child.expect("not shown")
        child.sendline("hunter5")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    shown = child.before.decode()
    assert '"status": "completed"' in shown and "got=[hunter5]" in shown
    assert "hunter5\r\n" not in shown.split("got=")[0], "the typed line is not echoed"


def test_send_dash_with_standard_input_closed_is_a_usage_error(sessions: SafeRun) -> None:
    closed = subprocess.run(["sh", "-c", 'exec <&-; exec "$0" -m safe_run send "$1" -', sys.executable,
                             "0" * SESSION_ID_LENGTH], capture_output=True, text=True, env=sessions.environment(),
                            timeout=60)
    assert closed.returncode == 2 and "there is no text to read" in closed.stderr, closed.stderr
    assert len(closed.stderr.strip().splitlines()) == 1


def test_send_needs_something_to_send(sessions: SafeRun) -> None:
    outcome = sessions("send", "0" * SESSION_ID_LENGTH)
    assert outcome.returncode == 2 and "nothing to send" in outcome.stderr


def test_unknown_key_is_a_usage_error(sessions: SafeRun) -> None:
    outcome = sessions("send", "0" * SESSION_ID_LENGTH, "--key", "hyper-x")
    assert outcome.returncode == 2 and "unknown key" in outcome.stderr


def test_options_before_a_verb_go_to_the_verb(sessions: SafeRun) -> None:
    """`safe-run --format json poll ID`, as `git -C DIR status` is written: poll's own --format."""
    unknown = "0" * SESSION_ID_LENGTH
    for args in (("--format", "json", "poll", unknown), ("--format=json", "stop", unknown)):
        outcome = sessions(*args)
        assert outcome.json["status"] == "error" and f"no session {unknown}" in outcome.json["message"], args
    listed = sessions("--format", "json", "sessions")
    assert listed.returncode == 0 and "sessions" in listed.json


def test_an_option_the_verb_does_not_take_is_a_usage_error_that_says_how(sessions: SafeRun) -> None:
    outcome = sessions("--timeout", "5", "poll", "0" * SESSION_ID_LENGTH)
    assert outcome.returncode == 2
    assert "--timeout is not an option of `poll` (it takes --format, --wait)" in outcome.stderr
    assert "put `--` before poll to run a program of that name" in outcome.stderr


def test_verb_names_run_as_programs_after_a_double_dash(sessions: SafeRun, tmp_path: Path) -> None:
    path = program_on_path(tmp_path, "poll", "echo i am the poll program")
    outcome = sessions("--shell", shell_path("bash"), "--format", "json", "--env", f"PATH={path}", "--", "poll")
    assert outcome.returncode == 0 and outcome.json["output"] == "i am the poll program\n"


@pytest.mark.slow
def test_ctrl_c_while_yielding_stops_the_command(sessions: SafeRun) -> None:
    """A signal to the waiting caller stops the command, as in a foreground run."""
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "safe_run", "--shell", shell_path("bash"), "--format", "json", "--yield-after", "30",
         "--", "echo started; sleep 300"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=sessions.environment(),
    )
    try:
        deadline = time.monotonic() + 20
        while not any(session_dir(sessions).glob("*/meta.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=30)
    finally:
        proc.kill()
    result = json.loads(stdout)
    assert proc.returncode == 130 and result["status"] == "interrupted" and result["session_id"] is None
    assert kept(sessions) == [], "a session nobody was told of is not kept"


def test_a_syntax_error_with_yield_after_is_refused_at_once(sessions: SafeRun) -> None:
    outcome = start(sessions, "echo 'unterminated", yield_after=30)
    assert outcome.returncode == 2 and outcome.json["status"] == "syntax_error"
    assert kept(sessions) == []


@pytest.mark.slow
def test_a_large_answer_reaches_a_slow_reader_as_fast_as_it_reads(sessions: SafeRun) -> None:
    """Twelve megabytes of output polled by a caller whose socket holds little at a time, while the
    command waits for input: each piece goes out as soon as the caller has taken the one before,
    not at the holder's next wake-up for something else (a fifth of a second or more apart, which
    runs past the 5 s a caller gets to take its answer)."""
    from safe_run.session import wire
    from safe_run.session.store import Session

    started = start(sessions, "sleep 0.5; head -c 14000000 /dev/zero | tr '\\0' x | fold -w 100; read -p 'more? ' x",
                    0.2, "bash", "--max-output", "12000000")
    session_id = started.json["session_id"]
    deadline = time.monotonic() + 30
    while listed_status(sessions, session_id) != "input_required":  # all printed; nothing else wakes the holder
        assert time.monotonic() < deadline, "the command never came to its question"
        time.sleep(0.1)
    caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    caller.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    directory = os.open(Session(session_id, sessions.store / session_id).path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        caller.connect(f"/proc/self/fd/{directory}/socket")  # the path itself may be too long for a socket
    finally:
        os.close(directory)
    caller.sendall(wire.encode_request(wire.Poll()))
    answer = bytearray()
    began = time.monotonic()
    while not answer.endswith(b"\n") and time.monotonic() - began < 20:
        piece = caller.recv(16384)
        if not piece:
            break
        answer += piece
    caller.close()
    assert answer.endswith(b"\n"), f"the answer was cut off after {len(answer)} bytes"
    result = json.loads(answer)
    assert result["status"] == "input_required" and len(result["output"]) > 11_000_000, "the whole answer came"


def listed_status(safe_run: SafeRun, session_id: str) -> str | None:
    """The session's status as `sessions` lists it (which takes none of its output)."""
    rows = safe_run("sessions", "--format", "json").json["sessions"]
    return next((row["status"] for row in rows if row["session_id"] == session_id), None)

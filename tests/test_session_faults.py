"""Sessions under faults and bad input, through the CLI: every call answers within its bound, says
exactly what happened, and leaves nothing behind (no process, no socket, no private directory).

A call's bound is the wait it asks for plus ANSWER_MARGIN_S; the subprocess time limit of each
call below is that bound plus start-up slack, so a call that hangs fails the test.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Outcome, SafeRun, release
from safe_run.session.client import ANSWER_MARGIN_S
from safe_run.session.orphans import process
from test_sessions import alive, session_dir, start

# Python's own start-up and the call's own work, on a loaded machine.
SLACK_S = 10.0


@pytest.fixture
def sessions(safe_run: SafeRun) -> Iterator[SafeRun]:
    """safe-run with sessions; whatever a failing test left is stopped, holders resumed first."""
    yield safe_run
    root = session_dir(safe_run)
    for meta in root.glob("*/meta.json") if root.exists() else []:
        try:
            pid = json.loads(meta.read_text()).get("holder_pid")
        except (ValueError, AttributeError):
            continue
        if isinstance(pid, int) and alive(pid):
            os.kill(pid, signal.SIGCONT)
            safe_run("stop", meta.parent.name, timeout=ANSWER_MARGIN_S + SLACK_S)


def call(safe_run: SafeRun, *args: str, wait: float = 0.0) -> Outcome:
    return safe_run(*args, "--format", "json", timeout=wait + ANSWER_MARGIN_S + SLACK_S)


def begin(safe_run: SafeRun, command: str, yield_after: float = 0.5, *extra: str) -> tuple[str, Path]:
    started = start(safe_run, command, yield_after, "bash", *extra)
    assert started.returncode == 75, started.stdout + started.stderr
    session_id = started.json["session_id"]
    return session_id, session_dir(safe_run) / session_id


def holder_pid(directory: Path) -> int:
    return int(json.loads((directory / "meta.json").read_text())["holder_pid"])


def shell_session(directory: Path) -> int:
    return int(json.loads((directory / "shell.json").read_text())["pid"])


def members(session: int) -> list[int]:
    """Live processes of a session (the shell's, which everything the command started is in)."""
    found = (process(int(name)) for name in os.listdir("/proc") if name.isdigit())
    return [p.pid for p in found if p is not None and p.session == session]


def wait_until_gone(pids: list[int], within: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


def raw_caller(directory: Path, blocking: bool = True) -> socket.socket:
    """A connection to the holder that is not safe-run's (the path may be too long for an address)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.setblocking(blocking)
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        conn.connect(f"/proc/self/fd/{fd}/socket")
    except BlockingIOError:
        pass  # the holder's queue of callers is full: this one waits in it
    finally:
        os.close(fd)
    return conn


def one_line(outcome: Outcome) -> str:
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in outcome.stderr, outcome.stderr
    return lines[0]


def assert_nothing_left(safe_run: SafeRun, directory: Path, shell: int) -> None:
    assert wait_until_gone(members(shell)) == [], "the command's processes are gone"
    # The holder answers first, then removes its socket and its directory as it goes.
    deadline = time.monotonic() + 5.0
    while ((directory / "socket").exists() or list(directory.glob("safe-run-*"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not (directory / "socket").exists()
    assert not list(directory.glob("safe-run-*")), "the holder's private directory is gone"
    assert safe_run.leftovers() == []


@pytest.mark.slow
@pytest.mark.long
def test_a_stopped_holder_makes_every_call_answer_unresponsive_within_its_bound(sessions: SafeRun) -> None:
    session_id, directory = begin(sessions, "sleep 60")
    holder, shell = holder_pid(directory), shell_session(directory)
    os.kill(holder, signal.SIGSTOP)
    try:
        expected = (
            f"session {session_id} did not answer within {{bound:g}} s: its holder process {holder} is stopped "
            f"(SIGSTOP?); `kill -CONT {holder}` resumes it"
        )
        for args, wait in ((("poll", session_id), 0.0), (("send", session_id, "hi", "--wait", "1"), 1.0),
                           (("stop", session_id), 0.0)):
            outcome = call(sessions, *args, wait=wait)
            message = expected.format(bound=wait + ANSWER_MARGIN_S)
            assert outcome.returncode == 122, args
            assert (outcome.json["status"], outcome.json["message"]) == ("error", message)
            assert one_line(outcome) == f"safe-run: {message}"
        listing = call(sessions, "sessions")
        assert listing.returncode == 0
        assert [(row["session_id"], row["status"]) for row in listing.json["sessions"]] == [
            (session_id, "unresponsive")]
    finally:
        os.kill(holder, signal.SIGCONT)
    resumed = call(sessions, "poll", session_id)
    assert resumed.json["status"] == "running", "the calls that gave up were not carried out (no stop, no send)"
    assert "hi" not in resumed.json["output"]
    stopped = call(sessions, "stop", session_id)
    assert stopped.returncode == 130 and stopped.json["completion_reason"] == "stopped"
    assert_nothing_left(sessions, directory, shell)


@pytest.mark.slow
def test_a_killed_holder_says_its_holder_died_and_its_leftovers_are_ended(sessions: SafeRun) -> None:
    session_id, directory = begin(sessions, "nohup sleep 301 >/dev/null 2>&1 & sleep 300")
    holder, shell = holder_pid(directory), shell_session(directory)
    job = [pid for pid in members(shell) if process(pid).comm == "sleep"]
    os.kill(holder, signal.SIGKILL)
    assert wait_until_gone([holder]) == []
    survivors = wait_until_gone(members(shell), within=1.0)
    assert survivors, "a job that ignores the hang-up outlives a killed holder"

    message = (
        f"session {session_id} ended without a result: its holder died (process {holder}, killed or crashed) "
        f"while the command ran; ended what the command left running: "
        + ", ".join(f"sleep ({pid})" for pid in sorted(survivors))
    )
    for _ in range(2):  # the same answer for as long as the record is kept
        outcome = call(sessions, "poll", session_id)
        assert outcome.returncode == 125
        assert (outcome.json["status"], outcome.json["message"]) == ("error", message)
        assert sorted(k["pid"] for k in outcome.json["killed"]) == sorted(survivors)
        assert one_line(outcome) == f"safe-run: {message}"
    assert set(survivors) <= set(job)
    rows = call(sessions, "sessions").json["sessions"]
    assert [(row["session_id"], row["status"]) for row in rows] == [(session_id, "error")]
    assert_nothing_left(sessions, directory, shell)


@pytest.mark.slow
@pytest.mark.long
def test_a_flooded_holder_still_answers_every_call(sessions: SafeRun) -> None:
    session_id, directory = begin(sessions, "sleep 1; seq 1 200000; sleep 60")
    shell = shell_session(directory)
    time.sleep(2)  # a megabyte of output to answer with: more than a socket holds
    greedy = raw_caller(directory)
    greedy.sendall(b'{"op": "poll"}\n')  # and never reads its answer
    flood = call(sessions, "send", session_id, "x" * 90 * 1024, "--queue")
    assert flood.returncode == 75 and flood.json["status"] == "running"
    assert flood.json["message"].startswith(
        f"nothing was typed: {90 * 1024 + 1} bytes is more than the 65536 a session holds for its command at a time. "
    )
    # callers that connect and never ask: dropped after a while, never waited for
    idle = [raw_caller(directory, blocking=False) for _ in range(100)]
    try:
        for args, wait in ((("poll", session_id), 0.0), (("send", session_id, "hi", "--wait", "0"), 0.0)):
            outcome = call(sessions, *args, wait=wait)
            assert outcome.returncode in (75, 122), outcome.stderr
        listing = call(sessions, "sessions")
        assert listing.returncode == 0 and len(listing.json["sessions"]) == 1
    finally:
        for conn in [greedy, *idle]:
            conn.close()
    stopped = call(sessions, "stop", session_id)
    assert stopped.returncode == 130 and stopped.json["status"] == "interrupted"
    assert_nothing_left(sessions, directory, shell)


@pytest.mark.slow
def test_text_for_a_busy_command_is_refused_and_never_runs_as_a_shell_command(
    sessions: SafeRun, tmp_path: Path
) -> None:
    marker = tmp_path / "x"
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    session_id, directory = begin(sessions, f"cat {fifo} >/dev/null; echo done", 0.3, "--cwd", str(tmp_path))
    shell = shell_session(directory)
    refused = call(sessions, "send", session_id, "touch x", "--wait", "0")
    assert refused.returncode == 75 and refused.json["status"] == "running"
    assert refused.json["message"].startswith(
        "nothing was typed: the command (cat) is running and not reading its terminal, so the text would wait "
        "there and could run as a shell command once it ends; send it when an answer says input_required, or add "
        "--queue to have it typed at the command's next read. "
    )
    queued = call(sessions, "send", session_id, "touch x", "--queue", "--wait", "0")
    assert queued.json["message"].startswith("queued 'touch x' and Enter: the command (cat) is running")
    release(fifo)
    final = call(sessions, "poll", session_id, "--wait", "20", wait=20)
    assert final.returncode == 0 and final.json["output"] == "done\n"
    assert final.json["message"] == "never typed, the command ended first: 'touch x' and Enter"
    assert not marker.exists()
    assert_nothing_left(sessions, directory, shell)


@pytest.mark.slow
def test_queued_text_is_typed_when_the_command_reads(sessions: SafeRun) -> None:
    session_id, directory = begin(sessions, "sleep 1; read -r line; echo \"got $line\"", yield_after=0.3)
    shell = shell_session(directory)
    call(sessions, "send", session_id, "hello", "--queue", "--wait", "0")
    final = call(sessions, "poll", session_id, "--wait", "20", wait=20)
    assert final.returncode == 0 and final.json["output"].endswith("got hello\n")
    assert final.json["message"] == "typed the queued 'hello' and Enter"
    assert_nothing_left(sessions, directory, shell)


@pytest.mark.slow
def test_a_line_longer_than_the_terminal_takes_is_refused(sessions: SafeRun) -> None:
    session_id, directory = begin(sessions, "read -r line; echo \"got ${#line}\"", yield_after=10)
    shell = shell_session(directory)
    refused = call(sessions, "send", session_id, "b" * 5000)
    assert refused.returncode == 75 and refused.json["status"] == "input_required"
    assert refused.json["message"].startswith(
        "nothing was typed: the line is 5000 bytes and a terminal in line mode takes at most 4095; the rest would "
        "be cut off (give long input through a file instead). "
    )
    typed = call(sessions, "send", session_id, "b" * 4095, "--wait", "20", wait=20)
    assert typed.returncode == 0 and typed.json["output"].endswith("got 4095\n")
    assert_nothing_left(sessions, directory, shell)


def test_a_malformed_session_record_is_skipped_and_reported_once(sessions: SafeRun) -> None:
    root = session_dir(sessions)
    broken = root / ("a" * 24)
    broken.mkdir(parents=True, mode=0o700)
    root.chmod(0o700)
    (broken / "meta.json").write_text("{not json")
    first = call(sessions, "sessions")
    assert first.returncode == 0 and first.json["sessions"] == []
    assert one_line(first) == (
        f"safe-run: skipped session {broken.name}: its record {broken / 'meta.json'} cannot be read (not JSON); "
        "it is removed after 10 minutes"
    )
    again = call(sessions, "sessions")
    assert again.returncode == 0 and again.stderr == ""
    polled = call(sessions, "poll", broken.name)
    assert polled.returncode == 125
    assert one_line(polled) == (
        f"safe-run: session {broken.name} cannot be used: its record {broken / 'meta.json'} cannot be read (not JSON)"
    )


def test_a_wait_that_is_not_a_finite_number_is_a_usage_error(sessions: SafeRun) -> None:
    for value in ("nan", "inf"):
        outcome = call(sessions, "poll", "0" * 24, "--wait", value)
        assert outcome.returncode == 2 and "--wait" in one_line(outcome)

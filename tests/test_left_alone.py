"""Nothing outlives every way to reach it: a holder whose session directory is removed ends what it
holds within seconds, and an input wait that nobody asks about is stopped after `--wait-expire`,
while a command at work is never stopped for being left alone.

Real holders, shells and programs; the waits are real (a second's reach check, a short idle
limit), so these are slow tests, each bounded.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SafeRun, alive, shell_path

pytestmark = pytest.mark.slow


def store(safe_run: SafeRun) -> Path:
    return safe_run.store


def marked(token: str) -> list[int]:
    """Processes whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline:
                found.append(int(entry))
    return found


def live(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def all_gone(pids: list[int], seconds: float) -> list[int]:
    """Those of `pids` still alive after waiting up to `seconds` for them to end."""
    deadline = time.monotonic() + seconds
    while any(live(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if live(pid)]


@pytest.fixture
def holders() -> Iterator[list[int]]:
    """The holders a test saw; any one a failing test did not end is killed afterwards."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        if alive(pid):
            for kill in (os.killpg, os.kill):
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def holder_pids(safe_run: SafeRun, seen: list[int]) -> list[int]:
    """Each holder once: a named shell's commands have sessions of their own, held by its holder."""
    pids: set[int] = set()
    for meta in store(safe_run).glob("*/meta.json"):
        pid = json.loads(meta.read_text()).get("holder_pid")
        if isinstance(pid, int):
            pids.add(pid)
    seen.extend(pids)
    return sorted(pids)


def test_holders_whose_directory_is_removed_end_with_what_they_hold(safe_run: SafeRun, holders: list[int]) -> None:
    """A temporary HOME removed under running sessions and named shells (working, waiting for
    input, idle with a background job): every holder and every process of theirs is gone within 5 s."""
    safe_run.shell = shell_path("bash")
    token = f"31{os.getpid()}"
    started = [
        safe_run("--format", "json", "--yield-after", "0.3", "--", f"sleep {token}.1"),
        safe_run("--format", "json", "--yield-after", "5", "--", f"read -p 'name? ' x # {token}.2"),
        safe_run("--in", "busy", "--format", "json", "--yield-after", "0.3", "--", f"sleep {token}.3"),
        safe_run("--in", "idle", "--format", "json", "--", f"sleep {token}.4 & echo started"),
    ]
    assert [outcome.json["status"] for outcome in started] == ["running", "input_required", "running", "completed"]
    pids = holder_pids(safe_run, holders)
    commands = marked(f"{token}.")
    assert len(pids) == 4 and len(commands) == 3, (pids, commands)

    removed_while_written(safe_run.store, 5.0)
    assert all_gone(pids + commands, 5.0) == [], "a holder or its command outlived every way to reach it"


def removed_while_written(path: Path, within: float) -> None:
    """Remove `path` as `rm -rf` does, again while the holders still write in it: a named shell
    writes its command's records a moment after its answer, and a file made in a directory as it
    is removed leaves that directory not empty."""
    deadline = time.monotonic() + within
    while path.exists():
        try:
            shutil.rmtree(path)
        except OSError:
            assert time.monotonic() < deadline, f"{path} could not be removed in {within} s"
            time.sleep(0.02)


def test_an_input_wait_nobody_asks_about_is_stopped_and_says_so(safe_run: SafeRun, holders: list[int]) -> None:
    safe_run.shell = shell_path("bash")
    waiting = safe_run("--format", "json", "--yield-after", "5", "--wait-expire", "3", "--",
                   "read -p 'name? ' x; echo got $x").json
    assert waiting["status"] == "input_required"
    session = store(safe_run) / waiting["session_id"]
    pids = holder_pids(safe_run, holders)
    time.sleep(2)
    safe_run.shell = None
    asked = safe_run("poll", waiting["session_id"], "--format", "json").json
    assert asked["status"] == "input_required", "a call about it keeps it"
    deadline = time.monotonic() + 20
    while not (session / "result.json").exists():
        assert time.monotonic() < deadline, "the unattended input wait was never stopped"
        time.sleep(0.1)
    final = safe_run("poll", waiting["session_id"], "--format", "json")
    assert final.returncode == 124 and final.json["status"] == "input_required"
    assert final.json["session_id"] is None
    assert "nobody asked about it for 3 s while it waited for input" in final.json["message"]
    # The poll came 2 s or more after the start, and the 3 s were counted again from it; however
    # late a loaded machine runs each step, the end cannot come sooner than that.
    assert final.json["duration_s"] >= 5.0, "the poll did not count as asking about it"
    assert all_gone(pids, 5.0) == []


def test_a_working_command_left_alone_is_never_stopped(safe_run: SafeRun, holders: list[int]) -> None:
    safe_run.shell = shell_path("bash")
    running = safe_run("--format", "json", "--yield-after", "0.3", "--wait-expire", "1", "--",
                   "sleep 3; echo done").json
    assert running["status"] == "running"
    session = store(safe_run) / running["session_id"]
    deadline = time.monotonic() + 20
    while not (session / "result.json").exists():
        assert time.monotonic() < deadline
        time.sleep(0.1)
    safe_run.shell = None
    final = safe_run("poll", running["session_id"], "--format", "json").json
    assert (final["status"], final["exit_code"], final["output"]) == ("completed", 0, "done\n")


def test_sessions_shows_how_long_each_was_left_alone_and_when_a_wait_ends(safe_run: SafeRun, holders: list[int]) -> None:
    safe_run.shell = shell_path("bash")
    waiting = safe_run("--format", "json", "--yield-after", "5", "--", "read -p 'go? ' x").json  # 600 s, the default
    working = safe_run("--format", "json", "--yield-after", "0.3", "--", "sleep 30").json
    time.sleep(1)
    safe_run.shell = None
    try:
        rows = {row["session_id"]: row for row in safe_run("sessions", "--format", "json").json["sessions"]}
        wait, work = rows[waiting["session_id"]], rows[working["session_id"]]
        # Counted from the last call or from the start of the wait, whichever came later.
        assert wait["idle_s"] >= 1 and 600 - wait["idle_s"] - 0.2 <= wait["expires_in_s"] <= 600, wait
        assert work["idle_s"] >= 0.5 and work["expires_in_s"] is None, work
        table = safe_run("sessions", "--format", "pretty").stdout
        assert "stops in 10 min" in table.replace("\n", " ") or "stops in 9 min" in table.replace("\n", " "), table
    finally:
        safe_run("stop", waiting["session_id"])
        safe_run("stop", working["session_id"])

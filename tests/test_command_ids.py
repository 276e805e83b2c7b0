"""Every command of a named shell has an id of its own: a finished command's id answers that
command's kept result and never touches what the shell runs now, through the command line, the
library and MCP. The yields are real waits, so these are slow tests."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

pytestmark = pytest.mark.slow


def test_a_stale_command_id_never_touches_the_shells_new_command(safe_run: SafeRun) -> None:
    safe_run.shell = shell_path("bash")
    try:
        first = safe_run("--in", "W", "--format", "json", "--yield-after", "0.5", "--", "sleep 1; echo first-done").json
        assert first["status"] == "running" and first["session_id"] != first["shell_id"]
        first_id = first["session_id"]
        safe_run.shell = None
        ended = safe_run("poll", first_id, "--wait", "20", "--format", "json").json
        assert (ended["status"], ended["output"]) == ("completed", "first-done\n")
        safe_run.shell = shell_path("bash")
        second = safe_run("--in", "W", "--format", "json", "--yield-after", "0.5", "--", "sleep 30").json
        assert second["status"] == "running" and second["session_id"] not in (first_id, None)
        assert second["shell_id"] == first["shell_id"]
        safe_run.shell = None

        for verb in ("poll", "stop", "send"):
            args = [verb, first_id, *(["x"] if verb == "send" else []), "--format", "json"]
            stale = safe_run(*args).json
            assert (stale["status"], stale["command"], stale["output"]) == (
                "completed", "sleep 1; echo first-done", "first-done\n"), (verb, stale)
        assert "nothing was typed" in safe_run("send", first_id, "x", "--format", "json").json["message"]

        still = safe_run("poll", second["session_id"], "--format", "json").json
        assert (still["status"], still["command"]) == ("running", "sleep 30"), "the new command was never touched"
        mixed = safe_run("poll", first["shell_id"], "--format", "json")
        assert mixed.json["status"] == "error" and second["session_id"] in mixed.json["message"]
        rows = {row["session_id"]: row for row in safe_run("sessions", "--format", "json").json["sessions"]}
        assert {first_id, second["session_id"], first["shell_id"]} <= set(rows)
        assert rows[first_id]["shell_name"] == "W" and rows[first_id]["status"] == "completed"
    finally:
        safe_run.shell = None
        closed = safe_run("close", "W", "--format", "json")
    assert closed.returncode == 0 and closed.json["status"] == "closed", closed.stdout
    assert any(k["command"] == "sleep" for k in closed.json["killed"]), "the close says what it ended"


@pytest.fixture
def api_env(safe_run: SafeRun, monkeypatch: pytest.MonkeyPatch) -> SafeRun:
    for name, value in safe_run.environment().items():
        monkeypatch.setenv(name, value)
    return safe_run


def test_the_same_through_the_api(api_env: SafeRun) -> None:
    from safe_run import Session, Shell

    with Shell(shell=shell_path("bash")) as shell:
        first = shell.run("echo one; sleep 0.8", yield_after=0.3)
        first_id = first.session_id
        assert first_id is not None
        assert Session(first_id).poll(wait=20).output == "one\n"
        second = shell.run("sleep 30", yield_after=0.3)
        assert second.session_id not in (None, first_id)
        assert Session(first_id).stop().command == "echo one; sleep 0.8"
        assert Session(second.session_id or "").poll().status.value == "running"
        closed = shell.close()
    assert closed.status.value == "closed" and any(k.command == "sleep" for k in closed.killed)


def test_commands_run_back_to_back_are_each_listed_once_the_shell_is_left_alone(api_env: SafeRun) -> None:
    """Their records are written when nothing is asked of the shell's holder; a listing that asks
    first finds every one, each with its own result."""
    from safe_run import Shell

    with Shell(shell=shell_path("bash")) as shell:
        for index in range(5):
            assert shell.run(f"echo {index}").output == f"{index}\n"
        time.sleep(0.3)
        listed = subprocess.run([sys.executable, "-m", "safe_run", "sessions", "--format", "json"],
                                capture_output=True, text=True, timeout=30, check=True)
        commands = [row["command"] for row in json.loads(listed.stdout)["sessions"] if row["status"] == "completed"]
        assert sorted(commands) == [f"echo {index}" for index in range(5)], commands


def test_a_listed_commands_id_answers_its_kept_result_while_its_shell_lives_and_after(api_env: SafeRun) -> None:
    """A command whose id was never given out is kept in its shell's journal; the id `sessions`
    lists for it answers `poll` with that command's result, and `stop` does not touch the shell."""
    from safe_run import Session, Shell

    def listed() -> dict[str, dict[str, object]]:
        out = subprocess.run([sys.executable, "-m", "safe_run", "sessions", "--format", "json"],
                             capture_output=True, text=True, timeout=30, check=True)
        return {str(row["command"]): row for row in json.loads(out.stdout)["sessions"]}

    with Shell(shell=shell_path("bash")) as shell:
        for word in ("alpha", "beta"):
            assert shell.run(f"echo {word}; false").exit_code == 1
        time.sleep(0.3)
        alpha = str(listed()["echo alpha; false"]["session_id"])
        kept = Session(alpha).poll()
        assert (kept.status.value, kept.exit_code, kept.output, kept.command) == (
            "completed", 1, "alpha\n", "echo alpha; false"), kept
        assert Session(alpha).stop().output == "alpha\n"
        assert shell.run("echo still").output == "still\n", "the shell was never touched"
        beta = str(listed()["echo beta; false"]["session_id"])
    assert Session(beta).poll().output == "beta\n"
    assert set(listed()) >= {"echo alpha; false", "echo beta; false", "echo still"}


def test_commands_whose_records_are_written_later_are_listed_by_when_they_ran(api_env: SafeRun) -> None:
    """A named shell writes its commands' records once it is idle: a command followed at once by a
    longer one is still listed first, and as older, as it ran."""
    from safe_run import Shell

    with Shell(shell=shell_path("bash")) as shell:
        for command in ("echo zero", "echo first", "sleep 0.6; echo second"):
            shell.run(command)
        time.sleep(0.3)
        out = subprocess.run([sys.executable, "-m", "safe_run", "sessions", "--format", "json"],
                             capture_output=True, text=True, timeout=30, check=True)
    listed = json.loads(out.stdout)["sessions"]
    rows = [row for row in listed if row["status"] == "completed"]
    assert [row["command"] for row in rows] == ["echo zero", "echo first", "sleep 0.6; echo second"]
    shell_ids = {row["session_id"] for row in listed if row["shell_id"] is None}
    assert len(shell_ids) == 1 and {row["shell_id"] for row in rows} == shell_ids, "each command names its shell"
    assert rows[0]["age_s"] >= rows[1]["age_s"] >= rows[2]["age_s"] >= 0.3, rows


def test_the_same_through_mcp(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    from test_mcp import Server, call, drive

    server = Server(tmp_path)

    async def test() -> None:
        async with server.client() as session:
            first = await call(session, "run", {"command": "echo one; sleep 0.8", "yield_after": 0.3})
            assert (await call(session, "poll", {"session_id": first["session_id"], "wait": 20}))["output"] == "one\n"
            second = await call(session, "run", {"command": "sleep 30", "yield_after": 0.3})
            assert second["session_id"] != first["session_id"]
            stale = await call(session, "stop", {"session_id": first["session_id"]})
            assert stale["command"] == "echo one; sleep 0.8"
            assert (await call(session, "poll", {"session_id": second["session_id"]}))["status"] == "running"
            await call(session, "stop", {"session_id": second["session_id"]})

    drive(test)

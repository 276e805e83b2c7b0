"""The default bound of agent runs: JSON output with no limit answers `running` with a session.

The decision (whether a run gets a bound, and which) is a pure function of the options, the
output format and the environment, tested as such. The CLI tests use a bound of 1 s through
SAFE_RUN_YIELD_AFTER and stop what they started; nothing is left: no session, no process, no
private directory.
"""

from __future__ import annotations

import click
import pytest

from conftest import SafeRun
from safe_run.cli.commands.run import DEFAULT_YIELD_AFTER_S, default_yield_after, yield_after_for

AGENT = {}  # no CI, no SAFE_RUN_YIELD_AFTER


@pytest.mark.parametrize(
    ("requested", "wait", "timeout", "shown", "environ", "bound"),
    [
        (None, False, None, "json", AGENT, DEFAULT_YIELD_AFTER_S),  # an agent that gave no limit
        (None, False, None, "json", {"SAFE_RUN_YIELD_AFTER": "5"}, 5.0),
        (None, False, None, "json", {"SAFE_RUN_YIELD_AFTER": "never"}, None),
        (None, False, None, "json", {"SAFE_RUN_YIELD_AFTER": "0"}, None),
        (None, False, 60.0, "json", AGENT, None),  # --timeout is a bound already
        (None, False, 0.0, "json", AGENT, None),  # --timeout 0 asks for no limit
        (None, True, None, "json", AGENT, None),  # --wait
        (0.0, False, None, "json", AGENT, None),  # --yield-after 0
        (7.0, False, None, "json", AGENT, 7.0),
        (7.0, False, 60.0, "json", AGENT, 7.0),
        (None, False, None, "pretty", AGENT, None),  # people watch their run to its end
        (None, False, None, "jsonl", AGENT, None),  # a jsonl follower too
        (None, False, None, "json", {"CI": "true"}, None),  # a CI step waits for its build
        (None, False, None, "json", {"CI": "false"}, DEFAULT_YIELD_AFTER_S),
    ],
)
def test_which_runs_get_a_bound(
    requested: float | None, wait: bool, timeout: float | None, shown: str, environ: dict[str, str],
    bound: float | None,
) -> None:
    assert yield_after_for(requested, wait, timeout, shown, environ) == bound


def test_wait_and_a_yield_contradict_each_other() -> None:
    with pytest.raises(click.UsageError, match="--wait and --yield-after contradict each other"):
        yield_after_for(5.0, True, None, "json", AGENT)


@pytest.mark.parametrize("value", ["abc", "nan", "-1", "inf"])
def test_a_bad_variable_is_a_usage_error(value: str) -> None:
    with pytest.raises(click.UsageError, match="SAFE_RUN_YIELD_AFTER="):
        default_yield_after({"SAFE_RUN_YIELD_AFTER": value})


def test_the_default_is_thirty_seconds() -> None:
    assert default_yield_after({}) == 30.0


# ---- through the command line ----------------------------------------------------------------

BOUND_1S = {"SAFE_RUN_YIELD_AFTER": "1"}


def stop_sessions(safe_run: SafeRun) -> None:
    listing = safe_run("sessions", "--format", "json").json["sessions"]
    for row in listing:
        if row["status"] in ("running", "input_required"):
            safe_run("stop", row["session_id"])


@pytest.mark.slow
def test_a_json_run_without_a_limit_answers_running_after_the_bound(safe_run: SafeRun) -> None:
    outcome = safe_run("--shell", "/bin/bash", "--", "echo started; sleep 30", env=BOUND_1S)
    try:
        result = outcome.json
        assert outcome.returncode == 75
        assert result["status"] == "running" and result["output"] == "started\n"
        session_id = result["session_id"]
        assert len(session_id) == 24 and f"safe-run poll {session_id} --wait 60" in result["message"]
        stopped = safe_run("stop", session_id)
        assert stopped.returncode == 130 and stopped.json["status"] == "interrupted"
        assert stopped.json["completion_reason"] == "stopped"
    finally:
        stop_sessions(safe_run)
    assert safe_run.leftovers() == []


def test_a_short_command_answers_in_one_call(safe_run: SafeRun) -> None:
    outcome = safe_run("--shell", "/bin/bash", "--", "echo quick", env=BOUND_1S)
    assert outcome.returncode == 0
    assert outcome.json["status"] == "completed" and outcome.json["session_id"] is None
    assert outcome.json["output"] == "quick\n"
    assert safe_run("sessions", "--format", "json").json["sessions"] == []
    assert safe_run.leftovers() == []


@pytest.mark.slow
def test_an_input_wait_under_the_bound_is_reported_and_kept(safe_run: SafeRun) -> None:
    outcome = safe_run("--shell", "/bin/bash", "--", "read -p 'name? ' name; echo hello $name",
                       env={"SAFE_RUN_YIELD_AFTER": "20"})
    try:
        result = outcome.json
        assert outcome.returncode == 75
        assert result["status"] == "input_required" and result["prompt"] == "name?"
        answered = safe_run("send", result["session_id"], "ada", "--wait", "10")
        assert answered.returncode == 0 and answered.json["output"].endswith("hello ada\n")
    finally:
        stop_sessions(safe_run)
    assert safe_run.leftovers() == []


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env"),
    [
        (["--wait"], {}),
        (["--yield-after", "0"], {}),
        (["--timeout", "20"], {}),
        (["--format", "pretty"], {}),
        (["--format", "jsonl"], {}),
        ([], {"CI": "true"}),
    ],
    ids=["--wait", "--yield-after 0", "--timeout", "pretty", "jsonl", "CI"],
)
def test_these_runs_wait_for_the_end(safe_run: SafeRun, args: list[str], env: dict[str, str]) -> None:
    outcome = safe_run("--shell", "/bin/bash", *args, "--", "sleep 1.5; echo ended", env={**BOUND_1S, **env})
    assert outcome.returncode == 0, outcome.stderr
    assert "ended" in outcome.stdout
    assert safe_run("sessions", "--format", "json").json["sessions"] == []
    assert safe_run.leftovers() == []

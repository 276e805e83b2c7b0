"""What a caller is told to do next, in its own front end's words."""

from __future__ import annotations

from dataclasses import replace

import pytest

from safe_run.core.result import Reason, Result, Status
from safe_run.core.phrases import COMMAND_LINE, MCP, next_steps

WAITING = Result(Status.INPUT_REQUIRED, None, None, Reason.INPUT_WAIT, "read x", None, message="read is waiting for input")


@pytest.mark.parametrize("result", [WAITING, replace(WAITING, secret=True), replace(WAITING, status=Status.RUNNING,
                                                                                      reads_keyboard=True),
                                    replace(WAITING, status=Status.RUNNING, message=None)])
def test_each_front_end_is_told_its_own_way(result: Result) -> None:
    cli, mcp = next_steps(result, "ab12", COMMAND_LINE), next_steps(result, "ab12", MCP)
    assert "`safe-run stop ab12`" in cli or "`safe-run poll ab12 --wait 60`" in cli
    assert "safe-run" not in mcp.replace("safe-run attach", ""), mcp
    assert 'session_id "ab12"' in mcp


def test_a_secret_is_for_the_person_at_their_own_terminal_whatever_the_front_end() -> None:
    for phrases in (COMMAND_LINE, MCP):
        assert "`safe-run attach ab12` (in their own terminal)" in next_steps(replace(WAITING, secret=True), "ab12", phrases)

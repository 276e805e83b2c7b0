"""safe-run's own processes never show the command: `pkill -f` from inside cannot hit them.

The command text used to be in safe-run's argv (and a session holder's, for the whole session),
so `pkill -f "http.server 18935"` run as the command killed safe-run itself, and `ps` showed the
command to every local user.
"""

from __future__ import annotations

import uuid

import pytest

from conftest import SafeRun, shell_path

MODES = {"foreground": (), "session": ("--yield-after", "20")}


def unique() -> str:
    return f"marker-{uuid.uuid4().hex}"


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_pgrep_from_inside_does_not_find_safe_run(sr: SafeRun, mode: tuple[str, ...]) -> None:
    marker = unique()
    outcome = sr("--format", "json", *mode, "--", f"pgrep -af '{marker}' || echo none")
    result = outcome.json
    assert (result["status"], result["output"]) == ("completed", "none\n"), result


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_pkill_from_inside_leaves_safe_run_alive(sr: SafeRun, mode: tuple[str, ...]) -> None:
    marker = unique()
    outcome = sr("--format", "json", *mode, "--", f"pkill -f 'http.server {marker}'; echo still here")
    result = outcome.json
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 0, "still here\n"), result
    assert outcome.returncode == 0


@pytest.mark.parametrize(("mode", "title"), [((), "safe-run"), (MODES["session"], "safe-run holder ")],
                         ids=MODES.keys())
def test_another_process_reads_only_the_title(safe_run: SafeRun, mode: tuple[str, ...], title: str) -> None:
    """The shell's parent is the foreground safe-run, or the session's holder: its cmdline is read
    by the command, which is another process, as `ps` would read it."""
    safe_run.shell = shell_path("bash")
    marker = unique()
    outcome = safe_run("--format", "json", *mode, "--", f"tr '\\0' '\\n' </proc/$PPID/cmdline; : {marker}")
    result = outcome.json
    assert result["status"] == "completed", result
    assert marker not in result["output"]
    assert result["output"].startswith(title), result["output"]
    assert result["output"].strip("\n").count("\n") == 0, "one word list, nothing of the argv left"

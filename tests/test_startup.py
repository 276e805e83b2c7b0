"""What a call loads: start-up time is mostly imports, so a call must not load what it does not use.

Python's own import log (`-X importtime`) names every module a process imports, on stderr; no
time is asserted, only which modules appear.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from safe_run import __version__
from conftest import Outcome, SafeRun

# Only for a screen that has to be emulated, for people, for other verbs, or replaced by open();
# hashlib loads OpenSSL's library (milliseconds), and a random name needs only os.urandom.
NOT_FOR_A_JSON_RUN = (
    "pyte", "rich", "safe_run.core.emulator", "safe_run.doctor", "safe_run.cli.commands.doctor",
    "safe_run.cli.commands.sessions", "safe_run.core.render", "safe_run.display", "importlib.resources",
    "concurrent.futures", "hashlib", "hmac",
)
# Only for a command line the shell has to check (see `syntax.check`), in a run in the foreground.
NOT_FOR_A_PLAIN_COMMAND = ("subprocess",)


def logged(safe_run: SafeRun, *args: str, env: dict[str, str] | None = None) -> Outcome:
    """safe-run as the fixture runs it, with Python's import log on stderr."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "safe_run", *args], stdin=subprocess.DEVNULL,
                          capture_output=True, env=safe_run.environment(env), timeout=60)
    return Outcome(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


def imported(outcome: Outcome) -> set[str]:
    return {line.split("|")[-1].strip() for line in outcome.stderr.splitlines() if line.startswith("import time:")}


def answer_lines(outcome: Outcome) -> list[str]:
    return [line for line in outcome.stderr.splitlines() if not line.startswith("import time:")]


@pytest.mark.parametrize("bound", ["never", ""], ids=["foreground", "session"])
def test_a_json_run_loads_only_what_it_needs(safe_run: SafeRun, bound: str) -> None:
    outcome = logged(safe_run, "--format", "json", "--", "true", env={"SAFE_RUN_YIELD_AFTER": bound, "SHELL": "/bin/bash"})
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.json["status"] == "completed" and outcome.json["strategy"] == "rich"
    modules = imported(outcome)
    assert "safe_run.engine.runner" in modules, "the import log was read"
    assert sorted(modules & set(NOT_FOR_A_JSON_RUN)) == []
    if bound == "never":
        assert sorted(modules & set(NOT_FOR_A_PLAIN_COMMAND)) == []


@pytest.mark.parametrize("where", [{"CI": "true"}, {"TERM": "xterm"}], ids=["ci-log", "pipe"])
def test_a_pretty_run_writes_its_summary_without_rich(safe_run: SafeRun, where: dict[str, str]) -> None:
    """Its import took 25 ms after the command had ended: most of what a pretty answer added."""
    outcome = logged(safe_run, "--format", "pretty", "--", "true", env={**where, "SHELL": "/bin/bash"})
    assert outcome.returncode == 0, outcome.stderr
    assert "completed · exit 0" in "\n".join(answer_lines(outcome))
    modules = imported(outcome)
    assert "safe_run.core.render" in modules, "the import log was read"
    assert not {m for m in modules if m == "rich" or m.startswith("rich.")}


def test_version_alone_loads_neither_click_nor_the_verbs(safe_run: SafeRun) -> None:
    outcome = logged(safe_run, "--version")
    assert (outcome.returncode, outcome.stdout, answer_lines(outcome)) == (0, f"safe-run, version {__version__}\n", [])
    modules = imported(outcome)
    assert "safe_run.cli.main" in modules, "the import log was read"
    assert not {"click", "safe_run.cli.commands", "setproctitle", "dataclasses", "safe_run.engine.interrupts"} & modules


def test_version_answers_as_click_does(safe_run: SafeRun) -> None:
    """`--version` followed by a word goes through click's option: the same answer."""
    fast, through_click = safe_run("--version"), safe_run("--version", "true")
    assert (fast.returncode, fast.stdout, fast.stderr) == (through_click.returncode, through_click.stdout, through_click.stderr)


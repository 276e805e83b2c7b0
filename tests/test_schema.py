"""The JSON contract: schema/result.schema.json against the code, against real results, and against
docs/reference.md.

Agents code against the schema, not against result.py, so it must not drift from either side: the
enums and keys are compared with the Python definitions, results of the real CLI (run as a
subprocess, as an agent runs it) must validate, deliberately broken results must not (a schema
that accepts anything would pass every other test here), and the reference tables of
docs/reference.md must name exactly what the schema names.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from conftest import Outcome, SafeRun, shell_path
from safe_run.core.result import Downgrade, Killed, Reason, ShellInfo, Status, Strategy, error_result
from safe_run.session.client import UNRESPONSIVE

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "schema" / "result.schema.json"
REFERENCE_PATH = ROOT / "docs" / "reference.md"
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
# No single call to the CLI in this file may take longer: a hang fails the test instead of stalling it.
CALL_LIMIT_S = 30.0
PENDING = 75  # safe-run's exit status while the command still runs in a session

Json = dict[str, Any]


# ---- helpers ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema() -> Json:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def result_validator(schema: Json) -> Draft202012Validator:
    return Draft202012Validator(schema)


def session_list_validator(schema: Json) -> Draft202012Validator:
    """A validator for `$defs/session_list`, resolving its references against the whole schema."""
    return Draft202012Validator({"$schema": DRAFT_2020_12, "$defs": schema["$defs"], "$ref": "#/$defs/session_list"})


def errors(validator: Draft202012Validator, document: object) -> list[str]:
    """Every violation, readable in an assertion message (validate() would stop at the first)."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}" for e in validator.iter_errors(document)]


def walk(node: object) -> Iterator[Json]:
    """Every object in the schema, at any depth, so checks cannot miss a nested enum or property."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def values(enum: type[Enum]) -> list[str]:
    return sorted(member.value for member in enum)


def json_run(safe_run: SafeRun, *args: str) -> Outcome:
    """One call of the real CLI with JSON on stdout (it is not a terminal, so --format auto is JSON)."""
    return safe_run(*args, timeout=CALL_LIMIT_S)


def bash() -> str:
    return shell_path("bash")


# ---- the schema itself --------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema(schema: Json) -> None:
    assert schema["$schema"] == DRAFT_2020_12
    assert validator_for(schema) is Draft202012Validator
    Draft202012Validator.check_schema(schema)


def test_the_enums_are_the_python_enums(schema: Json) -> None:
    """Adding a Status, Strategy or Reason without adding it to the schema must fail here."""
    defs = schema["$defs"]
    assert sorted(defs["status"]["enum"]) == values(Status)
    assert sorted(defs["strategy"]["enum"]) == values(Strategy)
    assert sorted(defs["completion_reason"]["enum"]) == values(Reason)
    for enum in (defs["status"]["enum"], defs["strategy"]["enum"], defs["completion_reason"]["enum"]):
        assert len(enum) == len(set(enum))


def test_every_enum_and_constant_elsewhere_names_a_real_value(schema: Json) -> None:
    """The if/then rules name statuses too; a typo there would silently make a rule never apply."""
    known = set(values(Status)) | set(values(Strategy)) | set(values(Reason)) | {UNRESPONSIVE, "idle", "closed"}
    named = [v for node in walk(schema) for v in [*node.get("enum", []), node.get("const")] if isinstance(v, str)]
    assert named
    assert set(named) <= known


def test_the_properties_are_the_keys_of_a_result(schema: Json) -> None:
    keys = set(error_result("true", "a message").to_dict())
    assert set(schema["properties"]) == keys
    assert set(schema["required"]) == keys
    assert schema["additionalProperties"] is False


def test_the_sub_objects_have_the_keys_of_their_python_counterparts(schema: Json) -> None:
    defs = schema["$defs"]
    assert set(defs["shell"]["properties"]) == set(asdict(ShellInfo("bash", "/bin/bash")))
    assert set(defs["downgrade"]["properties"]) == set(Downgrade("rich", "basic", "why", 0.5).to_dict())
    assert set(defs["killed_process"]["properties"]) == set(asdict(Killed(1, "sleep")))
    for name in ("shell", "downgrade", "killed_process", "session_list", "session_row"):
        assert set(defs[name]["required"]) == set(defs[name]["properties"]), name
        assert defs[name]["additionalProperties"] is False, name


def test_every_property_is_described(schema: Json) -> None:
    """Readers of the schema get the meaning next to the type (if/then rules only restate properties)."""
    objects = {"<result>": schema, **{name: sub for name, sub in schema["$defs"].items() if "properties" in sub}}
    undescribed = [f"{where}.{name}" for where, node in objects.items()
                   for name, sub in node["properties"].items() if not sub.get("description")]
    assert undescribed == []


# ---- real results -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One real outcome: how to get it, and what it must be (so the schema is tested on the right thing)."""

    args: Callable[[], tuple[str, ...]]
    status: str
    returncode: int
    reason: str | None = None
    fills: str = ""  # a key this outcome must fill, so its sub-schema meets real data


CASES: dict[str, Case] = {
    "completed exit 0": Case(lambda: ("--shell", bash(), "--", "echo hello"), "completed", 0, "shell_integration"),
    "completed exit 3": Case(lambda: ("--shell", bash(), "--", "exit 3"), "completed", 3, "shell_exited"),
    "completed without integration": Case(lambda: ("--shell", shell_path("sh"), "--", "echo hello"), "completed", 0),
    "completed after a downgrade": Case(
        lambda: ("--shell", bash(), "--", "unset __sr_nonce; echo hi"), "completed", 0, fills="downgrades"),
    "completed with a background job killed": Case(
        lambda: ("--shell", bash(), "--", "sleep 30 & echo started"), "completed", 0, fills="killed"),
    "completed with truncated output": Case(
        lambda: ("--shell", bash(), "--max-output", "1024", "--", "seq 2000"), "completed", 0, fills="output_truncated"),
    "syntax error": Case(lambda: ("--shell", bash(), "--", "echo 'unterminated"), "syntax_error", 2, "syntax_check"),
    "input wait": Case(lambda: ("--shell", bash(), "--", "read x"), "input_required", 124, "input_wait"),
    "timeout": Case(
        lambda: ("--shell", bash(), "--timeout", "0.5", "--", "sleep 5"), "timeout", 124, "timeout", fills="killed"),
    "no such shell": Case(lambda: ("--shell", "/no/such/shell", "--", "true"), "error", 125, "error"),
    "usage error": Case(lambda: ("--bogus",), "error", 2, "error"),
}
# These outcomes take their idle window or their timeout in real time.
WAITING_CASES = ("input wait", "timeout")


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.slow) if name in WAITING_CASES else name for name in CASES]
)
def test_a_real_result_matches_the_schema(name: str, safe_run: SafeRun, schema: Json) -> None:
    case = CASES[name]
    outcome = json_run(safe_run, *case.args())
    assert outcome.returncode == case.returncode, outcome.stderr
    result = outcome.json
    assert result["status"] == case.status
    if case.reason is not None:
        assert result["completion_reason"] == case.reason
    if case.fills:
        assert result[case.fills], f"{name} should fill {case.fills}"
    assert errors(result_validator(schema), result) == []


@pytest.fixture
def sessions(safe_run: SafeRun) -> Iterator[SafeRun]:
    """safe-run with sessions; whatever a failing test left running is stopped afterwards."""
    yield safe_run
    listing = safe_run("sessions", "--format", "json", timeout=CALL_LIMIT_S)
    for row in listing.json["sessions"] if listing.returncode == 0 else []:
        if row["status"] in ("running", "input_required"):
            safe_run("stop", row["session_id"], timeout=CALL_LIMIT_S)


def listed(safe_run: SafeRun, schema: Json) -> dict[str, Json]:
    """The session listing, validated, by session id."""
    outcome = json_run(safe_run, "sessions", "--format", "json")
    assert outcome.returncode == 0, outcome.stderr
    assert errors(session_list_validator(schema), outcome.json) == []
    return {row["session_id"]: row for row in outcome.json["sessions"]}


@pytest.mark.slow
def test_a_running_session_and_its_final_result_match_the_schema(sessions: SafeRun, schema: Json) -> None:
    validator = result_validator(schema)
    started = json_run(sessions, "--shell", bash(), "--yield-after", "0.3", "--", "sleep 2")
    assert started.returncode == PENDING, started.stderr
    running = started.json
    assert running["status"] == "running" and running["session_id"]
    assert errors(validator, running) == []
    assert listed(sessions, schema)[running["session_id"]]["status"] == "running"

    final = json_run(sessions, "poll", running["session_id"], "--wait", "10")
    assert final.returncode == 0, final.stderr
    assert final.json["status"] == "completed" and final.json["session_id"] is None
    assert errors(validator, final.json) == []
    assert listed(sessions, schema)[running["session_id"]]["exit_code"] == 0


@pytest.mark.slow
def test_an_input_wait_in_a_session_and_its_stop_match_the_schema(sessions: SafeRun, schema: Json) -> None:
    validator = result_validator(schema)
    started = json_run(sessions, "--shell", bash(), "--yield-after", "10", "--", "read x")
    assert started.returncode == PENDING, started.stderr
    waiting = started.json
    assert waiting["status"] == "input_required" and waiting["session_id"]
    assert errors(validator, waiting) == []

    stopped = json_run(sessions, "stop", waiting["session_id"])
    assert stopped.json["completion_reason"] == "stopped"
    assert errors(validator, stopped.json) == []
    assert listed(sessions, schema)[waiting["session_id"]]["status"] == stopped.json["status"]


def test_polling_a_session_that_does_not_exist_answers_in_the_schema(safe_run: SafeRun, schema: Json) -> None:
    outcome = json_run(safe_run, "poll", "0" * 24)
    assert outcome.returncode == 123
    assert outcome.json["status"] == "error"
    assert errors(result_validator(schema), outcome.json) == []


def test_an_empty_session_listing_matches_the_schema(safe_run: SafeRun, schema: Json) -> None:
    assert listed(safe_run, schema) == {}


# ---- the schema is not vacuous ------------------------------------------------------------------


def _running_without_session(result: Json) -> None:
    result.update(status="running", exit_code=None, completion_reason=None, session_id=None)


# Each breakage, and where the schema must object: the rule it breaks, not some side effect.
BREAKAGES: dict[str, tuple[Callable[[Json], None], str]] = {
    "a key dropped": (lambda r: r.pop("prompt"), "<root>"),
    "a key added": (lambda r: r.update(extra=True), "<root>"),
    "an unknown status": (lambda r: r.update(status="finished"), "status"),
    "exit_code as a string": (lambda r: r.update(exit_code="0"), "exit_code"),
    "running without a session id": (_running_without_session, "session_id"),
    "a session id on a completed result": (lambda r: r.update(session_id="0" * 24), "session_id"),
    "a malformed session id": (
        lambda r: r.update(status="running", exit_code=None, completion_reason=None, session_id="ABC"), "session_id"),
    "an exit code on a timeout": (lambda r: r.update(status="timeout", completion_reason="timeout"), "exit_code"),
    "no completion reason on a completed result": (lambda r: r.update(completion_reason=None), "completion_reason"),
    "a completion reason while running": (
        lambda r: r.update(status="running", exit_code=None, session_id="0" * 24), "completion_reason"),
    "an unknown strategy": (lambda r: r.update(strategy="fancy"), "strategy"),
    "truncated without dropped bytes": (lambda r: r.update(output_truncated=True), "output_dropped_bytes"),
    "a shell without its path": (lambda r: r.update(shell={"name": "bash"}), "shell"),
    "a killed process without a pid": (lambda r: r.update(killed=[{"command": "sleep"}]), "killed/0"),
    "a downgrade to an unknown strategy": (
        lambda r: r.update(downgrades=[{"from": "rich", "to": "fancy", "reason": "why", "at_s": 0.1}]),
        "downgrades/0/to"),
}


@pytest.fixture
def real_result(safe_run: SafeRun) -> Json:
    outcome = json_run(safe_run, "--shell", bash(), "--", "echo hello")
    assert outcome.returncode == 0, outcome.stderr
    return outcome.json


@pytest.mark.parametrize("breakage", BREAKAGES)
def test_a_broken_result_fails_validation(breakage: str, real_result: Json, schema: Json) -> None:
    validator = result_validator(schema)
    assert errors(validator, real_result) == []
    broken = copy.deepcopy(real_result)
    mutate, where = BREAKAGES[breakage]
    mutate(broken)
    found = errors(validator, broken)
    assert found, f"the schema accepted {breakage}"
    assert any(error.startswith(f"{where}: ") for error in found), found


def test_the_running_breakage_fails_only_for_the_missing_session_id(real_result: Json, schema: Json) -> None:
    """The control for "running without a session id": the same edit with an id is a valid result."""
    running = copy.deepcopy(real_result)
    _running_without_session(running)
    running["session_id"] = "0123456789abcdef01234567"
    assert errors(result_validator(schema), running) == []


@pytest.mark.parametrize("breakage", ["a row without age", "a finished row with a status as exit code"])
def test_a_broken_session_listing_fails_validation(breakage: str, schema: Json) -> None:
    row: Json = {"session_id": "0" * 24, "command": "sleep 2", "status": "running", "exit_code": None, "age_s": 0.4,
                 "shell_name": None, "shell_id": None, "shell": None, "cwd": None, "idle_s": 0.2, "expires_in_s": None, "recording": None, "attached": 0}
    validator = session_list_validator(schema)
    assert errors(validator, {"schema_version": 1, "sessions": [row]}) == []
    if breakage == "a row without age":
        del row["age_s"]
    else:
        row.update(status="timeout", exit_code=124)
    assert errors(validator, {"schema_version": 1, "sessions": [row]}) != []


# ---- docs/reference.md --------------------------------------------------------------------------


@dataclass(frozen=True)
class Table:
    heading: str  # the nearest markdown heading above the table
    header: list[str]
    rows: list[list[str]]

    def first_column(self) -> list[str]:
        """Each row's first cell, as the backquoted name it starts with (or the bare text)."""
        return [_name(row[0]) for row in self.rows]


def _name(cell: str) -> str:
    quoted = re.match(r"`([^`]+)`", cell)
    return quoted.group(1) if quoted else cell


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def markdown_tables(text: str) -> list[Table]:
    """The pipe tables of a markdown text, each with the heading it sits under."""
    tables: list[Table] = []
    heading = ""
    block: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            block.append(line)
            continue
        if len(block) >= 2 and re.fullmatch(r"[\s|:-]+", block[1]):
            tables.append(Table(heading, _cells(block[0]), [_cells(row) for row in block[2:]]))
        block = []
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
    return tables


def reference_table(first_header_cell: str, heading_word: str = "") -> Table:
    """The one table of docs/reference.md whose header starts with `first_header_cell` (backquotes ignored)."""
    found = [t for t in markdown_tables(REFERENCE_PATH.read_text(encoding="utf-8"))
             if _name(t.header[0]) == first_header_cell and heading_word in t.heading]
    assert len(found) == 1, f"docs/reference.md needs exactly one table starting with {first_header_cell!r}"
    return found[0]


def test_the_reference_json_table_lists_every_key(schema: Json) -> None:
    keys = reference_table("key", heading_word="JSON").first_column()
    assert len(keys) == len(set(keys))
    assert set(keys) == set(schema["properties"])


def test_the_reference_statuses_table_lists_every_status(schema: Json) -> None:
    assert set(reference_table("status").first_column()) == set(schema["$defs"]["status"]["enum"])


def test_the_reference_completion_reasons_table_lists_every_reason(schema: Json) -> None:
    reasons = reference_table("completion_reason").first_column()
    assert set(reasons) == set(schema["$defs"]["completion_reason"]["enum"])

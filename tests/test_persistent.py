"""Persistent shells (--in NAME, close): real shells in real PTYs, driven through the CLI.

Each test runs in its own HOME, so its shells and sessions live in a directory of their own. The
`shells` fixture closes every shell a test named and, should a close fail, kills what its holders
still run, so that no test leaves a shell or a job behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import SHELLS, Outcome, SafeRun, alive, shell_path
from safe_run.session.holder_base import idle_expired

BUSY = 76
NO_SUCH_SESSION = 123
USAGE = 2


@dataclass
class Shells:
    """safe-run calls into named shells, remembering each name so that it can be closed."""

    safe_run: SafeRun
    shell: str = "bash"
    names: set[str] = field(default_factory=set)

    def run(self, name: str, command: str, *options: str, shell: str | None = None) -> Outcome:
        self.names.add(name)
        return self.safe_run("--shell", shell_path(shell or self.shell), "--format", "json", "--in", name, *options,
                             "--", command)

    def result(self, name: str, command: str, *options: str, shell: str | None = None) -> dict:
        outcome = self.run(name, command, *options, shell=shell)
        assert outcome.stdout, outcome.stderr
        return outcome.json

    def close(self, name: str) -> Outcome:
        return self.safe_run("close", name, "--format", "json")


def _session_metas(safe_run: SafeRun) -> list[dict]:
    root = safe_run.store
    metas = []
    for meta in root.glob("*/meta.json") if root.is_dir() else []:
        try:
            metas.append(json.loads(meta.read_text()))
        except (OSError, ValueError):
            continue
    return metas


def _kill_holders(safe_run: SafeRun) -> None:
    """What close could not end: every holder of this test's sessions, and its shell's process group."""
    root = safe_run.store
    for directory in root.iterdir() if root.is_dir() else []:
        for name, key in (("shell.json", "pid"), ("meta.json", "holder_pid")):
            try:
                pid = json.loads((directory / name).read_text()).get(key)
            except (OSError, ValueError):
                continue
            if isinstance(pid, int) and alive(pid):
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except (ProcessLookupError, PermissionError):
                        pass


@pytest.fixture
def shells(safe_run: SafeRun) -> Iterator[Shells]:
    persistent = Shells(safe_run)
    yield persistent
    for name in sorted(persistent.names):
        closed = persistent.close(name)
        assert closed.returncode in (0, NO_SUCH_SESSION), closed.stderr
    _kill_holders(safe_run)


@pytest.fixture(params=SHELLS)
def each_shell(request: pytest.FixtureRequest, shells: Shells) -> Shells:
    """Persistent shells of each installed shell in turn."""
    shell_path(request.param)
    shells.shell = request.param
    return shells


def gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# 1. State across calls ------------------------------------------------------------------------


STATE = {
    "bash": {
        "export": "export SR_KEPT=kept",
        "function": "greet() { echo hello $1; }",
        "alias": "alias sr_said='echo aliased'",
        "option": "set -o noglob",
    },
    "zsh": {
        "export": "export SR_KEPT=kept",
        "function": "greet() { echo hello $1; }",
        "alias": "alias sr_said='echo aliased'",
        "option": "setopt noglob",
    },
    "fish": {
        "export": "set -gx SR_KEPT kept",
        "function": "function greet; echo hello $argv; end",
        "alias": "alias sr_said 'echo aliased'",
        "option": None,
    },
}


def test_state_is_kept_from_one_call_to_the_next(each_shell: Shells, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "afile").write_text("")
    steps = STATE[each_shell.shell]

    first = each_shell.result("st", f"cd {work}")
    assert first["fresh"] is True and first["shell_name"] == "st" and first["shell_id"]
    assert first["cwd"] == str(work) and first["output"] == "" and first["exit_code"] == 0
    for step in ("export", "function", "alias", "option"):
        if steps[step] is not None:
            made = each_shell.result("st", steps[step])
            assert (made["status"], made["exit_code"], made["output"]) == ("completed", 0, ""), made
            assert made["fresh"] is False and made["shell_id"] == first["shell_id"]

    assert each_shell.result("st", "pwd")["output"] == f"{work}\n"
    assert each_shell.result("st", "echo $SR_KEPT")["output"] == "kept\n"
    assert each_shell.result("st", "greet you")["output"] == "hello you\n"
    assert each_shell.result("st", "sr_said")["output"] == "aliased\n"
    globbed = each_shell.result("st", "echo *")["output"]
    assert globbed == ("afile\n" if steps["option"] is None else "*\n")

    failed = each_shell.run("st", "false")
    assert failed.returncode == 1 and failed.json["exit_code"] == 1 and failed.json["output"] == ""
    after = each_shell.run("st", "echo again")
    assert after.returncode == 0 and after.json["exit_code"] == 0 and after.json["output"] == "again\n"
    assert after.json["strategy"] == "rich" and after.json["completion_reason"] == "shell_integration"
    assert after.json["reinjected"] == []


@pytest.mark.parametrize(("shell", "last_status"), [("bash", "$?"), ("zsh", "$?"), ("fish", "$status")])
def test_a_command_sees_the_last_ones_status_as_at_a_prompt(shells: Shells, shell: str, last_status: str) -> None:
    """`$?` in a command is the status of the command before it, as a person typing at the prompt
    sees it, though the shell ran safe-run's own line in between."""
    shell_path(shell)
    for code in (3, 0, 130):
        shells.run("q", f"sh -c 'exit {code}'", shell=shell)
        assert shells.result("q", f"echo {last_status}", shell=shell)["output"] == f"{code}\n"


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_set_e_ends_the_shell_where_a_prompt_would_and_nowhere_else(shells: Shells, shell: str) -> None:
    """Under `set -e` a last list that fails where errexit lets it pass (`[ -f x ] && cat x`)
    leaves the shell running, as at a prompt (in bash also on the line that loads the integration
    again); a command that fails outright ends it."""
    shell_path(shell)
    pid = shells.result("e", "set -e; echo $$", shell=shell)["output"]
    passed = shells.result("e", "[ -f /nonexistent ] && echo found", shell=shell)
    assert (passed["exit_code"], passed["completion_reason"]) == (1, "shell_integration"), passed
    assert shells.result("e", "echo $?; echo $$", shell=shell)["output"] == f"1\n{pid}"
    if shell == "bash":
        shells.run("e", "PROMPT_COMMAND=; PS1='$ '")
        healed = shells.result("e", "false && true")
        assert healed["reinjected"] and healed["exit_code"] == 1, healed
        assert shells.result("e", "echo $$")["output"] == pid
    ended = shells.result("e", "false", shell=shell)
    assert (ended["exit_code"], ended["completion_reason"]) == (1, "shell_exited"), ended


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_a_shell_whose_errors_go_to_a_file_still_ends_each_command_on_its_prompt(
    shells: Shells, shell: str, tmp_path: Path,
) -> None:
    """After `exec >log 2>&1` bash draws its prompt into the file, as at a terminal: each later
    command still ends on the integration's marks, with nothing loaded again, and the file gets
    what a terminal would have shown, no mark of safe-run's."""
    shell_path(shell)
    log = tmp_path / "all.log"
    shells.run("f", f"exec >{log} 2>&1; echo hidden", shell=shell)
    for command in ("echo one", "false"):
        ended = shells.result("f", command, shell=shell)
        followed = (ended["completion_reason"], ended["reinjected"], ended["downgrades"])
        assert followed == ("shell_integration", [], []), ended
    assert shells.result("f", "echo $?; exec >/dev/tty 2>&1", shell=shell)["exit_code"] == 0
    assert shells.result("f", "echo back", shell=shell)["output"] == "back\n"
    written = log.read_text(errors="replace")
    assert "hidden\n" in written and "one\n" in written and "1\n" in written and "633;" not in written, written


@pytest.mark.parametrize(("shell", "rc", "trap"), [
    ("bash", ".bashrc", "trap 'echo err-trap $?' ERR"),
    ("zsh", ".zshrc", "TRAPZERR() { echo err-trap $? }"),
])
def test_the_users_err_trap_fires_once_for_each_failing_command(shells: Shells, shell: str, rc: str, trap: str) -> None:
    """As at a prompt: not for a failure that errexit would let pass, not for safe-run's own steps
    (the line that restores `$?`, the one that runs the command), and once, not twice, for a
    command that fails."""
    shell_path(shell)
    (shells.safe_run.home / rc).write_text(trap + "\n")
    for command, output in (("false", "err-trap 1\n"), ("true", ""), ("false && true", ""), ("echo $?", "1\n"),
                            ("sh -c 'exit 4'; true", "err-trap 4\n")):
        assert shells.result("t", command, shell=shell)["output"] == output, command
    shells.run("t", "set -e", shell=shell)
    assert shells.result("t", "false && true", shell=shell)["output"] == ""
    assert shells.result("t", "false", shell=shell)["output"] == "err-trap 1\n"


# 2. A virtual environment activated in one call is active in the next ---------------------------


def test_an_activated_venv_stays_active(shells: Shells, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    made = shells.result("py", f"python3 -m venv --without-pip {venv}")
    assert made["exit_code"] == 0, made
    assert shells.result("py", f"source {venv}/bin/activate")["exit_code"] == 0
    found = shells.result("py", "command -v python")
    assert found["output"] == f"{venv}/bin/python\n", found
    assert shells.result("py", "echo $VIRTUAL_ENV")["output"] == f"{venv}\n"


# 3. A background server outlives its call and ends with close ---------------------------------


FETCH = (
    "python3 -c 'import sys, time, urllib.request\n"
    "for _ in range(200):\n"
    "    try:\n"
    "        print(urllib.request.urlopen(sys.argv[1], timeout=5).status); break\n"
    "    except OSError: time.sleep(0.05)\n"
    "' http://127.0.0.1:{port}/"
)


def test_a_background_server_answers_later_calls_and_ends_with_close(shells: Shells) -> None:
    port = free_port()
    started = shells.result("web", f"python3 -m http.server {port} --bind 127.0.0.1 >/dev/null 2>&1 & echo $!")
    assert started["exit_code"] == 0, started
    server = int(started["output"].split()[-1])
    assert alive(server)

    fetched = shells.result("web", FETCH.format(port=port))
    assert fetched["output"] == "200\n", fetched

    closed = shells.close("web")
    assert closed.returncode == 0, closed.stderr
    assert closed.json["output"] == "" and "closed" in closed.json["message"]
    assert gone_within(server, 5)
    assert shells.close("web").returncode == NO_SUCH_SESSION


def test_close_names_a_job_started_by_the_last_command(shells: Shells) -> None:
    started = shells.result("job", "sleep 300 >/dev/null 2>&1 & echo $!")
    job = int(started["output"].split()[-1])
    closed = shells.close("job")
    assert job in [k["pid"] for k in closed.json["killed"]]
    assert gone_within(job, 5)


def test_close_while_a_command_runs_ends_it_and_lists_it_once(shells: Shells) -> None:
    started = shells.result("busy", "sleep 30", "--yield-after", "0.3")
    assert started["status"] == "running"
    closed = shells.close("busy")
    assert closed.returncode == 0
    names = [k["command"] for k in closed.json["killed"]]
    assert names.count("sleep") == 1, closed.json["killed"]


def test_a_spawned_holder_is_a_new_program_not_a_fork(tmp_path: Path) -> None:
    """A fork would carry the caller's memory, threads and locks; exec starts clean. A mapping the
    caller made just before is in a fork's memory map at the same address, never in a new program's."""
    import ctypes
    import mmap

    from safe_run.core.request import RunRequest
    from safe_run.session import wire
    from safe_run.session.client import _request
    from safe_run.session.launch import Spawn, detach
    from safe_run.session.store import SessionStore

    marker = mmap.mmap(-1, 7 * mmap.PAGESIZE)
    region = f"{ctypes.addressof(ctypes.c_char.from_buffer(marker)):08x}-"
    assert region in Path("/proc/self/maps").read_text()
    store = SessionStore(tmp_path / "store")
    session = store.create("true")
    detach(session, RunRequest(command="true", shell="/bin/bash", cwd=str(tmp_path), hold_on_input=True), None, Spawn())
    pid = session.meta()["holder_pid"]
    try:
        assert region not in Path(f"/proc/{pid}/maps").read_text()
    finally:
        result = _request(store.get(session.id), wire.Poll(wait=30))
    assert result.status.value == "completed" and result.exit_code == 0


def test_a_shell_that_ended_with_its_first_command_still_answers_that_command_to_its_starter(tmp_path: Path) -> None:
    """The caller that started a named shell connects after starting its holder; a command that
    ends the shell at once may be over before then. That caller is owed the command's result, not
    the record of the shell's end."""
    from safe_run.core.request import RunRequest
    from safe_run.session import wire
    from safe_run.session.client import _request
    from safe_run.session.holder import ShellPlan
    from safe_run.session.launch import Spawn, detach
    from safe_run.session.store import SessionStore

    store = SessionStore(tmp_path / "store")
    session = store.create("echo hi; exit 4", shell_name="quick")
    request = RunRequest(command="echo hi; exit 4", shell=shell_path("bash"), cwd=str(tmp_path), hold_on_input=True)
    detach(session, request, ShellPlan("quick"), Spawn())
    deadline = time.monotonic() + 20
    while not session.result_path.exists():  # the shell has gone and its holder is at its end
        assert time.monotonic() < deadline, "the shell never ended"
        time.sleep(0.01)
    result = _request(session, wire.Poll(wait=30, first=True))
    assert (result.status.value, result.exit_code, result.output) == ("completed", 4, "hi\n"), result
    assert "exited" in (result.message or "")


def test_close_names_a_job_started_by_an_earlier_command(shells: Shells) -> None:
    started = shells.result("job", "sleep 300 >/dev/null 2>&1 & echo $!")
    job = int(started["output"].split()[-1])
    assert shells.result("job", "true")["exit_code"] == 0
    closed = shells.close("job")
    assert gone_within(job, 5), "the job is ended"
    assert job in [k["pid"] for k in closed.json["killed"]]


# 4. A shell that runs a command is busy ---------------------------------------------------------


@pytest.mark.slow
def test_a_second_call_while_the_shell_runs_answers_busy(shells: Shells) -> None:
    shells.result("b", "true")
    started = shells.run("b", "sleep 2; echo slept", "--yield-after", "0.3")
    assert started.json["status"] == "running", started.json
    session_id = started.json["session_id"]
    assert session_id

    busy = shells.run("b", "echo not now")
    assert busy.returncode == BUSY, busy.stdout
    assert busy.json["status"] == "busy" and busy.json["session_id"] == session_id
    assert "not now" not in busy.json["output"] and "sleep 2" in busy.json["message"]

    final = shells.safe_run("poll", session_id, "--wait", "10", "--format", "json")
    assert final.returncode == 0, final.stdout
    assert final.json["status"] == "completed" and final.json["exit_code"] == 0
    assert "slept" in final.json["output"]
    assert shells.result("b", "echo free")["output"] == "free\n"


# 5. exit ends the shell; the next call starts a new one -------------------------------------------


def test_exit_ends_the_shell_and_the_next_call_starts_afresh(shells: Shells) -> None:
    shells.result("x", "export SR_KEPT=kept")
    ended = shells.run("x", "exit 3")
    assert ended.returncode == 3
    assert (ended.json["status"], ended.json["completion_reason"], ended.json["exit_code"]) == (
        "completed", "shell_exited", 3)

    again = shells.result("x", 'echo "[$SR_KEPT]"')
    assert again["fresh"] is True and again["output"] == "[]\n"
    assert again["shell_id"] != ended.json["shell_id"]
    assert "exited" in (again["message"] or ""), again["message"]


# 6. Broken integration is loaded again ---------------------------------------------------------


def assert_healed(result: dict, output: str, exit_code: int) -> None:
    assert result["output"] == output, result
    assert result["exit_code"] == exit_code
    assert result["reinjected"], "the integration was loaded again"
    assert all(r["reason"] and r["at_s"] >= 0 for r in result["reinjected"])
    assert result["completion_reason"] == "shell_integration"


@pytest.mark.parametrize(
    "breaker",
    # The line's own end still sends D; what is lost is the prompt's marks, once PS1 is new. A new
    # bash has no hooks: its end is its prompt on the screen once the idle window is quiet.
    ["PROMPT_COMMAND=; PS1='$ '", "unset -f __sr_precmd __sr_wrap_ps1; PS1='$ '",
     pytest.param("exec bash", marks=pytest.mark.slow)],
)
def test_bash_integration_broken_by_a_command_is_healed(shells: Shells, breaker: str) -> None:
    shells.result("h", "true")
    broken = shells.result("h", breaker)
    # A new shell in the old one's place has no exit code to give, and nothing is typed to ask it.
    assert (broken["status"], broken["exit_code"]) == ("completed", None if breaker == "exec bash" else 0), broken
    healed = shells.result("h", "echo after; (exit 4)")
    assert_healed(healed, "after\n", 4)
    plain = shells.result("h", "echo plain")
    assert plain["output"] == "plain\n" and plain["exit_code"] == 0 and plain["reinjected"] == []


@pytest.mark.parametrize("change", [
    "set -o posix", "trap - DEBUG",
    # The typed line is the alias __sr_c: without aliases it is a function that puts the alias back.
    "unalias -a", "shopt -u expand_aliases",
])
def test_bash_settings_that_touch_the_integration_keep_results_right(shells: Shells, change: str) -> None:
    shells.result("p", "true")
    assert shells.result("p", change)["exit_code"] == 0
    for command, output, code in (("echo one; (exit 5)", "one\n", 5), ("echo two", "two\n", 0), ("false", "", 1)):
        result = shells.result("p", command)
        assert (result["output"], result["exit_code"], result["strategy"]) == (output, code, "rich"), result


@pytest.mark.parametrize("shell", SHELLS)
def test_each_line_appends_its_status_and_a_full_status_file_is_emptied(shells: Shells, shell: str) -> None:
    """Each typed line appends its exit status to the private status file; only what follows the
    file's end when the line was typed counts, and a file grown past its bound starts again."""
    shells.result("s", "true", shell=shell)
    [status] = shells.safe_run.store.glob("*/safe-run-*/status")
    for code in (3, 0, 4):
        assert shells.result("s", f"sh -c 'exit {code}'", shell=shell)["exit_code"] == code
    statuses = [line.split()[0] for line in status.read_text().splitlines()]
    assert statuses[-4:] == ["0", "3", "0", "4"]
    status.write_text("7\n" * 40000)  # past the bound, and a status no line of these commands left
    for code in (5, 0):
        assert shells.result("s", f"sh -c 'exit {code}'", shell=shell)["exit_code"] == code
    assert [line.split()[0] for line in status.read_text().splitlines()] == ["5", "0"]


def test_zsh_precmd_functions_emptied_is_healed(shells: Shells) -> None:
    shells.result("z", "true", shell="zsh")
    shells.run("z", "precmd_functions=(); PS1='%# '", shell="zsh")
    assert_healed(shells.result("z", "echo after; (exit 4)", shell="zsh"), "after\n", 4)


@pytest.mark.parametrize(("shell", "breaker", "declare"), [
    ("bash", "PROMPT_COMMAND=; PS1='$ '", "declare"),
    ("zsh", "precmd_functions=(); PS1='%# '", "typeset"),
    pytest.param("bash", "exec bash", "declare", marks=pytest.mark.slow),
    pytest.param("zsh", "exec zsh", "typeset", marks=pytest.mark.slow),
])
def test_the_command_that_heals_runs_at_the_top_level(shells: Shells, shell: str, breaker: str, declare: str) -> None:
    """Its `declare`/`typeset` stay the shell's, as for every other command, not a function's locals."""
    shell_path(shell)
    shells.result("t", "true", shell=shell)
    shells.run("t", breaker, shell=shell)
    healed = shells.result("t", f"{declare} kept=6; echo $0", shell=shell)
    assert healed["reinjected"] and "__sr" not in healed["output"], healed
    assert shells.result("t", "echo kept=$kept", shell=shell)["output"] == "kept=6\n"


def test_exec_zsh_from_bash_runs_the_next_command_in_zsh(shells: Shells) -> None:
    shell_path("zsh")
    shells.result("bz", "true")
    shells.run("bz", "exec zsh")
    result = shells.result("bz", "echo $ZSH_VERSION; (exit 4)")
    assert result["output"].strip(), "the command ran in zsh"
    assert result["exit_code"] == 4 and result["reinjected"], result


def test_fish_postexec_erased_still_ends_commands_by_the_prompts_mark(shells: Shells) -> None:
    """The prompt's own D (the one a job's report makes fish draw early) covers a lost postexec."""
    shells.result("f", "true", shell="fish")
    shells.run("f", "functions -e __sr_postexec", shell="fish")
    result = shells.result("f", "echo after; false", shell="fish")
    assert result["output"] == "after\n" and result["exit_code"] == 1, result
    assert (result["strategy"], result["downgrades"]) == ("rich", []), result


def test_fish_hooks_erased_are_healed(shells: Shells) -> None:
    shells.result("f", "true", shell="fish")
    shells.run("f", "functions -e __sr_postexec fish_prompt", shell="fish")
    result = shells.result("f", "echo after; false", shell="fish")
    assert result["output"] == "after\n" and result["exit_code"] == 1, result
    assert result["reinjected"]


def test_a_shell_replaced_by_dash_still_runs_commands(shells: Shells) -> None:
    shell_path("dash")
    shells.result("d", "true")
    shells.run("d", "exec dash")
    result = shells.result("d", "echo under dash; (exit 4)")
    assert "under dash" in result["output"] and result["exit_code"] == 4, result
    assert result["strategy"] == "none"
    assert result["downgrades"], "the answer says why the strategy stepped down"
    dropped = shells.result("d", 'echo "${NOPE:?unset}"')
    assert (dropped["status"], dropped["exit_code"]) == ("completed", 2), "a line dash abandons ends at its prompt"
    assert shells.result("d", "echo still")["output"] == "still\n"


# 7. An input wait is answered with send ---------------------------------------------------------


@pytest.mark.slow
def test_an_input_wait_in_a_shell_is_answered_with_send(shells: Shells) -> None:
    shells.result("r", "true")
    waiting = shells.run("r", "read -p 'name? ' n; echo hi $n", "--yield-after", "20")
    assert waiting.returncode == 75, waiting.stdout
    assert waiting.json["status"] == "input_required" and waiting.json["session_id"]

    answered = shells.safe_run("send", waiting.json["session_id"], "bob", "--wait", "20", "--format", "json")
    assert answered.returncode == 0, answered.stdout
    assert answered.json["status"] == "completed" and "hi bob" in answered.json["output"]

    later = shells.result("r", "echo still here; echo $n")
    assert later["output"] == "still here\nbob\n" and later["exit_code"] == 0


# 8. Names ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bad name", "-dash", "", "x" * 65, "a/b"])
def test_a_bad_shell_name_is_a_one_line_usage_error(safe_run: SafeRun, name: str) -> None:
    outcome = safe_run("--shell", shell_path("bash"), "--in", name, "--", "true")
    assert outcome.returncode == USAGE
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in outcome.stderr
    assert "shell name" in lines[0] or "--in" in lines[0], lines
    assert _session_metas(safe_run) == [], "no shell was started"


def test_closing_an_unknown_shell_is_a_clear_error(safe_run: SafeRun) -> None:
    outcome = safe_run("close", "nosuch")
    assert outcome.returncode == NO_SUCH_SESSION
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1 and "nosuch" in lines[0] and "Traceback" not in outcome.stderr


def test_a_bad_name_to_close_is_a_usage_error(safe_run: SafeRun) -> None:
    outcome = safe_run("close", "bad name")
    assert outcome.returncode == USAGE
    assert len(outcome.stderr.strip().splitlines()) == 1 and "Traceback" not in outcome.stderr


def test_two_names_are_two_shells(shells: Shells, tmp_path: Path) -> None:
    shells.result("one", f"cd {tmp_path}")
    other = shells.result("two", "pwd")
    assert other["fresh"] is True and other["output"] != f"{tmp_path}\n"
    assert shells.result("one", "pwd")["output"] == f"{tmp_path}\n"


# 9. --cwd on a later call applies to that command alone ------------------------------------------


def test_cwd_of_a_later_call_applies_to_that_command_alone(each_shell: Shells, tmp_path: Path) -> None:
    home_dir, elsewhere = tmp_path / "home_dir", tmp_path / "elsewhere"
    home_dir.mkdir()
    elsewhere.mkdir()
    each_shell.result("c", f"cd {home_dir}")
    there = each_shell.result("c", "pwd", "--cwd", str(elsewhere))
    assert there["output"] == f"{elsewhere}\n" and there["exit_code"] == 0, there
    back = each_shell.result("c", "pwd")
    assert back["output"] == f"{home_dir}\n" and back["cwd"] == str(home_dir)


def test_env_of_a_later_call_applies_to_that_command_alone(each_shell: Shells) -> None:
    each_shell.result("e", "true")
    scoped = each_shell.result("e", 'echo "[$SR_ONCE]"', "--env", "SR_ONCE=once")
    assert scoped["output"] == "[once]\n", scoped
    assert each_shell.result("e", 'echo "[$SR_ONCE]"')["output"] == "[]\n"


# 10. Idle expiry -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last_used", "now", "limit", "expired"),
    [
        (100.0, 100.5, 1.0, False),
        (100.0, 101.0, 1.0, True),
        (100.0, 250.0, 60.0, True),
        (100.0, 1e9, None, False),
        (100.0, 100.0, 0.0, True),
    ],
)
def test_idle_expired_decides_by_the_time_since_the_last_command(
    last_used: float, now: float, limit: float | None, expired: bool,
) -> None:
    assert idle_expired(last_used, now, limit) is expired


@pytest.mark.slow
def test_an_idle_shell_is_closed_and_the_next_call_is_fresh(shells: Shells) -> None:
    first = shells.result("i", "export SR_KEPT=kept", "--idle-expire", "1")
    assert first["fresh"] is True
    time.sleep(2.5)
    later = shells.result("i", 'echo "[$SR_KEPT]"')
    assert later["fresh"] is True and later["output"] == "[]\n", later
    assert later["shell_id"] != first["shell_id"]


def test_a_command_that_does_not_parse_is_refused_and_the_shell_keeps_its_state(shells: Shells) -> None:
    assert shells.result("parse", "KEPT=yes")["exit_code"] == 0
    refused = shells.result("parse", "if then")
    assert (refused["status"], refused["completion_reason"], refused["fresh"]) == ("syntax_error", "syntax_check", False)
    assert shells.result("parse", "echo $KEPT")["output"] == "yes\n"


@pytest.mark.slow
def test_a_shell_replaced_by_a_program_is_that_program_waiting_never_a_prompt(shells: Shells) -> None:
    """`exec python3` leaves python in the shell's process: its `>>>` is an input wait to answer,
    and nothing of safe-run's is ever typed into it."""
    waiting = shells.result("repl", "exec python3 -q", "--yield-after", "10")
    assert (waiting["status"], waiting["completion_reason"]) == ("input_required", "input_wait"), waiting
    session_id = waiting["session_id"]
    answered = shells.safe_run("send", session_id, "print(6 * 7)", "--format", "json").json
    assert "42" in answered["output"] and "printf" not in answered["output"], answered
    ended = shells.safe_run("send", session_id, "--key", "ctrl-d", "--wait", "10", "--format", "json").json
    assert (ended["status"], ended["completion_reason"]) == ("completed", "shell_exited"), ended
    assert shells.result("repl", "echo back")["fresh"] is True

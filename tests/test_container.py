"""safe-run called through `docker exec -i` into a container without an init (see container.py).

Every call is a new process that arrives with no terminal, stdin at its end, and a parent outside
the container; what it leaves running is adopted by the container's PID 1, which never collects
zombies. The tests check that stdout holds exactly one JSON object, that named shells and
sessions are found again by the next exec, that `close` leaves nothing running, and that what a
command detaches does not stay a zombie.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Outcome, SafeRun, shell_path
from container import Process, StandInContainer
from safe_run.session.adoption import collect_adopted

RUNNING = 75


@pytest.fixture
def container(tmp_path: Path) -> Iterator[StandInContainer]:
    stand_in = StandInContainer(tmp_path / "container")
    stand_in.start()
    yield stand_in
    stand_in.stop()


class Docker:
    """`docker exec -i C safe-run ...`, as an agent on the host calls it."""

    def __init__(self, container: StandInContainer, safe_run: SafeRun, runtime: Path) -> None:
        self.container = container
        self.safe_run = safe_run
        self.runtime = runtime
        self.bash = shell_path("bash")

    def argv(self, *args: str) -> list[str]:
        program = Path(sys.executable).parent / "safe-run"
        if not program.exists():
            pytest.skip("safe-run is not installed beside the test's Python")
        return ["docker", "exec", "-i", self.container.name, str(program), *args]

    def environment(self, default_bound: bool = False) -> dict[str, str]:
        env = self.safe_run.environment({"PATH": self.container.path(), "XDG_RUNTIME_DIR": str(self.runtime)})
        if default_bound:
            del env["SAFE_RUN_YIELD_AFTER"]
        return env

    def __call__(self, *args: str, default_bound: bool = False) -> Outcome:
        # stdin is a pipe that is at its end at once: `docker exec -i` with nothing to send.
        proc = subprocess.run(self.argv(*args), input=b"", capture_output=True, env=self.environment(default_bound),
                              timeout=60)
        return Outcome(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))

    def result(self, *args: str) -> dict[str, Any]:
        outcome = self(*args)
        return one_json_object(outcome)

    def in_shell(self, name: str, command: str) -> dict[str, Any]:
        return self.result("--shell", self.bash, "--format", "json", "--in", name, "--", command)


@pytest.fixture
def docker(container: StandInContainer, safe_run: SafeRun, tmp_path: Path) -> Docker:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    return Docker(container, safe_run, runtime)


def one_json_object(outcome: Outcome) -> dict[str, Any]:
    """stdout holds one JSON object and nothing else (diagnostics go to stderr)."""
    assert outcome.stdout.strip(), outcome.stderr
    decoded, end = json.JSONDecoder().raw_decode(outcome.stdout.lstrip())
    assert outcome.stdout.lstrip()[end:].strip() == "", outcome.stdout
    assert isinstance(decoded, dict)
    return decoded


def live(processes: list[Process]) -> list[Process]:
    return [p for p in processes if not p.zombie]


def holders(processes: list[Process]) -> list[Process]:
    return [p for p in live(processes) if "safe-run holder" in p.args]


def test_a_named_shell_is_found_again_by_the_next_exec(docker: Docker) -> None:
    first = docker.in_shell("a", "export V=1; cd /tmp")
    assert (first["status"], first["exit_code"], first["fresh"]) == ("completed", 0, True)
    second = docker.in_shell("a", 'echo "V=$V in $PWD"')
    assert second["output"].strip() == "V=1 in /tmp"
    assert (second["fresh"], second["cwd"], second["shell_id"]) == (False, "/tmp", first["shell_id"])
    assert docker("close", "a", "--format", "json").returncode == 0


def test_close_in_another_exec_leaves_nothing_running(docker: Docker, container: StandInContainer) -> None:
    started = docker.in_shell("a", "sleep 300 &")
    assert started["status"] == "completed"
    # The line ends as the job is forked: it may be the shell's fork still, not yet sleep.
    before = container.settled(lambda seen: any(p.args == "sleep 300" for p in seen))
    assert len(holders(before)) == 1
    assert any(p.args == "sleep 300" for p in before)
    closed = docker("close", "a", "--format", "json")
    assert closed.returncode == 0, closed.stderr
    assert any("sleep" in str(k) for k in one_json_object(closed)["killed"])
    after = container.settled(lambda seen: not live(seen))
    assert live(after) == []
    # Without an init nobody collects the holder itself once it ends: at most its own zombie is left.
    holder_pid = holders(before)[0].pid
    assert [p.pid for p in after if p.zombie] in ([], [holder_pid])
    assert docker.safe_run.leftovers() == []  # nothing in TMPDIR either


def test_what_a_command_detaches_does_not_stay_a_zombie(docker: Docker, container: StandInContainer) -> None:
    detach = "(sleep 0.2 &); setsid sh -c 'sleep 0.2' & wait"
    result = docker.in_shell("z", detach)
    assert result["status"] == "completed", result
    after = container.settled(lambda seen: not any("sleep 0.2" in p.args or p.zombie for p in seen))
    assert [p for p in after if p.zombie] == []
    assert len(holders(after)) == 1  # the shell is still there, and so is its holder
    assert docker("close", "z", "--format", "json").returncode == 0


def test_the_stand_in_keeps_zombies_of_what_safe_run_did_not_start(container: StandInContainer) -> None:
    """What makes the test above mean something: an orphan that is not safe-run's stays a zombie."""
    subprocess.run(container.enter(["sh", "-c", "(sleep 0.1 &)"]), check=True, timeout=30)
    after = container.settled(lambda seen: any(p.zombie for p in seen))
    assert [(p.ppid, p.zombie) for p in after] == [(1, True)]


@pytest.mark.slow
def test_a_session_started_in_one_exec_is_polled_from_another(docker: Docker, container: StandInContainer) -> None:
    started = docker("--format", "json", "--yield-after", "0.3", "--", "sleep 1; echo done")
    assert started.returncode == RUNNING, started.stderr
    session = one_json_object(started)
    assert session["status"] == "running"
    final = docker.result("poll", session["session_id"], "--wait", "10", "--format", "json")
    assert (final["status"], final["exit_code"], final["output"].strip()) == ("completed", 0, "done")
    assert live(container.settled(lambda seen: not live(seen))) == []


def test_a_run_without_terminal_and_stdin_at_its_end_answers_json(docker: Docker) -> None:
    outcome = docker("--format", "json", "--", "echo hi; test -t 0 && echo tty")
    result = one_json_object(outcome)
    assert (outcome.returncode, result["status"], result["output"].strip()) == (0, "completed", "hi\ntty")


def test_runs_under_the_default_bound_leave_not_even_a_zombie(docker: Docker, container: StandInContainer) -> None:
    """Each is a session whose holder the call forked: the call collects it once it has answered."""
    for _ in range(3):
        outcome = docker("--", "echo hi", default_bound=True)
        assert (outcome.returncode, one_json_object(outcome)["output"].strip()) == (0, "hi")
    assert container.settled(lambda seen: not seen) == []


def test_a_hang_up_of_the_exec_ends_the_command_with_a_result(docker: Docker, container: StandInContainer) -> None:
    """What `ssh` or `kubectl exec` does when the connection drops: SIGHUP to the call."""
    call = subprocess.Popen(docker.argv("--format", "json", "--", "sleep 300"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=docker.environment())
    try:
        seen = container.settled(lambda seen: any(p.args == "sleep 300" for p in seen))
        callers = [p for p in seen if p.ppid == 0 and not p.zombie]
        assert len(callers) == 1, seen
        subprocess.run(container.enter(["kill", "-HUP", str(callers[0].pid)]), check=True, timeout=30)
        stdout, stderr = call.communicate(timeout=60)
    finally:
        if call.poll() is None:
            call.kill()
            call.communicate()
    result = one_json_object(Outcome(call.returncode, stdout.decode(), stderr.decode()))
    assert result["status"] == "interrupted", result
    assert live(container.settled(lambda seen: not live(seen))) == []


def _ended_child() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(3)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # ended, not collected
    return pid


def test_the_shell_is_never_collected_with_the_orphans() -> None:
    orphan = _ended_child()
    shell = _ended_child()
    assert collect_adopted(shell) == [orphan]
    assert os.waitstatus_to_exitcode(os.waitpid(shell, 0)[1]) == 3  # still there for the run's own wait
    assert collect_adopted(None) == []


def test_one_agent_drives_shells_in_two_containers_at_once_through_the_api(tmp_path: Path, safe_run: SafeRun) -> None:
    """`safe_run.Remote` through each container's `docker exec -i`: the same Shell interface, and
    the state of each shell stays in its own container."""
    from concurrent.futures import ThreadPoolExecutor

    from safe_run import Remote

    program = Path(sys.executable).parent / "safe-run"
    if not program.exists():
        pytest.skip("safe-run is not installed beside the test's Python")
    containers = [StandInContainer(tmp_path / name, name) for name in ("c1", "c2")]
    try:
        remotes = []
        for container in containers:
            container.start()
            runtime = tmp_path / f"runtime-{container.name}"
            runtime.mkdir(mode=0o700)
            far_side = ["env", f"HOME={safe_run.home}", f"XDG_RUNTIME_DIR={runtime}", f"TMPDIR={safe_run.tmpdir}",
                        str(program)]
            remotes.append(Remote([str(container.bindir / "docker"), "exec", "-i", container.name], far_side))
        one, two = (remote.Shell(shell=shell_path("bash")) for remote in remotes)
        with one, two:
            assert one.run("export WHERE=one").exit_code == 0 and two.run("export WHERE=two").exit_code == 0
            with ThreadPoolExecutor(2) as pool:
                answers = list(pool.map(lambda shell: shell.run('echo "$WHERE $(readlink /proc/$$/ns/pid)"'), (one, two)))
            assert [answer.output.split()[0] for answer in answers] == ["one", "two"]
            assert answers[0].output.split()[1] != answers[1].output.split()[1], "each in its own container"
        for container in containers:
            left = container.settled(lambda seen: not live(seen))
            assert not live(left), left
    finally:
        for container in containers:
            container.stop()


@pytest.mark.slow
def test_an_mcp_host_reaches_named_shells_through_docker_exec(docker: Docker, container: StandInContainer) -> None:
    """As an MCP host configured with `docker exec -i C safe-run mcp`: a named shell set up by one
    connection is there for the next connection and for the command line, a session started in
    one exec is polled from another, and `close` in a third leaves nothing running."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    argv = docker.argv("mcp")
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=docker.environment())

    async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        assert not result.is_error and result.structured_content is not None, result.content
        return result.structured_content

    async def connected(steps: Any) -> Any:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                return await steps(session)

    async def first(session: ClientSession) -> str:
        assert (await call(session, "run", {"command": "export V=set-over-mcp", "shell_name": "a"}))["exit_code"] == 0
        started = await call(session, "run", {"command": "sleep 1; echo slept", "shell_name": "b", "yield_after": 0.2})
        assert started["status"] == "running"
        return str(started["session_id"])

    async def second(session: ClientSession) -> None:
        seen = await call(session, "run", {"command": 'echo "$V"', "shell_name": "a"})
        assert seen["output"] == "set-over-mcp\n" and seen["fresh"] is False

    session_id = anyio.run(connected, first)
    anyio.run(connected, second)
    assert docker.in_shell("a", 'echo "$V"')["output"] == "set-over-mcp\n"
    polled = docker.result("poll", session_id, "--wait", "30", "--format", "json")
    assert (polled["status"], polled["output"]) == ("completed", "slept\n")
    for name in ("a", "b"):
        assert docker("close", name, "--format", "json").returncode == 0
    left = container.settled(lambda seen: not live(seen))
    assert not live(left), left


def test_runs_that_wait_leave_no_zombie_of_what_they_detached(docker: Docker, container: StandInContainer) -> None:
    """A foreground run (--wait, --timeout) collects what its command detached once it is over;
    PID 1 here never would."""
    for options in (("--wait",), ("--timeout", "20")):
        result = docker.result("--format", "json", *options, "--", "(sleep 3 &); setsid sleep 3 & echo x")
        # dash (no integration here) may report the finished job ("[1] + Done  setsid sleep 3") inside
        # the typed line, when it reaches the end of the sourced command file before the mark.
        assert (result["status"], result["output"].splitlines()[0]) == ("completed", "x"), result
        # Each is reported as what it was when the sweep found it: the end can come while a
        # subshell or setsid has not yet become sleep.
        killed = {k["command"] for k in result["killed"]}
        assert killed and killed <= {"sleep", "sh", "dash", "setsid"}, result["killed"]
    assert container.settled(lambda seen: not seen) == []

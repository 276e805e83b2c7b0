"""safe_run.Remote: the Python API through a command prefix, with real prefixes that stay local.

A "container" here is a directory with its own HOME, XDG_RUNTIME_DIR and TMPDIR, so its own
session store: a `docker` script on a private PATH takes `exec -i NAME PROGRAM...` and runs
PROGRAM with NAME's directories, and an `ssh` script joins its words into one line for `sh -c`,
as ssh does for the remote user's shell. The far side is this checkout's safe-run, started as
`python -m safe_run`.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import safe_run
from safe_run import Remote, RemoteError, SessionError
from safe_run.core.result import Status

import fastcli
from conftest import shell_path

PROGRAM = fastcli.program()
CONTAINERS = ("one", "two")
GONE_WITHIN_S = 30.0
DOCKER = """
[ "$1" = exec ] && [ "$2" = -i ] || {{ echo "docker: only 'exec -i NAME ...' here" >&2; exit 125; }}
root={root}/"$3"
[ -d "$root" ] || {{ echo "Error response from daemon: No such container: $3" >&2; exit 1; }}
shift 3
cd "$root/home" && HOME="$root/home" XDG_RUNTIME_DIR="$root/run" TMPDIR="$root/tmp" exec "$@"
"""
SSH = """
root={root}/"$1"
[ -d "$root" ] || {{ echo "ssh: Could not resolve hostname $1: Name or service not known" >&2; exit 255; }}
shift
cd "$root/home" && HOME="$root/home" XDG_RUNTIME_DIR="$root/run" TMPDIR="$root/tmp" exec /bin/sh -c "$*"
"""
# Quotes of both kinds, $ and backquotes that a shell would expand, a newline, a tab, non-ASCII.
TRICKY = "it's \"quoted\" $HOME `x` \\ \t tab\nsecond line: é ü 日本 ✓"


@pytest.fixture(autouse=True)
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process's own store and a PATH with the fake prefixes; the containers' directories."""
    root = tmp_path / "containers"
    for name in ("local", *CONTAINERS):
        home = root / name / "home"
        (home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
        (root / name / "run").mkdir(mode=0o700)
        (root / name / "tmp").mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for program, script in (("docker", DOCKER), ("ssh", SSH)):
        path = bindir / program
        path.write_text("#!/bin/sh\n" + script.format(root=root))
        path.chmod(0o755)
    local = root / "local"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
    monkeypatch.setenv("HOME", str(local / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(local / "run"))
    monkeypatch.setenv("TMPDIR", str(local / "tmp"))
    monkeypatch.setenv("SHELL", shell_path("bash"))
    for name, value in fastcli.program_env().items():
        monkeypatch.setenv(name, value)
    yield root


def docker(name: str) -> Remote:
    return Remote(["docker", "exec", "-i", name], PROGRAM)


def ssh(name: str) -> Remote:
    return Remote(["ssh", name], PROGRAM)


@pytest.fixture(params=["docker", "ssh"])
def remote(request: pytest.FixtureRequest) -> Remote:
    return docker("one") if request.param == "docker" else ssh("one")


def test_the_prefix_decides_the_quoting() -> None:
    assert (docker("one").quote, ssh("one").quote, Remote(["/usr/bin/ssh", "-T", "h"]).quote) == (False, True, True)
    assert Remote(["kubectl", "exec", "-i", "pod", "--"], quote=True).quote is True


def test_run_answers_a_result_with_the_exit_code_and_output(remote: Remote, machine: Path) -> None:
    result = remote.run("echo out; exit 3")
    assert (result.status, result.exit_code, result.output) == (Status.COMPLETED, 3, "out\n")
    assert result.shell is not None and result.shell.name == "bash"
    here = remote.run('echo "$HOME|$PWD|$GREETING"', cwd=machine / "one" / "tmp", env={"GREETING": "hi 'you' $x"})
    assert here.output == f"{machine / 'one' / 'home'}|{machine / 'one' / 'tmp'}|hi 'you' $x\n"


def test_the_command_text_arrives_unchanged(remote: Remote) -> None:
    result = remote.run(f"cat <<'END'\n{TRICKY}\nEND")
    assert result.command == f"cat <<'END'\n{TRICKY}\nEND"
    assert result.output == TRICKY + "\n"
    with remote.Shell() as sh:
        assert sh.run(f"X=$(cat <<'END'\n{TRICKY}\nEND\n)").exit_code == 0
        assert sh.run('printf "%s\\n" "$X"').output == TRICKY + "\n"


def test_a_shell_keeps_its_state_and_two_containers_keep_theirs_apart(machine: Path) -> None:
    one, two = docker("one"), docker("two")
    with one.Shell("work") as first, two.Shell("work") as second:
        assert first.run("export WHERE=one; cd /tmp; f() { echo from-f; }").fresh is True
        assert second.run("WHERE=two").fresh is True
        assert first.run('echo "$WHERE $PWD"; f').output == "one /tmp\nfrom-f\n"
        assert second.run('echo "$WHERE $HOME"; type f >/dev/null 2>&1 || echo no-f').output == (
            f"two {machine / 'two' / 'home'}\nno-f\n"
        )
        assert first.run("false").exit_code == 1
    assert safe_run.run("echo ${WHERE:-unset}").output == "unset\n"


def test_a_first_scoped_command_leaves_the_shell_as_it_started(remote: Remote, machine: Path) -> None:
    start = machine / "one" / "tmp"
    with remote.Shell(cwd=start, env={"KEPT": "a b"}) as sh:
        assert sh.run("pwd; echo $ONLY", cwd="/", env={"ONLY": "here"}).output == "/\nhere\n"
        assert sh.run('pwd; echo "$ONLY|$KEPT"').output == f"{start}\n|a b\n"


def test_async_runs_drive_two_containers_at_once() -> None:
    async def main() -> list[str]:
        results = await asyncio.gather(docker("one").arun("echo $HOME"), docker("two").arun("echo $HOME"))
        return [Path(result.output.strip()).parent.name for result in results]

    assert asyncio.run(main()) == ["one", "two"]


@pytest.mark.slow
def test_a_session_answers_poll_send_and_stop(remote: Remote) -> None:
    asked = remote.run('read -r -p "name? " x; echo "hello $x"', yield_after=5)
    assert asked.status is Status.INPUT_REQUIRED and asked.session_id is not None
    session = remote.Session(asked)
    assert session.poll().session_id == asked.session_id
    answered = session.send("-n 'w' \"o\" $rld é", wait=5)
    assert answered.status is Status.COMPLETED and "hello -n 'w' \"o\" $rld é" in answered.output

    running = remote.run("sleep 300", yield_after=0.2)
    assert running.status is Status.RUNNING and running.session_id is not None
    session = remote.Session(running.session_id)
    assert session.poll(wait=0).status is Status.RUNNING
    stopped = session.stop()
    assert stopped.status is Status.INTERRUPTED and stopped.session_id is None


@pytest.mark.slow
def test_keys_and_a_queued_line_reach_the_far_side() -> None:
    remote = docker("one")
    asked = remote.run("read -r x; read -r y; echo \"[$x][$y]\"", yield_after=5)
    assert asked.status is Status.INPUT_REQUIRED
    session = remote.Session(asked)
    first = session.send("a", enter=False, keys=["enter"], wait=5)
    assert first.status is Status.INPUT_REQUIRED
    assert session.send("b", queue=True, wait=5).output.endswith("[a][b]\n")


def test_a_session_that_does_not_exist_raises_session_error(remote: Remote) -> None:
    with pytest.raises(SessionError) as caught:
        remote.Session("0" * 24).poll()
    assert "no session" in str(caught.value)
    with pytest.raises(SessionError):
        remote.Shell("never-started").close()
    with pytest.raises(ValueError, match="unknown key"):
        remote.Session("0" * 24).send(keys=["hyper-x"])
    with pytest.raises(ValueError, match="no session"):
        remote.Session(remote.run("true"))


def test_what_the_far_side_refuses_raises_value_error(remote: Remote) -> None:
    with pytest.raises(ValueError, match="'/no/such/dir' is not a directory"):
        remote.run("true", cwd="/no/such/dir")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"command": ""}, ValueError),
        ({"command": 42}, TypeError),
        ({"command": "true", "timeout": -1}, ValueError),
        ({"command": "true", "strategy": "magic"}, ValueError),
        ({"command": "true", "env": {"1BAD": "x"}}, ValueError),
        ({"command": "true", "max_output": 10}, ValueError),
    ],
)
def test_bad_arguments_raise_before_anything_crosses(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        Remote(["no-such-prefix-program"]).run(**kwargs)  # type: ignore[arg-type]


def test_the_run_options_reach_the_far_side() -> None:
    shell_path("dash")
    result = docker("one").run("echo ${#X}", strategy="none", max_output=2048, shell="dash", load_rc=False,
                               env={"X": "x" * 5000})
    assert (result.strategy.value if result.strategy else None, result.output) == ("none", "5000\n")
    assert result.shell is not None and result.shell.name == "dash"
    long = docker("one").run("head -c 6000 /dev/zero | tr '\\0' x", max_output=2048)
    assert long.output_truncated


@pytest.mark.slow
def test_a_timeout_is_a_result() -> None:
    assert docker("one").run("sleep 30", timeout=0.5).status is Status.TIMEOUT


@pytest.mark.parametrize(
    ("remote", "said"),
    [
        (Remote(["no-such-prefix-program", "exec"], PROGRAM), "cannot start 'no-such-prefix-program'"),
        (Remote(["docker", "exec", "-i", "missing"], PROGRAM), "No such container: missing"),
        (Remote(["ssh", "nowhere"], PROGRAM), "exit status 255): ssh: Could not resolve hostname nowhere"),
        (Remote(["docker", "exec", "-i", "one"], ["no-such-safe-run"]), "exit status 127"),
        (Remote(["docker", "exec", "-i", "one"], ["echo", "not json"]), "no safe-run result came back"),
    ],
)
def test_a_call_that_cannot_cross_raises_remote_error(remote: Remote, said: str) -> None:
    with pytest.raises(RemoteError) as caught:
        remote.run("true")
    assert said in str(caught.value)
    assert isinstance(caught.value.stderr, str)


def test_no_answer_in_time_kills_the_prefix_and_raises(tmp_path: Path) -> None:
    remote = Remote(["sh", "-c", 'echo "$$" > "$0"; exec sleep 300', str(tmp_path / "pid")], margin=0.0)
    with pytest.raises(RemoteError, match="no answer within 0.2 s"):
        remote.Session("0" * 24).poll(wait=0.2)
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_closing_a_shell_leaves_nothing_running(machine: Path) -> None:
    remote = docker("one")
    sh = remote.Shell()
    pid = int(sh.run("sleep 300 & echo $!").output.split()[-1])
    closed = sh.close()
    assert any("sleep" in killed.command for killed in closed.killed)
    assert _gone(pid)
    with pytest.raises(SessionError):
        sh.close()
    listing = subprocess.run(
        ["docker", "exec", "-i", "one", *PROGRAM, "sessions", "--format", "json"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=True,
    )
    states = {row["status"] for row in json.loads(listing.stdout)["sessions"]}
    assert states <= {"closed", "completed"}
    assert os.listdir(machine / "one" / "tmp") == []


def _gone(pid: int) -> bool:
    """Whether the process ended (reaped, or a zombie), looking for at most GONE_WITHIN_S."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False

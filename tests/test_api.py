"""The Python API (safe_run.run, Shell, Session, arun, AsyncShell) with real shells.

Each test gets its own HOME, TMPDIR and XDG_RUNTIME_DIR, so its sessions and shells live in its
own store, and closes every shell it starts.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import safe_run
from safe_run import Result, Session, SessionError, Shell
from safe_run.core.result import Status

from conftest import shell_path


@pytest.fixture(autouse=True)
def private_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    runtime = tmp_path / "run"
    tmpdir = tmp_path / "tmp"
    (home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
    runtime.mkdir(mode=0o700)
    tmpdir.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setenv("SHELL", shell_path("bash"))
    yield tmp_path


def test_import_is_cheap_and_loads_the_api_on_first_use() -> None:
    code = "import sys, safe_run; assert 'safe_run.library.api' not in sys.modules; safe_run.run; assert 'safe_run.library.api' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_run_reports_the_exit_code_and_output() -> None:
    result = safe_run.run("echo out; exit 3")
    assert isinstance(result, Result)
    assert (result.status, result.exit_code, result.output) == (Status.COMPLETED, 3, "out\n")
    assert result.to_dict()["status"] == "completed"


def test_run_takes_cwd_env_and_a_shell(tmp_path: Path) -> None:
    result = safe_run.run('echo "$PWD $GREETING"', cwd=tmp_path, env={"GREETING": "hi"}, shell="zsh")
    assert result.output == f"{tmp_path} hi\n"
    assert result.shell is not None and result.shell.name == "zsh"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"command": ""}, ValueError),
        ({"command": "a\0b"}, ValueError),
        ({"command": 42}, TypeError),
        ({"command": "true", "timeout": -1}, ValueError),
        ({"command": "true", "timeout": "5"}, TypeError),
        ({"command": "true", "strategy": "magic"}, ValueError),
        ({"command": "true", "env": {"1BAD": "x"}}, ValueError),
        ({"command": "true", "cwd": "/no/such/dir"}, ValueError),
        ({"command": "true", "max_output": 10}, ValueError),
    ],
)
def test_bad_arguments_raise_with_a_clear_message(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        safe_run.run(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"command": "echo \udcff"}, "the command is not valid UTF-8 (byte 5)"),
        ({"command": "true", "env": {"A": "\udcff"}}, "env: the value of A is not valid UTF-8 (byte 0)"),
        ({"command": "echo é\udcff"}, "the command is not valid UTF-8 (byte 7)"),
    ],
)
def test_text_that_is_not_utf8_is_refused_before_it_runs(kwargs: dict[str, object], message: str) -> None:
    """Python keeps bytes that are not UTF-8 as surrogates; the shell's start-up files cannot hold them."""
    with pytest.raises(ValueError) as caught:
        safe_run.run(**kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_a_directory_whose_name_is_not_utf8_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    odd = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"odd\xff"))
    os.mkdir(odd)
    with pytest.raises(ValueError, match="is not valid UTF-8"):
        safe_run.run("pwd", cwd=odd)
    monkeypatch.chdir(odd)
    with pytest.raises(ValueError, match="the name of the current directory is not valid UTF-8"):
        safe_run.run("pwd")


def test_a_removed_current_directory_is_a_value_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ValueError, match="the current directory no longer exists; give cwd"):
        safe_run.run("pwd")
    with pytest.raises(ValueError, match="the current directory no longer exists; give an absolute cwd"):
        safe_run.run("pwd", cwd="sub")


@pytest.mark.slow
def test_a_timeout_is_a_result_not_an_exception() -> None:
    result = safe_run.run("sleep 30", timeout=0.5)
    assert result.status is Status.TIMEOUT


def test_shell_keeps_its_state_between_calls(tmp_path: Path) -> None:
    with Shell() as sh:
        assert sh.name.startswith("api-")
        first = sh.run(f"cd {tmp_path} && export KEPT=yes && f() {{ echo from-f; }}")
        assert first.fresh is True and first.shell_name == sh.name
        assert sh.run('echo "$PWD $KEPT"; f').output == f"{tmp_path} yes\nfrom-f\n"
        assert sh.run("false").exit_code == 1


def test_a_first_scoped_command_leaves_the_shell_as_it_started(tmp_path: Path) -> None:
    with Shell(cwd=tmp_path) as sh:
        assert sh.run("pwd; echo $ONLY", cwd="/", env={"ONLY": "here"}).output == "/\nhere\n"
        assert sh.run("pwd; echo $ONLY").output == f"{tmp_path}\n\n"


def test_a_shell_gone_since_the_last_call_is_started_again_by_the_next() -> None:
    """A Shell asks the shell its last call found without looking its name up: once that shell has
    gone, by its own `exit` or closed through another Shell of the name, the next run starts a
    new one, fresh, as the first run did."""
    with Shell() as sh:
        first = sh.run("echo $$; X=kept")
        sh.run("exit")
        second = sh.run("echo $$ ${X-unset}")
        assert (second.status.value, second.fresh) == ("completed", True), second
        assert second.output.split()[1:] == ["unset"] and second.output.split()[0] != first.output.split()[0]
        assert Shell(sh.name).close().status.value == "closed"
        third = sh.run("echo $$")
        assert (third.status.value, third.fresh) == ("completed", True), third
        assert third.output.split() != second.output.split()[:1]


def test_a_shell_asked_on_its_kept_connection_and_by_new_callers_in_turn_answers_each() -> None:
    """A Shell keeps its connection to the shell's holder from one run to the next; a caller that
    connects for one request (the command line's `--in`) is answered in between, each its own."""
    with Shell() as sh:
        assert sh.run("X=1").status.value == "completed"
        cli = subprocess.run(
            [sys.executable, "-m", "safe_run", "--format", "json", "--in", sh.name, "--", "echo cli $X"],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )
        assert json.loads(cli.stdout)["output"] == "cli 1\n", cli
        assert sh.run("echo lib $X").output == "lib 1\n"
        assert sh.run("echo again $X").output == "again 1\n"


def test_calls_without_a_pause_still_have_their_records_written(private_store: Path) -> None:
    """A loop of calls leaves a shell's holder no quiet moment to write each command's record in;
    once the results owed hold more output than a bound, the oldest are written as commands end,
    so that the holder does not keep every output for as long as the loop lasts."""
    from safe_run.session.shell_holder import OWED_OUTPUT_MAX

    size = OWED_OUTPUT_MAX // 6
    with Shell() as sh:
        for _ in range(16):
            result = sh.run(f"head -c {size} /dev/zero | tr '\\0' x")
            assert (result.status.value, len(result.output)) == ("completed", size)
        journals = list(private_store.glob("run/safe-run/*/commands"))
        written = [line for journal in journals for line in journal.read_text().splitlines()]
        assert len(written) >= 16 - 6 - 1, journals


def test_closing_a_shell_ends_its_jobs() -> None:
    sh = Shell()
    # The job is named by what it runs once it has exec'd sleep (before, it is a fork of bash).
    sh.run('sleep 300 & for i in $(seq 200); do [ "$(cat /proc/$!/comm)" = sleep ] && break; sleep 0.01; done')
    closed = sh.close()
    assert any("sleep" in killed.command for killed in closed.killed)
    with pytest.raises(SessionError):
        sh.close()


def test_a_bad_shell_name_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not a shell name"):
        Shell("-bad name")


def test_many_threads_at_once_each_get_their_own_answer() -> None:
    answers: dict[int, list[str]] = {}

    def worker(index: int) -> None:
        try:
            with Shell() as sh:
                sh.run(f"N={index}")
                answers[index] = [sh.run("echo $N").output, safe_run.run(f"echo one-shot-{index}").output]
        except Exception as exc:  # shown in the comparison below
            answers[index] = [repr(exc)]

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert answers == {index: [f"{index}\n", f"one-shot-{index}\n"] for index in range(4)}


def test_a_run_from_a_thread_that_is_not_the_main_one() -> None:
    box: list[Result] = []
    thread = threading.Thread(target=lambda: box.append(safe_run.run("echo from-thread")))
    thread.start()
    thread.join(60)
    assert box[0].output == "from-thread\n"


@pytest.mark.slow
def test_a_session_answers_poll_send_and_stop() -> None:
    asked = safe_run.run('read -p "name? " x; echo "hello $x"', yield_after=5)
    assert asked.status is Status.INPUT_REQUIRED and asked.session_id is not None
    session = Session.of(asked)
    assert session.attach_command() == ["safe-run", "attach", asked.session_id]
    assert session.poll().session_id == asked.session_id
    answered = session.send("world", wait=5)
    assert answered.status is Status.COMPLETED and "hello world" in answered.output

    running = safe_run.run("sleep 300", yield_after=0.2)
    assert running.status is Status.RUNNING
    stopped = Session.of(running).stop()
    assert stopped.status is Status.INTERRUPTED and stopped.session_id is None


def test_session_errors() -> None:
    with pytest.raises(SessionError):
        Session("0" * 24).poll()
    with pytest.raises(ValueError, match="no session"):
        Session.of(safe_run.run("true"))
    with pytest.raises(ValueError, match="unknown key"):
        Session("0" * 24).send(keys=["hyper-x"])
    with pytest.raises(ValueError, match="nothing to send"):
        Session("0" * 24).send()
    with pytest.raises(ValueError, match=r"text is not valid UTF-8 \(byte 2\)"):
        Session("0" * 24).send("no\udcff")


def test_a_busy_shell_answers_busy_with_the_running_session() -> None:
    with Shell() as sh:
        running = sh.run("sleep 300", yield_after=0.2)
        assert running.status is Status.RUNNING
        busy = sh.run("echo next")
        assert busy.status is Status.BUSY and busy.session_id == running.session_id
        Session.of(running).stop()
        assert sh.run("echo next").output == "next\n"


def test_async_runs_go_on_together() -> None:
    async def main() -> list[str]:
        async with safe_run.AsyncShell() as sh:
            await sh.run("X=async")
            results = await asyncio.gather(sh.run("echo $X"), safe_run.arun("echo one"), safe_run.arun("echo two"))
        return [result.output for result in results]

    assert asyncio.run(main()) == ["async\n", "one\n", "two\n"]


def test_nothing_is_left_in_the_store_after_shells_close(private_store: Path) -> None:
    with Shell() as sh:
        sh.run("true")
    from safe_run.session.client import listing

    rows = [row for row in listing(0.0)
            if row["status"] not in ("closed", "completed")]
    assert rows == []
    # At most the private directory of the shell this process's fork server keeps ready for the
    # next call (it ends with the process), and that one held by its living owner. That holder,
    # forked ahead as the test looks, may be asking Python's tempfile where TMPDIR is, which
    # writes a file of 8 random letters there and removes it at once: looked at again.
    deadline = time.monotonic() + 1.0
    while True:
        left = [private_store / "tmp" / name for name in os.listdir(private_store / "tmp")]
        if all(path.is_dir() for path in left) or time.monotonic() > deadline:
            break
        time.sleep(0.01)
    assert len(left) <= 1 and all(held(path) for path in left), left


def held(directory: Path) -> bool:
    """Whether a living process holds the lock on a private directory (`workdir.HeldDirectory`)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_the_mcp_verb_without_the_sdk_says_what_to_install() -> None:
    code = "import sys; sys.modules['mcp'] = None; sys.argv = ['safe-run', 'mcp']; from safe_run.cli.main import main; main()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 125
    assert proc.stderr.strip().splitlines() == ["safe-run: safe-run mcp needs the MCP SDK: pip install 'safe-run[mcp]'"]


def test_a_command_over_one_mib_is_refused_before_anything_runs() -> None:
    """The same limit as the command line's and the MCP server's."""
    with pytest.raises(ValueError, match="a command may have at most 1048576"):
        safe_run.run("echo " + "x" * (1024 * 1024))


def test_keys_given_as_one_string_are_refused_here_and_through_a_remote() -> None:
    """'ctrl-c' as one string would be pressed as seven keys named by its letters."""
    from safe_run import Remote

    for session in (Session("a" * 24), Remote(["false"]).Session("a" * 24)):
        with pytest.raises(TypeError, match="list of key names"):
            session.send("y", keys="ctrl-c")

"""The warm process: calls handed to it answer exactly as calls run in their own process.

Each test has a short private HOME (the socket's path must fit in sockaddr_un), starts the real
`python -m safe_run` as an agent does (no tty, TERM=dumb), and ends every warm process it started.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import alive, children_of, shell_path, zombie
from safe_run.engine.kernel import read_stat
from safe_run.warm import wire
from safe_run.processes.warm import keeps_listening

WAIT_S = 20.0


class Caller:
    """An agent calling `safe-run` again and again from one context."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.warm = 0  # the warm process of `served`
        self.runtime = home / "run"
        self.runtime.mkdir(mode=0o700, exist_ok=True)
        self.tmpdir = home / "tmp"  # what a call killed with its warm process leaves is here, not in /tmp
        self.tmpdir.mkdir(mode=0o700, exist_ok=True)
        self.warm_dir = self.runtime / "safe-run" / "warm"

    def env(self, **extra: str) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(self.home), "LANG": "C.UTF-8",
               "XDG_RUNTIME_DIR": str(self.runtime), "TMPDIR": str(self.tmpdir),
               "TERM": "dumb", "SHELL": shell_path("bash"), "SAFE_RUN_YIELD_AFTER": "never"}
        env.update(extra)
        return env

    def argv(self, *args: str) -> list[str]:
        """The installed entry point, as agents start it: `python -m` would put the caller's
        directory first on the module path, which makes each directory a context of its own."""
        script = Path(sys.executable).with_name("safe-run")
        return [str(script), *args] if script.exists() else [sys.executable, "-m", "safe_run", *args]

    def __call__(self, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None,
                 **kwargs: object) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self.argv(*args), input=stdin, capture_output=True, env=env or self.env(),
                              cwd=kwargs.pop("cwd", self.home), timeout=60, **kwargs)  # type: ignore[call-overload]

    def warm_pids(self) -> list[int]:
        pids = []
        for lock in self.warm_dir.glob("*.lock") if self.warm_dir.is_dir() else []:
            try:
                text = lock.read_text().strip()
            except FileNotFoundError:  # a warm process that found another listening, and left
                continue
            if text.isdigit() and alive(int(text)) and not zombie(int(text)):
                pids.append(int(text))
        return pids

    def warmed(self, **kwargs: object) -> int:
        """Call until a warm process listens (the second call starts it); its pid."""
        self("--", "true", **kwargs)
        self("--", "true", **kwargs)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            sockets = [p for p in self.warm_dir.iterdir() if p.is_socket()] if self.warm_dir.is_dir() else []
            if sockets and self.warm_pids():
                return self.warm_pids()[0]
            time.sleep(0.02)
        raise AssertionError("no warm process started")

    def stop(self) -> None:
        for pid in self.warm_pids():
            os.kill(pid, signal.SIGTERM)
        assert gone(self.warm_pids), "a warm process stayed"


def gone(pids: object, within: float = WAIT_S) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not pids():  # type: ignore[operator]
            return True
        time.sleep(0.02)
    return False


def _caller() -> Iterator[Caller]:
    home = Path(tempfile.mkdtemp(prefix="srw-", dir="/tmp"))
    who = Caller(home)
    try:
        yield who
    finally:
        try:
            who.stop()
        finally:  # a warm process that outlived its SIGTERM ends once its directory is gone
            shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def caller() -> Iterator[Caller]:
    """A caller of its own, with no warm process yet."""
    yield from _caller()


@pytest.fixture(scope="module")
def served() -> Iterator[Caller]:
    """A caller whose warm process runs, shared by the tests that leave it running (each start of
    one costs a new interpreter importing everything)."""
    for who in _caller():
        who.warm = who.warmed()
        yield who


def grandparent_of_the_shell(caller: Caller, cwd: Path | None = None, **env: str) -> int:
    """Who started the process that started the shell: the caller's side, or the warm process."""
    outcome = caller("--timeout", "30", "--", "awk '/^PPid/ {print $2}' /proc/$PPID/status", env=caller.env(**env),
                     cwd=cwd or caller.home)
    assert outcome.returncode == 0, outcome
    return int(json.loads(outcome.stdout)["output"])


def test_the_second_call_starts_a_warm_process_and_later_calls_are_served_by_it(caller: Caller) -> None:
    caller("--", "true")
    assert caller.warm_pids() == []  # one call alone leaves nothing behind
    warm = caller.warmed()
    assert grandparent_of_the_shell(caller) == warm
    assert grandparent_of_the_shell(caller, cwd=Path("/")) == warm  # from any directory
    assert grandparent_of_the_shell(caller, SAFE_RUN_WARM="0") != warm


def comparable(outcome: subprocess.CompletedProcess[bytes]) -> tuple[int, dict[str, object] | None, bytes]:
    answer = json.loads(outcome.stdout) if outcome.stdout.startswith(b"{") else None
    if answer is not None:
        answer.pop("duration_s")
    return outcome.returncode, answer, outcome.stderr


@pytest.mark.parametrize("case", ["exit code", "stdin command", "descriptor", "directory", "variables", "usage"])
def test_a_served_call_answers_as_one_run_in_its_own_process(served: Caller, case: str) -> None:
    work = served.home / "work dir"
    work.mkdir(exist_ok=True)
    calls: dict[str, tuple[tuple[str, ...], dict[str, object]]] = {
        "exit code": (("--", "echo out; echo err >&2; exit 3"), {}),
        "stdin command": (("--command-file", "-"), {"stdin": b"printf '%s\\n' \"$PWD\" caf\xc3\xa9"}),
        "descriptor": ((), {}),
        "directory": (("--", "pwd; ls"), {"cwd": work}),
        "variables": (("--", 'printf "%s|" "$GREETING" "$SAFE_RUN_WARM"'), {}),
        "usage": (("--no-such-option",), {}),
    }
    args, kwargs = calls[case]
    answers = []
    for switch in ("1", "0"):
        env = served.env(GREETING="hello\nworld", SAFE_RUN_WARM=switch)
        if case == "descriptor":  # a descriptor the served passed, by its number
            read, write = os.pipe()
            os.write(write, b"echo from a passed descriptor")
            os.close(write)
            try:
                answers.append(comparable(served("--command-file", f"/dev/fd/{read}", env=env, pass_fds=(read,))))
            finally:
                os.close(read)
        else:
            answers.append(comparable(served(*args, env=env, **kwargs)))
    served, alone = answers
    if case == "variables":  # the one difference asked for
        assert served[1] is not None and served[1]["output"] == "hello\nworld|1|"
        assert alone[1] is not None and alone[1]["output"] == "hello\nworld|0|"
        return
    assert served == alone


def test_a_stop_signal_reaches_the_served_call(served: Caller) -> None:
    client = subprocess.Popen(served.argv("--timeout", "30", "--", "sleep 41.5"), env=served.env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=served.home)
    assert gone(lambda: not running("sleep 41.5")), "the command did not start"
    client.send_signal(signal.SIGTERM)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 143
    assert json.loads(out)["status"] == "interrupted"
    assert gone(lambda: running("sleep 41.5"))


def test_a_killed_caller_takes_its_call_with_it(served: Caller) -> None:
    client = subprocess.Popen(served.argv("--timeout", "30", "--", "sleep 42.5"), env=served.env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=served.home)
    assert gone(lambda: not running("sleep 42.5")), "the command did not start"
    client.kill()
    client.wait(timeout=60)
    assert gone(lambda: running("sleep 42.5")), "the command outlived its killed served"
    assert served.warm in served.warm_pids(), "the warm process went with the call"


def test_a_caller_in_another_context_is_not_served(served: Caller) -> None:
    warm = served.warm
    assert grandparent_of_the_shell(served, PYTHONHASHSEED="7") != warm
    umask = subprocess.run(["sh", "-c", 'umask 077; exec "$@"', "sh", *served.argv(
        "--timeout", "30", "--", "awk '/^PPid/ {print $2}' /proc/$PPID/status")],
        env=served.env(), capture_output=True, timeout=60, cwd=served.home)
    assert int(json.loads(umask.stdout)["output"]) != warm


@pytest.mark.parametrize("env", [{"SAFE_RUN_WARM": "0"}, {"CI": "true"}])
def test_ci_and_the_off_switch_start_none(caller: Caller, env: dict[str, str]) -> None:
    for _ in range(3):
        assert caller("--", "true", env=caller.env(**env)).returncode == 0
    assert not caller.warm_dir.exists()  # not even a note of the calls, from which one would start


def test_a_caller_at_a_terminal_starts_none(caller: Caller) -> None:
    import pexpect

    for _ in range(3):
        child = pexpect.spawn(caller.argv()[0], [*caller.argv()[1:], "--format", "json", "--", "true"],
                              env=caller.env(), cwd=str(caller.home), timeout=60)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    assert not caller.warm_dir.exists()


def test_a_stopped_warm_process_lets_the_running_call_finish(caller: Caller) -> None:
    warm = caller.warmed()
    client = subprocess.Popen(caller.argv("--timeout", "30", "--", "sleep 0.3; echo finished"),
                              env=caller.env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    deadline = time.monotonic() + WAIT_S
    while not running("sleep 0.3") and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(warm, signal.SIGTERM)
    out, _ = client.communicate(timeout=60)
    assert client.returncode == 0
    assert json.loads(out)["output"] == "finished\n"
    assert gone(lambda: alive(warm) and not zombie(warm)), "the warm process stayed"
    assert caller("--", "echo again").returncode == 0  # the next call runs in its own process


@pytest.mark.slow
def test_a_call_the_warm_process_answers_too_late_runs_once(caller: Caller) -> None:
    """The caller gives up waiting and runs the call itself; the warm process, answering later,
    must then not run it too."""
    warm = caller.warmed()
    marks = caller.home / "runs"
    os.kill(warm, signal.SIGSTOP)
    try:
        client = subprocess.Popen(caller.argv("--", f"echo ran >> '{marks}'"), env=caller.env(),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, cwd=caller.home)
        assert gone(lambda: not marks.exists()), "the caller never gave up on the stopped warm process"
    finally:
        os.kill(warm, signal.SIGCONT)
    out, _ = client.communicate(timeout=60)
    assert client.returncode == 0
    assert json.loads(out)["status"] == "completed"
    assert grandparent_of_the_shell(caller) == warm  # answered since: the late request is behind it
    assert marks.read_text() == "ran\n"


PR_SET_NO_NEW_PRIVS = 38
LANDLOCK_CREATE_RULESET, LANDLOCK_ADD_RULE, LANDLOCK_RESTRICT_SELF = 444, 445, 446  # on every architecture
# Writing, making and removing files: what the sandbox below forbids outside the directories it names.
LANDLOCK_WRITES = (1 << 1) | sum(1 << bit for bit in range(4, 13))


def no_new_privileges() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def landlocked(writable: list[Path]) -> Callable[[], None]:
    """A preexec function that puts the child in a Landlock sandbox: writes only under `writable`."""
    def enter() -> None:
        import ctypes
        import struct

        libc = ctypes.CDLL(None, use_errno=True)
        attr = struct.pack("Q", LANDLOCK_WRITES)
        ruleset = libc.syscall(LANDLOCK_CREATE_RULESET, attr, len(attr), 0)
        for path in writable:
            rule = struct.pack("=Qi", LANDLOCK_WRITES, os.open(path, os.O_PATH | os.O_CLOEXEC))
            assert libc.syscall(LANDLOCK_ADD_RULE, ruleset, 1, rule, 0) == 0
        no_new_privileges()
        assert libc.syscall(LANDLOCK_RESTRICT_SELF, ruleset, 0) == 0
    return enter


def test_a_sandboxed_caller_is_not_served_by_a_warm_process_outside_its_sandbox(caller: Caller, tmp_path: Path) -> None:
    import ctypes

    if ctypes.CDLL(None, use_errno=True).syscall(LANDLOCK_CREATE_RULESET, None, 0, 1) < 0:
        pytest.skip("no Landlock in this kernel")
    env = caller.env()  # its TMPDIR is inside the sandbox's home
    for _ in range(2):  # the caller's agent, without the sandbox: a warm process starts
        caller("--", "true", env=env, preexec_fn=no_new_privileges)
    deadline = time.monotonic() + WAIT_S
    while not caller.warm_pids() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert caller.warm_pids(), "no warm process started"
    outside = tmp_path / "written"
    sandboxed = caller("--", f"touch '{outside}'", env=env, preexec_fn=landlocked([caller.home, Path("/dev")]))
    assert json.loads(sandboxed.stdout)["exit_code"] == 1
    assert not outside.exists()


def test_a_caller_with_another_scheduling_policy_is_not_served(served: Caller) -> None:
    def batch() -> None:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))

    outcome = served("--timeout", "30", "--", "awk '{print $41}' /proc/$$/stat", preexec_fn=batch)
    assert json.loads(outcome.stdout)["output"] == f"{os.SCHED_BATCH}\n"


def test_a_killed_warm_process_takes_its_call_with_it_and_the_caller_says_so(caller: Caller) -> None:
    warm = caller.warmed()
    mark = caller.home / "late"
    client = subprocess.Popen(caller.argv("--timeout", "30", "--", f"sleep 43.5; touch {mark}"), env=caller.env(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=caller.home)
    assert gone(lambda: not running("sleep 43.5")), "the command did not start"
    os.kill(warm, signal.SIGKILL)
    out, err = client.communicate(timeout=60)
    assert client.returncode == 125 and out == b""
    assert b"was killed, and the call with it" in err
    assert gone(lambda: running("sleep 43.5")), "the command outlived the warm process that ran it"
    assert not mark.exists()


def test_a_garbled_request_is_refused_and_the_warm_process_goes_on(served: Caller) -> None:
    import socket

    warm = served.warm
    path = next(p for p in served.warm_dir.iterdir() if p.is_socket())
    with socket.socket(socket.AF_UNIX) as conn:
        conn.connect(str(path))
        conn.sendall(b"12:not a request")
        conn.settimeout(10)
        assert conn.recv(100) == b""
    assert grandparent_of_the_shell(served) == warm


def test_requests_round_trip() -> None:
    call = wire.Call(b"ctx\n1", 0x1000, 0x2, [0, 1, 2, 7], [b"prog", b"", b"a:b", b"\xff"], [b"A=1", b"B=x=y"])
    back = wire.decode(wire.encode(call))
    assert (back.fingerprint, back.ignored, back.blocked, back.targets, back.argv, back.environ) == (
        b"ctx\n1", 0x1000, 0x2, [0, 1, 2, 7], [b"prog", b"", b"a:b", b"\xff"], [b"A=1", b"B=x=y"])
    data = wire.encode(call)
    assert wire.request_length(data[:2]) is None
    assert wire.request_length(data) == len(data)
    for bad in (data[:-1], b"5:hello", b"3:1:x", b"x" * 20):
        with pytest.raises(ValueError):
            wire.decode(bad) if b":" in bad else wire.request_length(bad)


def test_it_listens_until_stopped_idle_or_unreachable() -> None:
    assert keeps_listening(stopping=False, ours=True, idle_for=1.0, idle=600.0)
    assert not keeps_listening(stopping=True, ours=True, idle_for=0.0, idle=600.0)
    assert not keeps_listening(stopping=False, ours=False, idle_for=0.0, idle=600.0)
    assert not keeps_listening(stopping=False, ours=True, idle_for=600.0, idle=600.0)


def running(command_line: str) -> bool:
    """Whether a process runs with exactly this command line (the caller's own holds more words)."""
    return subprocess.run(["pgrep", "-x", "-f", command_line], capture_output=True).returncode == 0


def _login() -> None:
    """Become a login session of its own, as PAM makes each ssh connection (a new audit session id)."""
    os.setsid()
    with open("/proc/self/loginuid", "w") as handle:
        handle.write(str(os.getuid()))


def _can_log_in() -> bool:
    try:
        return subprocess.run(["true"], preexec_fn=_login, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def test_a_warm_process_of_a_login_session_ends_with_that_session(caller: Caller) -> None:
    """Each ssh connection through PAM is a context of its own (its audit session id, which every
    command inherits): the warm process one started ends when that connection is over, rather than
    staying out of reach for its idle time."""
    if not _can_log_in():
        pytest.skip("this process may not start a login session (writing /proc/self/loginuid)")
    pid_file = caller.home / "warm-pid"
    call = " ".join(shlex.quote(word) for word in caller.argv("--", "true"))
    script = (f"{call}; {call}; for i in $(seq 100); do cat {caller.warm_dir}/*.lock >{pid_file} 2>/dev/null "
              "&& break; sleep 0.05; done")
    subprocess.run(["sh", "-c", script], preexec_fn=_login, env=caller.env(), cwd=caller.home, timeout=60, check=True)
    pid = int(pid_file.read_text())
    assert gone(lambda: alive(pid) and not zombie(pid)), "the warm process outlived its login session"


def test_a_spare_child_waits_for_the_next_call_and_one_that_dies_is_not_made_again(caller: Caller) -> None:
    """Between calls the warm process keeps one child forked ahead of the next call, which that
    call becomes; a spare that dies unasked is not replaced, and calls are forked as they come."""
    warm = caller.warmed()
    deadline = time.monotonic() + WAIT_S
    while len(spares := spares_of(warm)) != 1:
        assert time.monotonic() < deadline, "no spare child was made between calls"
        time.sleep(0.02)
    [spare] = spares
    assert grandparent_of_the_shell(caller) == warm
    assert gone(lambda: alive(spare) and not zombie(spare))  # the call was the spare, and it ended
    # The spare is the one child in the warm process's own session, with a holder forked ahead. The
    # call's holder passes to the warm process, their subreaper, until it has hung its shell up:
    # a keeper, with its worker and their shell below it as the spare has, in a session of its own
    # once it hears that it serves, which under load can come after the call ended. So the spare
    # is the warm process's only child, and stays so: the next is forked as the call is collected.
    spare, since = 0, time.monotonic()
    while True:
        left = children_of(warm)
        alone = left[0] if len(left) == 1 and spares_of(warm) == left and grandchildren(left[0]) else 0
        if alone != spare:
            spare, since = alone, time.monotonic()
        elif spare and time.monotonic() - since >= 0.3:
            break
        assert time.monotonic() < deadline, f"no spare child alone after the call: {described(left)}"
        time.sleep(0.02)
    os.kill(spare, signal.SIGKILL)
    assert gone(lambda: children_of(warm)), f"left: {described(children_of(warm))}"
    assert grandparent_of_the_shell(caller) == warm  # forked as it came
    assert gone(lambda: children_of(warm)), f"left: {described(children_of(warm))}"  # the call, and what it let go
    time.sleep(0.2)
    assert children_of(warm) == []  # and no spare made after it


def test_a_holder_forked_ahead_takes_the_callers_place_and_outlives_the_call(caller: Caller) -> None:
    """The spare child forks its session's holder ahead too; handed the session, the holder runs
    the command with the caller's directory and variables, and goes on after the call answered."""
    caller.warmed()
    place = caller.home / "place"
    place.mkdir()
    env = caller.env(ONLY_HERE="yes", SAFE_RUN_YIELD_AFTER="30")
    started = caller("--yield-after", "0.5", "--", "pwd; echo $ONLY_HERE; sleep 1; echo later", env=env, cwd=place)
    answer = json.loads(started.stdout)
    assert (answer["status"], answer["output"]) == ("running", f"{place}\nyes\n"), answer
    polled = json.loads(caller("poll", answer["session_id"], "--wait", "10", env=env).stdout)
    assert (polled["status"], polled["output"]) == ("completed", f"{place}\nyes\nlater\n"), polled  # all of it, at the end


def spares_of(warm: int) -> list[int]:
    """The warm process's children in its own session: its spare, not a holder it collects."""
    own = read_stat(warm)
    return [pid for pid in children_of(warm) if own is not None and (info := read_stat(pid)) and info.session == own.session]


def described(pids: list[int]) -> list[str]:
    """What each process is and waits on, and what it has below it, for a failure to say why it
    stayed (one has stayed, rarely, under a whole suite's load)."""
    return [f"{pid} {_state(pid)} [{' | '.join(_proc_text(pid, name) for name in ('cmdline', 'wchan', 'syscall'))}]"
            f" children {described(children_of(pid))}" for pid in pids]


def _state(pid: int) -> str:
    info = read_stat(pid)
    return "gone" if info is None else info.state


def _proc_text(pid: int, name: str) -> str:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as file:
            return file.read(200).replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return "?"


def grandchildren(pid: int) -> list[int]:
    return [grandchild for child in children_of(pid) for grandchild in children_of(child)]


def spare_and_ahead(warm: int) -> tuple[int, int]:
    """Once the warm process has them: its spare child and the holder that spare forked ahead."""
    deadline = time.monotonic() + WAIT_S
    while not ((spares := spares_of(warm)) and len(spares) == 1 and children_of(spares[0])):
        assert time.monotonic() < deadline, "no spare with a holder forked ahead was made"
        time.sleep(0.02)
    [spare] = spares
    [ahead] = children_of(spare)
    return spare, ahead


def test_a_stopped_warm_process_collects_its_spare_and_the_holder_forked_ahead(caller: Caller) -> None:
    """Nothing is left for a PID 1 to collect (a container's may never): the spare and its holder
    forked ahead end with the warm process, and are collected, not left as zombies."""
    warm = caller.warmed()
    spare, ahead = spare_and_ahead(warm)
    caller.stop()  # returns once the warm process has ended
    left = [pid for pid in (spare, ahead) if Path(f"/proc/{pid}").exists()]
    assert left == [], "left for PID 1 to collect"


def block_sigterm() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])


def test_sigterm_ends_a_warm_process_whose_starter_blocked_it(caller: Caller) -> None:
    """A caller may run with SIGTERM blocked (a thread that leaves signals to another); the warm
    process it starts is no thread of its, and still ends on SIGTERM, its socket and lock removed."""
    warm = caller.warmed(preexec_fn=block_sigterm)
    os.kill(warm, signal.SIGTERM)
    assert gone(lambda: alive(warm) and not zombie(warm), within=10), "SIGTERM did not end the warm process"
    left = [path.name for path in caller.warm_dir.iterdir() if path.is_socket() or path.suffix == ".lock"]
    assert left == [], "its socket or its lock was left"


def test_sigterm_ends_a_spare_child_and_the_holder_forked_ahead(caller: Caller) -> None:
    """`ps` shows the spare and its holder forked ahead as `safe-run warm` too: SIGTERM, as sent to
    each by `pkill -f 'safe-run warm'`, ends either, and the warm process goes on forking calls."""
    warm = caller.warmed()
    spare, ahead = spare_and_ahead(warm)
    os.kill(ahead, signal.SIGTERM)
    assert gone(lambda: alive(ahead) and not zombie(ahead), within=10), "SIGTERM did not end the holder forked ahead"
    os.kill(spare, signal.SIGTERM)
    assert gone(lambda: alive(spare) and not zombie(spare), within=10), "SIGTERM did not end the spare"
    assert grandparent_of_the_shell(caller) == warm  # the next call is forked as it comes


PURE = Path("/usr/lib/node_modules/pure-prompt")


@pytest.mark.slow
def test_a_kept_shell_no_call_takes_is_hung_up_before_its_workers_are_ended(caller: Caller, tmp_path: Path) -> None:
    """Each call from another directory than the last finds the shell kept ahead not its own, and
    it is closed. Ended while that shell still lived, pure's worker was started again by its
    prompt, and the hang-up then cut the new one's first job short: its file stayed in TMPDIR."""
    if shutil.which("zsh") is None or not (PURE / "pure.zsh").exists():
        pytest.skip("zsh or npm's pure-prompt is not installed")
    (caller.home / ".zshrc").write_text(f"fpath+=({PURE})\nautoload -U promptinit; promptinit\nprompt pure\n")
    tmp, places = tmp_path / "tmp", [tmp_path / "here", tmp_path / "there"]
    for directory in (tmp, *places):
        directory.mkdir()
    env = caller.env(SHELL=shell_path("zsh"), TMPDIR=str(tmp), SAFE_RUN_YIELD_AFTER="30")  # a session's holder
    for call in range(5):
        assert caller("--format", "json", "--", "true", env=env, cwd=places[call % 2]).returncode == 0
        time.sleep(0.3)  # the next shell is kept ahead meanwhile, and its prompt's work done
    caller.stop()
    assert sorted(path.name for path in tmp.iterdir() if path.name.startswith("zsh-async")) == []

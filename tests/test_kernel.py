"""The kernel observer with real shells in real PTYs (its rules, on fixture strings: test_evidence).

The live tests type into `bash --norc --noprofile -i` and poll `observe()` until the expected state
shows up, for at most a few seconds, so a wrong answer fails instead of hanging.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pexpect
import pytest

from safe_run.core.evidence import Observation, ProcessInfo, parse_stat, parse_syscall
from safe_run.engine.kernel import KernelObserver, group_made_by

T = TypeVar("T")

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")


# --- live: real shells in real PTYs ------------------------------------------------------------


class Session:
    """A shell in a PTY, its observer, and the typing and waiting the tests need."""

    def __init__(self, child: pexpect.spawn, observer: KernelObserver) -> None:
        self.child = child
        self.observer = observer

    def type(self, line: str) -> None:
        self.child.send(line + "\r")

    def drain(self) -> None:
        try:
            while self.child.read_nonblocking(65536, timeout=0):
                pass
        except (pexpect.TIMEOUT, pexpect.EOF):
            pass

    def until(self, probe: Callable[[], T], accept: Callable[[T], bool], timeout: float = 5.0) -> T:
        deadline = time.monotonic() + timeout
        while True:
            self.drain()
            value = probe()
            if accept(value):
                return value
            if time.monotonic() >= deadline:
                pytest.fail(f"not seen within {timeout} s; last: {value!r}")
            time.sleep(0.02)

    def observe_until(self, accept: Callable[[Observation], bool], timeout: float = 5.0) -> Observation:
        seen = self.until(self.observer.observe, lambda o: o is not None and accept(o), timeout)
        assert seen is not None
        return seen

    def at_prompt(self) -> Observation:
        return self.observe_until(lambda o: o.shell_in_foreground and o.waiting_for_terminal and not o.canonical)

    def process(self, comm: str) -> ProcessInfo:
        return self.until(
            lambda: next((p for p in self.observer.session_processes() if p.comm == comm), None),
            lambda p: p is not None,
        )

    def kill_all(self) -> None:
        for proc in self.observer.session_processes():
            if proc.session != self.child.pid:
                continue  # never trust the code under test with signals to anything else
            try:
                os.kill(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        self._end_shell(timeout=10.0)
        self.child.close(force=True)

    def _end_shell(self, timeout: float) -> None:
        """Kill the shell and wait for it to be collected: on a loaded machine its end can take
        longer than the fraction of a second pexpect's `close` allows before it gives up."""
        try:
            os.kill(self.child.pid, signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            time.sleep(0.02)


def _spawn(argv: list[str], home: Path) -> Iterator[Session]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "TERM": "dumb", "PS1": "$ ",
           "LANG": "C.UTF-8"}
    child = pexpect.spawn(argv[0], argv[1:], env=env, cwd=str(home), encoding=None, dimensions=(24, 80))
    session = Session(child, KernelObserver(child.child_fd, child.pid))
    try:
        yield session
    finally:
        session.kill_all()


@pytest.fixture
def bash(tmp_path: Path) -> Iterator[Session]:
    if not sys.platform.startswith("linux"):
        pytest.skip("needs Linux /proc")
    yield from _spawn(["bash", "--norc", "--noprofile", "-i"], tmp_path)


def _text_of(path: str) -> str | None:
    try:
        return Path(path).read_text()
    except OSError:
        return None


def _syscall_of(pid: int) -> str | None:
    return _text_of(f"/proc/{pid}/syscall")


def _in_call(pid: int, names: set[str]) -> Callable[[str | None], bool]:
    def accept(text: str | None) -> bool:
        call = parse_syscall(text or "", os.uname().machine)
        return call is not None and call[0] in names

    return accept


def _state_of(pid: int) -> str:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text()).state
    except (OSError, ValueError):
        return "gone"


PYTHON = shlex.quote(sys.executable)


@linux_only
def test_observer_is_available_on_linux(bash: Session) -> None:
    assert bash.observer.available


@linux_only
def test_shell_at_its_prompt(bash: Session) -> None:
    seen = bash.at_prompt()
    assert seen.foreground_pgrp == bash.child.pid
    assert seen.foreground_command == "bash"


@linux_only
def test_a_sleeping_command_owns_the_terminal_but_does_not_wait(bash: Session) -> None:
    bash.at_prompt()
    bash.type("sleep 5")
    seen = bash.observe_until(lambda o: o.foreground_command == "sleep")
    assert not seen.shell_in_foreground
    assert not seen.waiting_for_terminal
    assert seen.canonical
    assert seen.foreground_pgrp not in (None, bash.child.pid)


@linux_only
def test_cat_waits_for_the_terminal(bash: Session) -> None:
    bash.at_prompt()
    bash.type("cat")
    seen = bash.observe_until(lambda o: o.foreground_command == "cat" and o.waiting_for_terminal)
    assert not seen.shell_in_foreground


@linux_only
def test_the_member_that_waits_for_a_key_is_the_one_named(bash: Session) -> None:
    """`timeout` leads the group and waits for its child; `cat` is what asks."""
    bash.at_prompt()
    bash.type("timeout 20 cat")
    seen = bash.observe_until(lambda o: o.waiting_for_terminal and not o.shell_in_foreground)
    assert seen.foreground_command == "cat"


@linux_only
def test_the_python_repl_waits_in_raw_mode(bash: Session) -> None:
    bash.at_prompt()
    bash.type(f"{PYTHON} -q")
    seen = bash.observe_until(
        lambda o: (o.foreground_command or "").startswith("python") and o.waiting_for_terminal
    )
    assert not seen.canonical
    assert not seen.shell_in_foreground


@linux_only
def test_the_read_builtin_waits_with_the_shell_in_front(bash: Session) -> None:
    bash.at_prompt()
    bash.type("read x")
    seen = bash.observe_until(lambda o: o.canonical and o.waiting_for_terminal)
    assert seen.shell_in_foreground


@linux_only
def test_a_worker_thread_reading_the_terminal_counts(bash: Session) -> None:
    bash.at_prompt()
    code = "import sys, threading; t = threading.Thread(target=sys.stdin.readline); t.start(); t.join()"
    bash.type(f"{PYTHON} -c {shlex.quote(code)}")
    seen = bash.observe_until(lambda o: (o.foreground_command or "").startswith("python") and o.waiting_for_terminal)
    assert seen.canonical
    main_thread = seen.foreground_pgrp
    assert main_thread is not None
    assert not _in_call(main_thread, {"read", "readv"})(_syscall_of(main_thread))


@linux_only
def test_a_server_polling_a_socket_does_not_wait(bash: Session) -> None:
    bash.at_prompt()
    code = "import select, socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); select.select([s], [], [])"
    bash.type(f"{PYTHON} -c {shlex.quote(code)}")
    seen = bash.observe_until(lambda o: (o.foreground_command or "").startswith("python"))
    pid = seen.foreground_pgrp
    assert pid is not None
    bash.until(lambda: _syscall_of(pid), _in_call(pid, {"select", "pselect6", "poll", "ppoll"}))
    seen = bash.observer.observe()
    assert seen is not None and seen.canonical and not seen.waiting_for_terminal


@linux_only
def test_reading_a_pipe_does_not_wait(bash: Session) -> None:
    bash.at_prompt()
    bash.type("sleep 30 | cat")
    cat = bash.process("cat")
    bash.until(lambda: _syscall_of(cat.pid), _in_call(cat.pid, {"read"}))
    # Until it has exec'd, the leader is a fork of the shell and its comm is still "bash".
    seen = bash.observe_until(lambda o: o.foreground_command == "sleep")
    assert _in_call(cat.pid, {"read"})(_syscall_of(cat.pid))
    assert not seen.waiting_for_terminal


# Waits forever on a pipe nobody writes: it waits on the others, never for a key.
IDLE_LEADER = f"{PYTHON} -c 'import os; r, w = os.pipe(); os.read(r, 1)'"


@pytest.mark.slow
@linux_only
def test_a_member_other_than_the_leader_waits(bash: Session) -> None:
    """The group waits for a key while its leader idles; the member that reads is the one named."""
    bash.at_prompt()
    bash.type(f"{IDLE_LEADER} | cat /dev/tty")
    seen = bash.observe_until(lambda o: o.waiting_for_terminal and o.foreground_command == "cat")
    assert not seen.shell_in_foreground


@linux_only
def test_a_reader_is_not_waiting_while_another_member_works(bash: Session) -> None:
    """`sleep` goes on by itself: until it ends, the pipeline is not stuck on the keyboard."""
    bash.at_prompt()
    bash.type("sleep 30 | cat /dev/tty")
    bash.observe_until(lambda o: o.foreground_command == "sleep")
    cat = bash.process("cat")
    bash.until(lambda: _syscall_of(cat.pid), _in_call(cat.pid, {"read"}))
    seen = bash.observer.observe()
    assert seen is not None and not seen.waiting_for_terminal


@linux_only
@pytest.mark.slow
def test_the_group_outlives_its_leader(bash: Session) -> None:
    bash.at_prompt()
    bash.type("true | cat /dev/tty")
    seen = bash.observe_until(lambda o: o.foreground_command == "cat")
    assert seen.foreground_pgrp is not None
    assert _state_of(seen.foreground_pgrp) in ("Z", "gone")  # the leader, `true`, has ended
    bash.observe_until(lambda o: o.foreground_command == "cat" and o.waiting_for_terminal)


@linux_only
def test_a_group_whose_leader_is_gone_is_its_makers_while_its_child_is_in_it(bash: Session) -> None:
    """A pipeline in a prompt hook holds the terminal after its first program is done: the group
    is the shell's, told by the member that is the shell's child."""
    bash.at_prompt()
    bash.type("true | cat /dev/tty")
    seen = bash.observe_until(lambda o: o.foreground_command == "cat" and o.waiting_for_terminal)
    front = seen.foreground_pgrp
    assert front is not None and _state_of(front) == "gone"
    assert group_made_by(bash.child.pid, front) is True
    assert group_made_by(os.getpid(), front) is None


@linux_only
def test_a_group_left_by_a_subshell_cannot_be_told(bash: Session, tmp_path: Path) -> None:
    """autojump's hook, `(autojump --add . &)`: the subshell that led the group is gone and its job
    is nobody's child now; whose the group is, /proc cannot tell."""
    told = tmp_path / "pid"
    bash.at_prompt()
    bash.type(f"(sleep 30 & echo $! > {told})")
    job = bash.until(lambda: _text_of(str(told)), lambda text: bool(text and text.endswith("\n")))
    group = bash.process("sleep").pgrp
    assert bash.process("sleep").pid == int(job or "0")
    bash.until(lambda: _state_of(group), lambda state: state == "gone")
    assert group_made_by(bash.child.pid, group) is None
    assert group_made_by(bash.child.pid, bash.child.pid) is False  # its leader lives: its parent tells


@linux_only
@pytest.mark.slow
def test_a_member_that_appears_later_is_found(bash: Session) -> None:
    bash.at_prompt()
    bash.type(f"{IDLE_LEADER} | (sleep 0.3; cat /dev/tty; true)")
    bash.observe_until(lambda o: (o.foreground_command or "").startswith("python"))
    bash.observe_until(lambda o: o.waiting_for_terminal and not o.shell_in_foreground)


@pytest.mark.slow
@linux_only
def test_pager_reading_dev_tty_waits(bash: Session) -> None:
    if shutil.which("less") is None:
        pytest.skip("less is not installed")
    bash.at_prompt()
    bash.type("echo hi | less")
    seen = bash.observe_until(lambda o: o.foreground_command == "less" and o.waiting_for_terminal)
    assert not seen.shell_in_foreground


@linux_only
def test_background_jobs_are_session_processes(bash: Session) -> None:
    bash.at_prompt()
    bash.type("sleep 30 &")
    sleep = bash.process("sleep")
    assert sleep.session == bash.child.pid
    assert sleep.pgrp != bash.child.pid
    assert sleep.state != "Z"
    assert bash.child.pid not in [p.pid for p in bash.observer.session_processes()]
    assert os.getpid() not in [p.pid for p in bash.observer.session_processes()]


@linux_only
def test_observe_is_none_once_the_shell_is_gone(bash: Session) -> None:
    bash.at_prompt()
    bash.type("exit")
    bash.until(bash.observer.observe, lambda o: o is None)
    bash.child.expect(pexpect.EOF, timeout=5)
    bash.child.close()
    assert bash.observer.observe() is None


def test_a_bad_descriptor_is_not_available() -> None:
    read_end, write_end = os.pipe()
    try:
        observer = KernelObserver(read_end, os.getpid())
        assert not observer.available
        assert observer.observe() is None
    finally:
        os.close(read_end)
        os.close(write_end)


PROMPT_SHELLS = {
    "zsh": ["zsh", "-f", "-i"],
    "fish": ["fish", "--no-config", "-i"],
    "dash": ["dash", "-i"],
}


@linux_only
@pytest.mark.parametrize("name", sorted(PROMPT_SHELLS))
def test_other_shells_wait_at_their_prompt(name: str, tmp_path: Path) -> None:
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    for session in _spawn(PROMPT_SHELLS[name], tmp_path):
        seen = session.observe_until(lambda o: o.shell_in_foreground and o.waiting_for_terminal, timeout=10)
        assert seen.foreground_command == name


def _calls(pid: int) -> tuple[str | None, list[str]]:
    """The system call numbers its main thread and its other threads are asleep in (None: running)."""
    main, others = None, []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            number = (task / "syscall").read_text().split()[0]
        except (OSError, IndexError):
            continue
        if task.name == str(pid):
            main = None if number == "running" else number
        elif number != "running":
            others.append(number)
    return main, others


def _fish_at_prompt_with_a_helper_polling(pid: int) -> bool:
    main, others = _calls(pid)
    waiting_calls = ("0", "7", "23", "270", "271")  # read, poll, select, pselect6, ppoll
    return main in waiting_calls and any(number in ("7", "271") for number in others)


@linux_only
def test_fish_at_its_prompt_waits_whatever_its_helper_threads_do(tmp_path: Path) -> None:
    """fish polls with a timeout from a helper thread for a quarter second after each prompt: the
    shell is at its prompt all the same (its main thread reads the terminal), or every fish run
    would wait that long at its end."""
    if shutil.which("fish") is None or os.uname().machine != "x86_64":
        pytest.skip("fish on x86_64 is needed")
    for session in _spawn(PROMPT_SHELLS["fish"], tmp_path):
        for _ in range(20):
            session.type("")
            deadline = time.monotonic() + 1
            while not _fish_at_prompt_with_a_helper_polling(session.child.pid) and time.monotonic() < deadline:
                time.sleep(0.002)
            before = _fish_at_prompt_with_a_helper_polling(session.child.pid)
            seen = session.observer.observe()
            if before and _fish_at_prompt_with_a_helper_polling(session.child.pid):
                assert seen is not None and seen.shell_in_foreground and seen.waiting_for_terminal, (seen, _calls(session.child.pid))
                return
        pytest.skip("no helper thread of fish was seen in a timed poll")


@linux_only
def test_a_relay_is_judged_by_its_inner_terminal(bash: Session) -> None:
    if shutil.which("script") is None:
        pytest.skip("script is not installed")
    bash.at_prompt()
    bash.type("script -qc 'sleep 30' /dev/null")
    sleep = bash.until(
        lambda: next((p for p in bash.observer.run_processes() if p.comm == "sleep"), None), lambda p: p is not None
    )
    assert sleep is not None and sleep.session != bash.child.pid, "inside the relay's own session"
    bash.until(lambda: _syscall_of(sleep.pid), _in_call(sleep.pid, {"nanosleep", "clock_nanosleep"}))
    seen = bash.observer.observe()
    assert seen is not None and seen.foreground_command == "script" and not seen.waiting_for_terminal


@linux_only
def test_a_relay_whose_inner_program_reads_is_waiting(bash: Session) -> None:
    if shutil.which("script") is None:
        pytest.skip("script is not installed")
    bash.at_prompt()
    bash.type("script -qc 'cat' /dev/null")
    bash.observe_until(lambda o: o.foreground_command == "script" and o.waiting_for_terminal)


@linux_only
def test_a_timed_keyboard_poll_carries_its_timeout(bash: Session) -> None:
    bash.at_prompt()
    bash.type(f"{PYTHON} -c 'import select, tty; tty.setcbreak(0); select.select([0], [], [], 30.0)'")
    seen = bash.observe_until(lambda o: o.waiting_for_terminal and not o.shell_in_foreground)
    assert seen.wake_in is not None and 29 < seen.wake_in <= 30


@linux_only
def test_a_keyboard_poll_with_a_socket_is_not_waiting(bash: Session) -> None:
    bash.at_prompt()
    bash.type(f"{PYTHON} -c 'import select, socket, tty; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); "
              "s.listen(); tty.setcbreak(0); select.select([0, s], [], [])'")
    python = bash.until(
        lambda: next((p for p in bash.observer.session_processes() if p.comm.startswith("python")), None),
        lambda p: p is not None,
    )
    assert python is not None
    bash.until(lambda: _syscall_of(python.pid), _in_call(python.pid, {"select", "pselect6"}))
    seen = bash.observer.observe()
    assert seen is not None and not seen.canonical and not seen.waiting_for_terminal


@linux_only
def test_a_stopped_shell_is_seen(bash: Session) -> None:
    bash.at_prompt()
    bash.type("kill -STOP $$")
    seen = bash.observe_until(lambda o: o.stopped is not None)
    assert seen.stopped == "bash"
    os.kill(bash.child.pid, signal.SIGCONT)


@linux_only
def test_an_empty_environment_read_is_asked_again(bash: Session) -> None:
    """A process in the middle of an exec shows an empty /proc/PID/environ for a moment (seen
    hundreds of times in a loop of 300 execs). Remembered as "not the run's", a process the
    command detached (`setsid sleep 30 &`) escaped the sweep; the next look must ask again."""
    answers = iter([b"", b"A=1\0SAFE_RUN_RUN=m1\0"])
    observer = KernelObserver(bash.child.child_fd, bash.child.pid, marker="m1", read=lambda path, limit: next(answers))
    detached = ProcessInfo(pid=bash.child.pid, ppid=1, pgrp=bash.child.pid, session=bash.child.pid,
                           state="S", comm="sleep", start=1, cpu=0)
    assert not observer._is_marked(detached)  # mid-exec: nothing to tell yet
    assert observer._is_marked(detached)


@linux_only
def test_a_look_at_what_is_new_reads_only_what_the_last_look_did_not_list(bash: Session) -> None:
    bash.at_prompt()
    bash.type("sleep 30 &")
    bash.until(lambda: _in_session_as(bash.child.pid, "sleep"), lambda found: found)
    assert [p.comm for p in bash.observer.run_processes()] == ["sleep"]
    assert bash.observer.run_processes(new_only=True) == []  # listed last time: not read again
    bash.type("cat &")
    bash.until(lambda: _in_session_as(bash.child.pid, "cat"), lambda found: found)
    assert [p.comm for p in bash.observer.run_processes(new_only=True)] == ["cat"]
    assert sorted(p.comm for p in bash.observer.run_processes()) == ["cat", "sleep"]


def _in_session_as(session: int, comm: str) -> bool:
    """Whether a process of that name runs in the session (read apart from the observer's looks)."""
    for name in os.listdir("/proc"):
        stat = _text_of(f"/proc/{name}/stat") if name.isdigit() else None
        if stat is not None:
            info = parse_stat(stat)
            if info.session == session and info.comm == comm:
                return True
    return False


def test_a_process_is_named_by_what_it_runs_now_or_ran_when_it_ended() -> None:
    """A subshell listed as `bash` that has become `sleep` is reported as `sleep`, also once it
    has ended and waits to be collected; a pid given to another process keeps the name seen."""
    child = subprocess.Popen(["sleep", "30"])
    try:
        seen = parse_stat(Path(f"/proc/{child.pid}/stat").read_text())
        read_end, write_end = os.pipe()
        try:
            observer = KernelObserver(read_end, os.getpid())
            listed_as_bash = ProcessInfo(child.pid, "bash", "S", seen.pgrp, seen.session, start=seen.start)
            assert observer.name_now(listed_as_bash) == "sleep"
            child.kill()
            deadline = time.monotonic() + 5
            while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
                assert time.monotonic() < deadline
                time.sleep(0.01)
            assert observer.name_now(listed_as_bash) == "sleep", "an ended process keeps its name"
            another = ProcessInfo(child.pid, "bash", "S", seen.pgrp, seen.session, start=seen.start + 1)
            assert observer.name_now(another) == "bash"
        finally:
            os.close(read_end)
            os.close(write_end)
    finally:
        child.kill()
        child.wait()


def test_the_umask_is_read_without_being_set() -> None:
    from safe_run.engine.kernel import current_umask

    old = os.umask(0o037)
    try:
        assert current_umask() == 0o037
        assert os.umask(0o037) == 0o037  # left as it was
    finally:
        os.umask(old)


# Waits on its terminal for a second, then works without a word: the same process, in front throughout.
READS_THEN_WORKS = """
import os, signal
def give_up(*_):
    raise TimeoutError
signal.signal(signal.SIGALRM, give_up)
signal.alarm(1)
try:
    os.read(0, 1)
except TimeoutError:
    pass
while True:
    pass
"""


@pytest.mark.parametrize("program", ["python", "sleep"])
def test_a_settled_look_sees_a_held_wait_end(bash: Session, tmp_path: Path, program: str) -> None:
    """Looks at a held input wait keep the last scan of /proc while the same group is in front;
    they still see the wait end, whether the program goes on at work or another comes in front."""
    script = tmp_path / "reads_then_works.py"
    script.write_text(READS_THEN_WORKS)
    bash.at_prompt()
    bash.type(f"{sys.executable} {script}" if program == "python" else "timeout --foreground 1 cat; sleep 30")
    bash.observe_until(lambda o: not o.shell_in_foreground and o.waiting_for_terminal)
    bash.until(lambda: bash.observer.observe(settled=True),
               lambda o: o is not None and not o.waiting_for_terminal and (o.foreground_command or "").startswith(program))

"""The kernel observer: its parsing and rules on fixture strings, then real shells in real PTYs.

The live tests type into `bash --norc --noprofile -i` and poll `observe()` until the expected state
shows up, for at most a few seconds, so a wrong answer fails instead of hanging.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pexpect
import pytest

from safe_run.kernel import (
    SYSCALL_TABLES,
    KernelObserver,
    Observation,
    ProcessInfo,
    TaskWait,
    Verdict,
    Wait,
    classify_call,
    descendants,
    fd_kind,
    has_marker,
    is_terminal,
    judge,
    parse_epoll_targets,
    parse_stat,
    parse_syscall,
    parse_tty_index,
    run_members,
    session_members,
)

TTY = "/dev/pts/7"
T = TypeVar("T")

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")


# --- parsing -------------------------------------------------------------------------------------


def test_parse_stat_takes_comm_up_to_the_last_parenthesis() -> None:
    text = "4242 (my ) (odd) prog) S 1 4240 4200 34823 4240 4194560 96 0 0 0 7 5 0 0 20 0 1 0 123456\n"
    assert parse_stat(text) == ProcessInfo(
        pid=4242, comm="my ) (odd) prog", state="S", pgrp=4240, session=4200, ppid=1, cpu=12, start=123456
    )


def test_parse_stat_reads_a_zombie() -> None:
    info = parse_stat("17 (sleep) Z 1 17 9 0 -1 4227148 0 0 0 0 0 0 0 0 20 0 1 0")
    assert (info.state, info.pgrp, info.session) == ("Z", 17, 9)


@pytest.mark.parametrize("text", ["", "running", "12 (cut", "12 (short) S 1"])
def test_parse_stat_refuses_what_is_not_a_stat_line(text: str) -> None:
    with pytest.raises(ValueError):
        parse_stat(text)


X86_READ = "0 0x0 0x55f4261c5f40 0x1000 0x0 0x0 0x0 0x7ffd67dc0fd8 0x7f3a1c2e5992\n"
X86_PSELECT = "270 0x1 0x7ffd67dc0ff0 0x0 0x0 0x0 0x7ffd67dc0f70 0x7ffd67dc0f58 0x7f3a1c2e8f6d\n"
ARM_READ = "63 0x3 0xffffe1c0 0x1 0x0 0x0 0x0 0xffffd000 0xffff8a2b1c4c\n"
ARM_PSELECT = "72 0x1 0xffffe2a0 0x0 0x0 0x0 0xffffe220 0xffffd100 0xffff8a2b3f10\n"


@pytest.mark.parametrize(
    ("text", "arch", "expected"),
    [
        ("running\n", "x86_64", None),
        ("running\n", "aarch64", None),
        (X86_READ, "x86_64", ("read", (0, 0x55F4261C5F40, 0x1000, 0, 0, 0))),
        (X86_PSELECT, "x86_64", ("pselect6", (1, 0x7FFD67DC0FF0, 0, 0, 0, 0x7FFD67DC0F70))),
        (ARM_READ, "aarch64", ("read", (3, 0xFFFFE1C0, 1, 0, 0, 0))),
        (ARM_PSELECT, "aarch64", ("pselect6", (1, 0xFFFFE2A0, 0, 0, 0, 0xFFFFE220))),
        (X86_READ, "aarch64", None),  # 0 is io_setup there, not a call we know
        (ARM_READ, "x86_64", None),  # 63 is uname on x86_64
        ("-1 0x7ffd67dc0fd8 0x7f3a1c2e5992\n", "x86_64", None),  # stopped outside a call
        (X86_READ, "sparc64", None),
        ("zz 0x0 0x0 0x0 0x0 0x0 0x0 0x0 0x0", "x86_64", None),
    ],
)
def test_parse_syscall(text: str, arch: str, expected: object) -> None:
    assert parse_syscall(text, arch) == expected


def _header_numbers(path: Path) -> dict[str, int]:
    found = re.findall(r"^#define __NR_(\w+)\s+(\d+)\s*$", path.read_text(), flags=re.MULTILINE)
    return {name: int(number) for name, number in found}


@pytest.mark.parametrize(
    ("arch", "header"),
    [
        ("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        ("aarch64", "/usr/include/asm-generic/unistd.h"),
    ],
)
def test_syscall_numbers_match_the_kernel_headers(arch: str, header: str) -> None:
    path = Path(header)
    if not path.exists():
        pytest.skip(f"{header} is not installed")
    numbers = _header_numbers(path)
    table = SYSCALL_TABLES[arch]
    assert {name: numbers.get(name) for name in table.values()} == {name: nr for nr, name in table.items()}


def test_parse_tty_index() -> None:
    fdinfo = "pos:\t0\nflags:\t02100002\nmnt_id:\t24\nino:\t91\ntty-index:\t7\n"
    assert parse_tty_index(fdinfo) == 7
    assert parse_tty_index("pos:\t0\nflags:\t02\n") is None


def test_session_members_keeps_the_live_processes_of_the_session() -> None:
    processes = [
        ProcessInfo(pid=300, comm="sleep", state="S", pgrp=300, session=100),
        ProcessInfo(pid=100, comm="bash", state="S", pgrp=100, session=100),
        ProcessInfo(pid=200, comm="make", state="R", pgrp=200, session=100),
        ProcessInfo(pid=201, comm="cc", state="Z", pgrp=200, session=100),
        ProcessInfo(pid=400, comm="sshd", state="S", pgrp=400, session=400),
    ]
    found = session_members(processes, 100, excluded={100})
    assert [p.pid for p in found] == [200, 300]


# --- the rules ---------------------------------------------------------------------------------


def call(name: str, *args: int) -> tuple[str, tuple[int, ...]]:
    return (name, (*args, *(0,) * (6 - len(args))))


def test_is_terminal() -> None:
    assert is_terminal(TTY, TTY)
    assert is_terminal("/dev/tty", TTY)
    assert not is_terminal("/dev/pts/8", TTY)
    assert not is_terminal("pipe:[4711]", TTY)
    assert not is_terminal(None, TTY)


@pytest.mark.parametrize(
    ("target", "kind"),
    [
        (TTY, "terminal"), ("/dev/tty", "terminal"), ("/dev/ptmx", "terminal"), ("/dev/pts/8", "terminal"),
        ("pipe:[4711]", "relative"), ("anon_inode:[eventfd]", "relative"), ("socket:[99]", "outside"),
        ("/home/u/file", "outside"), ("anon_inode:[timerfd]", "timer"), (None, "gone"),
    ],
)
def test_fd_kind(target: str | None, kind: str) -> None:
    """Any terminal counts, either side: a relay's inner pty is judged like ours."""
    assert fd_kind(target) == kind


def test_read_on_a_terminal_waits_for_a_key() -> None:
    assert classify_call(call("read", 0, 1, 2), [TTY], None, True, TTY) == TaskWait(Wait.TERMINAL)
    assert classify_call(call("read", 3, 1, 1), ["/dev/tty"], None, True, "pipe:[1]").kind is Wait.TERMINAL


@pytest.mark.parametrize(("target", "kind"), [("pipe:[4711]", Wait.RELATIVE), ("socket:[99]", Wait.EXTERNAL),
                                              ("/home/u/file", Wait.EXTERNAL), (None, Wait.EXTERNAL)])
def test_read_on_anything_else_is_not_a_key(target: str | None, kind: Wait) -> None:
    assert classify_call(call("read", 0, 1, 2), [target], None, False, TTY).kind is kind


def test_a_poll_on_the_terminal_alone_waits_for_a_key_with_its_timeout() -> None:
    """vi polls the keyboard with a 4 s timeout: a key wait that also goes on by itself later."""
    assert classify_call(call("pselect6", 1), [TTY], None, False, TTY) == TaskWait(Wait.TERMINAL)
    assert classify_call(call("pselect6", 1), [TTY], 4.0, False, TTY) == TaskWait(Wait.TERMINAL, 4.0)


def test_a_poll_on_the_terminal_and_the_others_still_waits_for_a_key() -> None:
    """node's REPL: the terminal, its own eventfd and a pipe."""
    targets = [TTY, "anon_inode:[eventfd]", "pipe:[5]"]
    assert classify_call(call("epoll_pwait", 13), targets, 8.0, False, TTY) == TaskWait(Wait.TERMINAL, 8.0)


def test_a_relay_polls_our_terminal_and_its_pty_master() -> None:
    assert classify_call(call("poll", 0, 2), [TTY, "/dev/ptmx"], None, False, TTY).kind is Wait.TERMINAL


def test_a_dev_server_listening_to_the_keyboard_and_a_socket_is_not_waiting() -> None:
    targets = [TTY, "socket:[77]", "anon_inode:[eventfd]"]
    assert classify_call(call("epoll_pwait", 13), targets, None, False, TTY).kind is Wait.EXTERNAL
    assert classify_call(call("epoll_pwait", 13), targets, 0.5, False, TTY).kind is Wait.TIMED


@pytest.mark.parametrize("name", ["poll", "select", "pselect6", "ppoll", "epoll_wait", "epoll_pwait", "epoll_pwait2"])
def test_without_the_descriptor_set_a_poll_waits_only_when_the_terminal_is_raw_on_stdin(name: str) -> None:
    assert classify_call(call(name, 3), None, None, False, TTY).kind is Wait.TERMINAL
    assert classify_call(call(name, 3), None, None, True, TTY).kind is Wait.EXTERNAL  # a server, cooked terminal
    assert classify_call(call(name, 3), None, None, False, "/dev/null").kind is Wait.EXTERNAL
    assert classify_call(call(name, 3), None, 1.0, True, TTY).kind is Wait.TIMED


@pytest.mark.parametrize(
    ("syscall", "kind"),
    [
        (call("nanosleep"), Wait.TIMED), (call("clock_nanosleep"), Wait.TIMED),
        (call("wait4", 2**32 - 1), Wait.RELATIVE), (call("futex"), Wait.RELATIVE), (call("pause"), Wait.RELATIVE),
        (call("rt_sigtimedwait", 1, 2, 0), Wait.RELATIVE), (call("rt_sigtimedwait", 1, 2, 3), Wait.TIMED),
        (None, Wait.EXTERNAL),
    ],
)
def test_other_calls(syscall: tuple[str, tuple[int, ...]] | None, kind: Wait) -> None:
    assert classify_call(syscall, None, None, False, TTY).kind is kind


KEY = TaskWait(Wait.TERMINAL)
CHILD = TaskWait(Wait.RELATIVE)


@pytest.mark.parametrize(
    ("waits", "elsewhere", "verdict"),
    [
        ([KEY], False, Verdict.INPUT),
        ([CHILD, KEY], False, Verdict.INPUT),  # a thread joins the reader; a shell waits for the job
        ([KEY, TaskWait(Wait.RUNNING)], False, Verdict.WORKING),  # the main thread works, a thread listens
        ([KEY, TaskWait(Wait.TIMED)], False, Verdict.WORKING),  # a relay while `sleep` runs inside
        ([KEY, TaskWait(Wait.EXTERNAL)], False, Verdict.WORKING),  # a socket may wake it any moment
        ([CHILD], False, Verdict.WORKING),  # nobody waits for a key
        ([], False, Verdict.WORKING),
        ([KEY, TaskWait(Wait.STOPPED)], False, Verdict.STOPPED),
        ([KEY, TaskWait(Wait.HIDDEN)], False, Verdict.HIDDEN),
        ([TaskWait(Wait.HIDDEN), TaskWait(Wait.RUNNING)], False, Verdict.WORKING),
        ([TaskWait(Wait.EXTERNAL)], True, Verdict.INPUT),  # gpg on its agent's socket, pinentry on the terminal
        ([TaskWait(Wait.RUNNING)], True, Verdict.WORKING),
    ],
)
def test_judge(waits: list[TaskWait], elsewhere: bool, verdict: Verdict) -> None:
    assert judge(waits, elsewhere)[0] is verdict


def test_judge_gives_the_longest_keyboard_timeout() -> None:
    assert judge([TaskWait(Wait.TERMINAL, 1.0), TaskWait(Wait.TERMINAL, 4.0), KEY]) == (Verdict.INPUT, 4.0)


def test_descendants_cross_sessions() -> None:
    processes = [
        ProcessInfo(pid=10, comm="script", state="S", pgrp=10, session=1, ppid=1),
        ProcessInfo(pid=11, comm="bash", state="S", pgrp=11, session=11, ppid=10),
        ProcessInfo(pid=12, comm="sleep", state="S", pgrp=12, session=11, ppid=11),
        ProcessInfo(pid=20, comm="other", state="S", pgrp=20, session=1, ppid=1),
    ]
    assert descendants(processes, {10}) == {10, 11, 12}


def test_run_members_finds_what_left_the_session() -> None:
    shell = ProcessInfo(pid=100, comm="bash", state="S", pgrp=100, session=100, ppid=50, start=1000)
    processes = [
        shell,
        ProcessInfo(pid=101, comm="sleep", state="S", pgrp=101, session=100, ppid=100, start=1001),
        ProcessInfo(pid=102, comm="setsid-child", state="S", pgrp=102, session=102, ppid=100, start=1002),
        ProcessInfo(pid=103, comm="gpg-agent", state="S", pgrp=103, session=103, ppid=1, start=1003),
        ProcessInfo(pid=104, comm="old-daemon", state="S", pgrp=104, session=104, ppid=1, start=900),
        ProcessInfo(pid=105, comm="unrelated", state="S", pgrp=105, session=105, ppid=1, start=1004),
    ]
    marked = {103, 104}
    found = run_members(processes, shell, {100}, lambda p: p.pid in marked)
    assert [p.pid for p in found] == [101, 102, 103]  # 104 is older than the shell: not the run's


def test_has_marker() -> None:
    environ = b"PATH=/bin\0SAFE_RUN_RUN=abc\0HOME=/root\0"
    assert has_marker(environ, "abc")
    assert not has_marker(environ, "ab")


def test_parse_epoll_targets() -> None:
    fdinfo = "pos:\t0\nflags:\t02\ntfd:       20 events:       19 data: 14\ntfd:  16 events: 19 data: 10\n"
    assert parse_epoll_targets(fdinfo) == [20, 16]


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
        self.child.close(force=True)


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


def _syscall_of(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/syscall").read_text()
    except OSError:
        return None


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
    bash.at_prompt()
    bash.type(f"{IDLE_LEADER} | cat /dev/tty")
    seen = bash.observe_until(lambda o: o.waiting_for_terminal and (o.foreground_command or "").startswith("python"))
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
def test_an_empty_environment_read_is_asked_again(bash: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process in the middle of an exec shows an empty /proc/PID/environ for a moment (seen
    hundreds of times in a loop of 300 execs). Remembered as "not the run's", a process the
    command detached (`setsid sleep 30 &`) escaped the sweep; the next look must ask again."""
    import safe_run.kernel as kernel

    observer = KernelObserver(bash.child.child_fd, bash.child.pid, marker="m1")
    detached = ProcessInfo(pid=bash.child.pid, ppid=1, pgrp=bash.child.pid, session=bash.child.pid,
                           state="S", comm="sleep", start=1, cpu=0)
    answers = iter([b"", b"A=1\0SAFE_RUN_RUN=m1\0"])
    monkeypatch.setattr(kernel, "_read_bytes", lambda path, limit: next(answers))
    assert not observer._is_marked(detached)  # mid-exec: nothing to tell yet
    assert observer._is_marked(detached)

"""The evidence and its rules, on fixture strings: /proc text parsers, what each call waits on,
the input-wait judgement and run membership. No process is started."""

from __future__ import annotations

import re
import signal
from dataclasses import replace
from pathlib import Path

import pytest

from safe_run.core.evidence import (
    PF_FORKNOEXEC, SYSCALL_TABLES, PidCounters, ProcessInfo, TaskWait, Verdict, Wait, classify_call, descendants, fd_kind,
    ending, has_marker, is_terminal, judge, Owner, made_since, owners, parse_epoll_targets, parse_stat, task_count,
    parse_syscall, parse_tty_index, run_members, session_members, shell_at_work,
)

TTY = "/dev/pts/7"


# --- parsing -------------------------------------------------------------------------------------


def test_parse_stat_takes_comm_up_to_the_last_parenthesis() -> None:
    text = "4242 (my ) (odd) prog) S 1 4240 4200 34823 4240 4194560 96 0 0 0 7 5 0 0 20 0 1 0 123456\n"
    assert parse_stat(text) == ProcessInfo(
        pid=4242, comm="my ) (odd) prog", state="S", pgrp=4240, session=4200, ppid=1, cpu=12, start=123456,
        tty=34823, flags=4194560,
    )


def test_parse_stat_reads_a_zombie() -> None:
    info = parse_stat("17 (sleep) Z 1 17 9 0 -1 4227148 0 0 0 0 0 0 0 0 20 0 1 0")
    assert (info.state, info.pgrp, info.session) == ("Z", 17, 9)


def test_parse_stat_tells_a_task_on_its_way_out() -> None:
    assert parse_stat("17 (sleep) R 1 17 9 0 -1 4194564 0 0 0 0 0 0 0 0 20 0 1 0").exiting
    assert not parse_stat("17 (sleep) R 1 17 9 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0").exiting


def status(pending: int = 0, shared: int = 0, blocked: int = 0, ignored: int = 0, caught: int = 0) -> str:
    """/proc/PID/status's signal lines (the rest of the file does not matter here)."""
    return (
        f"Name:\tsleep\nState:\tR (running)\nSigQ:\t1/63432\nSigPnd:\t{pending:016x}\n"
        f"ShdPnd:\t{shared:016x}\nSigBlk:\t{blocked:016x}\nSigIgn:\t{ignored:016x}\nSigCgt:\t{caught:016x}\n"
    )


def bit(signum: int) -> int:
    return 1 << (signum - 1)


@pytest.mark.parametrize(("text", "expected"), [
    (status(), False),
    (status(shared=bit(signal.SIGTERM)), True),  # `kill %1`: sent, not yet acted on
    (status(pending=bit(signal.SIGKILL)), True),
    (status(shared=bit(signal.SIGHUP) | bit(signal.SIGCHLD)), True),
    (status(shared=bit(signal.SIGTERM), caught=bit(signal.SIGTERM)), False),  # its handler decides
    (status(shared=bit(signal.SIGTERM), ignored=bit(signal.SIGTERM)), False),
    (status(shared=bit(signal.SIGTERM), blocked=bit(signal.SIGTERM)), False),
    (status(shared=bit(signal.SIGCHLD) | bit(signal.SIGWINCH) | bit(signal.SIGCONT)), False),
    (status(shared=bit(signal.SIGTSTP)), False),  # stops it, does not end it
    (status(shared=bit(signal.SIGRTMIN)), True),
    ("Name:\tsleep\n", False),
])
def test_a_task_is_ending_when_a_signal_that_ends_it_is_on_its_way(text: str, expected: bool) -> None:
    assert ending(text) is expected


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


# --- whose a process is --------------------------------------------------------------------------

SHELL_PID, STARTED, ENDED, SUBREAPER = 100, 200, 300, 50


def process(pid: int, ppid: int, pgrp: int | None = None, session: int = SHELL_PID, comm: str = "p") -> ProcessInfo:
    return ProcessInfo(pid=pid, comm=comm, state="S", pgrp=pgrp or pid, session=session, ppid=ppid)


def test_each_process_is_its_makers_by_the_command_start_and_the_line_end() -> None:
    processes = [
        process(150, SHELL_PID, comm="gpg-agent"),  # the rc files', before the command
        process(160, SHELL_PID, session=160, comm="zsh-async worker"),
        process(210, SHELL_PID, comm="sleep job"),  # the command's job
        process(220, 160, pgrp=160, session=160, comm="git for the prompt"),  # the worker's, meanwhile
        process(310, 210, pgrp=210, comm="the job's child, after the end"),
        process(320, SHELL_PID, comm="a prompt hook"),
        process(330, 320, pgrp=320, comm="its child"),
    ]
    whose = owners(processes, SHELL_PID, [(STARTED, ENDED)], 32768)
    assert whose == {150: Owner.SHELL, 160: Owner.SHELL, 210: Owner.COMMAND, 220: Owner.SHELL,
                     310: Owner.COMMAND, 320: Owner.PROMPT, 330: Owner.PROMPT}


def test_an_orphan_is_told_by_its_process_group() -> None:
    """Re-parented to the subreaper: `(autojump --add &)` of a hook, a worker's job whose subshell
    exited, a job the command left in the shell's own group with job control off, a daemon."""
    processes = [
        process(340, SUBREAPER, pgrp=335, comm="autojump"),
        process(250, SUBREAPER, pgrp=160, session=160, comm="find for the prompt"),
        process(260, SUBREAPER, pgrp=SHELL_PID, comm="sleep left with set +m"),
        process(270, SUBREAPER, session=270, comm="a daemon of the command"),
        process(350, SUBREAPER, pgrp=210, comm="a job's child, after the end"),
    ]
    whose = owners(processes, SHELL_PID, [(STARTED, ENDED)], 32768)
    assert whose == {340: Owner.PROMPT, 250: Owner.SHELL, 260: Owner.COMMAND, 270: Owner.COMMAND,
                     350: Owner.COMMAND}


def test_without_the_lines_end_the_shells_children_after_the_start_are_the_commands() -> None:
    """A stopped command has no line end: what its shell made since the start is reported as before."""
    whose = owners([process(320, SHELL_PID)], SHELL_PID, [(STARTED, None)], 32768)
    assert whose == {320: Owner.COMMAND}


def test_in_a_shell_of_many_commands_what_it_made_between_them_is_its_own() -> None:
    """A named shell: pure restarts its worker at a prompt between two commands, and a server the
    first command started runs on; at the shell's close the worker is the shell's own, as if its
    start-up had made it, and only the server and the job are a command's."""
    processes = [
        process(215, SHELL_PID, comm="a server, the first command's"),
        process(260, SHELL_PID, session=260, comm="zsh-async worker, restarted at a prompt"),
        process(270, 260, pgrp=260, session=260, comm="its job"),
        process(320, SHELL_PID, comm="the second command's job"),
        process(420, SHELL_PID, comm="a hook of the last prompt"),
    ]
    whose = owners(processes, SHELL_PID, [(STARTED, 250), (300, 400)], 32768)
    assert whose == {215: Owner.COMMAND, 260: Owner.SHELL, 270: Owner.SHELL, 320: Owner.COMMAND,
                     420: Owner.PROMPT}
    # The worker was restarted since: its jobs, let go, are still in the session it made. A
    # daemon that leads its own session, and one made after the last command, are a command's.
    let_go = [process(270, SUBREAPER, pgrp=260, session=260), process(275, SUBREAPER, session=275),
              process(430, SUBREAPER, pgrp=425, session=425)]
    whose = owners(let_go, SHELL_PID, [(STARTED, 250), (300, 400)], 32768)
    assert whose == {270: Owner.SHELL, 275: Owner.COMMAND, 430: Owner.COMMAND}


def test_a_worker_the_shell_started_on_a_terminal_of_its_own_is_its_own() -> None:
    """A theme's `chpwd` hook restarts its zsh-async worker (on a `zpty` terminal) as the command's
    `cd` runs: it and the job of an earlier worker, let go, are the shell's; a command's
    `setsid -c`, on the shell's own terminal, and its daemon, on none, are the command's."""
    shell, zpty = ProcessInfo(pid=SHELL_PID, comm="zsh", state="S", pgrp=SHELL_PID, session=SHELL_PID, tty=34816), 34817
    processes = [
        ProcessInfo(pid=210, comm="zsh", state="S", pgrp=210, session=210, ppid=SHELL_PID, tty=zpty),
        ProcessInfo(pid=220, comm="bash", state="S", pgrp=220, session=220, ppid=SHELL_PID, tty=shell.tty),
        ProcessInfo(pid=230, comm="daemon", state="S", pgrp=230, session=230, ppid=SHELL_PID),
        ProcessInfo(pid=240, comm="find", state="S", pgrp=205, session=205, ppid=SUBREAPER, tty=zpty),
    ]
    whose = owners(processes, SHELL_PID, [(STARTED, ENDED)], 32768, shell)
    assert whose == {210: Owner.SHELL, 220: Owner.COMMAND, 230: Owner.COMMAND, 240: Owner.SHELL}


def test_a_worker_on_its_way_to_a_terminal_and_the_jobs_of_one_gone_are_the_shells() -> None:
    """`zpty` forks the shell, which calls setsid() and then opens its terminal: in between, it is
    a fork of the shell leading a session with no terminal, unlike a command's daemon, a program
    of its own. A restarted worker's jobs, let go, lost their terminal when the worker ended:
    one the worker forked is a fork of the shell still, and one whose worker was listed at an
    earlier look is told by it. A command's daemon, let go, stays the command's."""
    shell, zpty, fork = ProcessInfo(pid=SHELL_PID, comm="zsh", state="S", pgrp=SHELL_PID, session=SHELL_PID,
                                    tty=34816), 34817, PF_FORKNOEXEC
    processes = [
        ProcessInfo(pid=210, comm="zsh", state="R", pgrp=210, session=210, ppid=SHELL_PID, flags=fork),
        ProcessInfo(pid=230, comm="daemon", state="S", pgrp=230, session=230, ppid=SHELL_PID),
        ProcessInfo(pid=235, comm="zsh", state="S", pgrp=235, session=235, ppid=SHELL_PID),  # `setsid zsh`
        ProcessInfo(pid=250, comm="zsh", state="S", pgrp=250, session=250, ppid=SHELL_PID, tty=zpty, flags=fork),
        ProcessInfo(pid=260, comm="cat", state="R", pgrp=250, session=250, ppid=SUBREAPER),
        ProcessInfo(pid=270, comm="zsh", state="R", pgrp=265, session=265, ppid=SUBREAPER, flags=fork),
        ProcessInfo(pid=280, comm="sleep", state="S", pgrp=230, session=230, ppid=SUBREAPER),
    ]
    whose = owners(processes, SHELL_PID, [(STARTED, ENDED)], 32768, shell)
    assert whose == {210: Owner.SHELL, 230: Owner.COMMAND, 235: Owner.COMMAND, 250: Owner.SHELL, 260: Owner.SHELL,
                     270: Owner.SHELL, 280: Owner.COMMAND}


def test_a_group_that_leads_back_to_itself_ends_the_walk() -> None:
    """A process whose group's leader is its own child (it joined that group): no endless walk."""
    processes = [
        ProcessInfo(pid=210, comm="a", state="S", pgrp=220, session=200, ppid=SUBREAPER),
        ProcessInfo(pid=220, comm="b", state="S", pgrp=220, session=200, ppid=210),
    ]
    assert owners(processes, SHELL_PID, [(STARTED, ENDED)], 32768) == {210: Owner.COMMAND, 220: Owner.COMMAND}


def test_pids_that_came_round_pid_max_are_still_after() -> None:
    whose = owners([process(5, SHELL_PID), process(32700, SHELL_PID)], SHELL_PID, [(32600, 32760)], 32768)
    assert whose == {5: Owner.PROMPT, 32700: Owner.COMMAND}


def test_the_shells_own_work_is_over_once_its_workers_sleep_with_nothing_running() -> None:
    worker = process(160, SHELL_PID, session=160, comm="zsh-async worker")
    agent = process(150, 1, session=150, comm="gpg-agent")
    job = process(210, SHELL_PID, comm="sleep job")  # the command's: never waited for
    whose = {150: Owner.SHELL, 160: Owner.SHELL, 210: Owner.COMMAND}
    assert not shell_at_work([agent, worker, job], whose)
    assert shell_at_work([agent, replace(worker, state="R"), job], whose)


def test_a_worker_with_a_job_and_a_prompt_hook_are_at_work() -> None:
    worker = process(160, SHELL_PID, session=160, comm="zsh-async worker")
    its_job = process(220, 160, pgrp=160, session=160, comm="mktemp")
    hook = process(320, SHELL_PID, comm="atuin history end")
    whose = {160: Owner.SHELL, 220: Owner.SHELL, 320: Owner.PROMPT}
    assert shell_at_work([worker, its_job], whose)
    assert shell_at_work([worker, hook], whose)
    assert not shell_at_work([worker, replace(hook, state="Z"), replace(its_job, state="Z")], whose)


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
    assert classify_call(call("read", 0, 1, 2), [TTY], None, True, TTY) == TaskWait(Wait.TERMINAL, keyboard=True)
    assert classify_call(call("read", 3, 1, 1), ["/dev/tty"], None, True, "pipe:[1]").kind is Wait.TERMINAL


@pytest.mark.parametrize(("target", "kind"), [("pipe:[4711]", Wait.RELATIVE), ("socket:[99]", Wait.EXTERNAL),
                                              ("/home/u/file", Wait.EXTERNAL), (None, Wait.EXTERNAL)])
def test_read_on_anything_else_is_not_a_key(target: str | None, kind: Wait) -> None:
    assert classify_call(call("read", 0, 1, 2), [target], None, False, TTY).kind is kind


def test_a_read_of_the_standard_input_given_by_the_caller_is_a_wait_for_input_but_not_for_a_key() -> None:
    """`seq 9 | safe-run -- fzf`: the pipe is the person's input, yet no key reaches it."""
    given = frozenset({"pipe:[4711]"})
    assert fd_kind("pipe:[4711]", given) == "input" and fd_kind("pipe:[5]", given) == "relative"
    assert classify_call(call("read", 0, 1, 2), ["pipe:[4711]"], None, True, "pipe:[4711]", given) == \
        TaskWait(Wait.TERMINAL, keyboard=False)
    assert classify_call(call("read", 0, 1, 2), ["pipe:[4711]"], None, True, "pipe:[4711]").kind is Wait.RELATIVE


def test_a_poll_of_the_given_standard_input_and_the_terminal_waits_for_input_and_listens() -> None:
    given = frozenset({"pipe:[4711]"})
    assert classify_call(call("epoll_wait", 3), ["pipe:[4711]", TTY], None, False, "pipe:[4711]", given) == \
        TaskWait(Wait.TERMINAL, keyboard=True)
    assert classify_call(call("epoll_wait", 3), ["pipe:[4711]"], None, False, "pipe:[4711]", given) == \
        TaskWait(Wait.TERMINAL, keyboard=False)


def test_a_poll_on_the_terminal_alone_waits_for_a_key_with_its_timeout() -> None:
    """vi polls the keyboard with a 4 s timeout: a key wait that also goes on by itself later."""
    assert classify_call(call("pselect6", 1), [TTY], None, False, TTY) == TaskWait(Wait.TERMINAL, keyboard=True)
    assert classify_call(call("pselect6", 1), [TTY], 4.0, False, TTY) == TaskWait(Wait.TERMINAL, 4.0, keyboard=True)


def test_a_short_keyboard_poll_is_a_step_of_a_loop() -> None:
    """A loop polling the keyboard for a tenth of a second between silent steps goes on by itself."""
    assert classify_call(call("pselect6", 1), [TTY], 0.1, False, TTY) == TaskWait(Wait.TIMED, keyboard=True)
    assert classify_call(call("poll", 0, 1), None, 0.5, False, TTY) == TaskWait(Wait.TIMED, keyboard=True)


def test_a_poll_on_the_terminal_and_the_others_still_waits_for_a_key() -> None:
    """node's REPL: the terminal, its own eventfd and a pipe."""
    targets = [TTY, "anon_inode:[eventfd]", "pipe:[5]"]
    assert classify_call(call("epoll_pwait", 13), targets, 8.0, False, TTY) == TaskWait(Wait.TERMINAL, 8.0, keyboard=True)


def test_a_poll_on_the_terminal_and_the_world_listens_to_the_keyboard() -> None:
    """A dev server's event loop: the keyboard and a listening socket; or the keyboard and a timer."""
    on_socket = classify_call(call("epoll_wait", 3), [TTY, "socket:[7]"], None, False, TTY)
    assert on_socket == TaskWait(Wait.EXTERNAL, keyboard=True)
    on_timer = classify_call(call("epoll_wait", 3), [TTY, "anon_inode:[timerfd]"], None, False, TTY)
    assert on_timer == TaskWait(Wait.TIMED, keyboard=True)


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


KEY = TaskWait(Wait.TERMINAL, keyboard=True)
CHILD = TaskWait(Wait.RELATIVE)


@pytest.mark.parametrize(
    ("waits", "elsewhere", "verdict"),
    [
        ([KEY], False, Verdict.INPUT),
        ([CHILD, KEY], False, Verdict.INPUT),  # a thread joins the reader; a shell waits for the job
        ([KEY, TaskWait(Wait.RUNNING)], False, Verdict.WORKING),  # the main thread works, a thread listens
        ([KEY, TaskWait(Wait.TIMED)], False, Verdict.LISTENING),  # a relay while `sleep` runs inside
        ([KEY, TaskWait(Wait.EXTERNAL)], False, Verdict.LISTENING),  # a socket may wake it any moment
        ([TaskWait(Wait.EXTERNAL, keyboard=True)], False, Verdict.LISTENING),  # a dev server's one event loop
        ([TaskWait(Wait.TIMED, keyboard=True), CHILD], False, Verdict.LISTENING),  # the keyboard and a timer fd
        ([CHILD, TaskWait(Wait.TIMED)], False, Verdict.WORKING),  # a sleep: nobody listens to the keyboard
        ([CHILD, TaskWait(Wait.EXTERNAL)], False, Verdict.WORKING),
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


def test_a_count_of_tasks_made_below_the_shells_pid_is_no_count() -> None:
    """Every pid given out was a task made; a /proc that says 0 (gVisor's) counts nothing."""
    assert task_count(1_234_567, 4321) == 1_234_567
    assert task_count(4321, 4321) == 4321
    assert task_count(0, 5) is None
    assert task_count(None, 5) is None


def test_only_the_pids_the_counter_can_have_reached_since_the_shell_are_read() -> None:
    listing = ["1", "300", "4999", "5000", "5001", "5200"]
    then = PidCounters(made=10_000, alive=80, pid_max=32768)
    assert made_since(listing, 5000, then, PidCounters(made=10_050, alive=90, pid_max=32768)) == ["5001", "5200"]
    # the counter may have come round: a child of the shell may have a pid below the shell's, up
    # to where the counter can have reached from 300; at the shell's, any pid may be a child's
    assert made_since(listing, 5000, then, PidCounters(made=24_000, alive=90, pid_max=32768)) == ["300", "5001", "5200"]
    assert made_since(listing, 5000, then, PidCounters(made=28_200, alive=90, pid_max=32768)) == listing
    # a shell near pid_max: the counter may have come round, and then gone on from 300 (the pids
    # below are never given out again) as far as it can have moved, to 300 + 32000 + 2 * 1 + 80 +
    # 1000 - 32768 = 614, not as far as the shell
    near = ["1", "299", "300", "301", "614", "615", "4999", "31999", "32000", "32001", "32767"]
    earlier = PidCounters(made=100_000, alive=80, pid_max=32768)
    assert made_since(near, 32_000, earlier, PidCounters(made=100_001, alive=80, pid_max=32768)) == [
        "300", "301", "614", "32001", "32767"]
    assert made_since(near, 32_000, earlier, PidCounters(made=116_000, alive=80, pid_max=32768)) == near
    assert made_since(listing, 5000, None, PidCounters(made=10_001, alive=80, pid_max=32768)) == listing
    zero = PidCounters(made=0, alive=80, pid_max=32768)  # gVisor's /proc: no count to go by
    assert made_since(listing, 5000, zero, zero) == listing
    assert made_since(listing, 5000, then, None) == listing

"""The end-of-run sweep, with the kernel's answers scripted and real processes to end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from safe_run.engine.cleanup import Reaper
from safe_run.core.evidence import ProcessInfo
from safe_run.core.result import Killed


class ShellTerminal:
    """What the sweep asks of the terminal: the shell's pid, which names its session and group."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fd = -1


class SeenBefore:
    """A look at /proc taken a moment ago: the processes as they were then. `whole`: whether the
    kernel says a look missed nothing (no task was made while it looked)."""

    def __init__(self, processes: list[ProcessInfo], whole: bool = False) -> None:
        self._processes = processes
        self.whole_look = whole

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]:
        return self._processes

    def name_now(self, process: ProcessInfo) -> str:
        return process.comm


def unused_pid(below: int = 4_000_000) -> int:
    """A pid no process has (a shell and a group the look saw, both gone since)."""
    pid = below
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_a_job_that_left_its_group_since_the_look_is_ended_all_the_same() -> None:
    """setsid's child calls setsid() between the look and the signal: the group it was seen in is
    empty by then, and it must still be ended (and only then reported)."""
    moved = subprocess.Popen(["sleep", "31.75"], start_new_session=True)
    try:
        shell = unused_pid()
        empty_group = unused_pid(shell - 1)
        seen = ProcessInfo(pid=moved.pid, comm="setsid", state="S", pgrp=empty_group, session=shell)
        killed = Reaper(ShellTerminal(shell), SeenBefore([seen])).kill_session()  # type: ignore[arg-type]
        assert moved.wait(timeout=10) != 0, "it was left running"
        assert [(k.pid, k.command) for k in killed] == [(moved.pid, "setsid")]
    finally:
        moved.kill()
        moved.wait()


class ForkedDuringTheLook(SeenBefore):
    """Scans of /proc in turn: the first missed a child its parent forked while the scan ran (the
    parent exited before it was read, the child was made after the listing); later ones see it."""

    def __init__(self, child: ProcessInfo) -> None:
        super().__init__([])
        self._scans: list[list[ProcessInfo]] = [[], [child]]

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]:
        return self._scans.pop(0) if self._scans else []


def test_a_child_forked_while_proc_was_read_is_found_by_the_next_look() -> None:
    child = subprocess.Popen(["sleep", "31.5"], start_new_session=True)
    try:
        shell = unused_pid()
        seen = ProcessInfo(pid=child.pid, comm="sleep", state="S", pgrp=child.pid, session=child.pid)
        killed = Reaper(ShellTerminal(shell), ForkedDuringTheLook(seen)).kill_session()  # type: ignore[arg-type]
        assert child.wait(timeout=10) != 0, "it was left running"
        assert [(k.pid, k.command) for k in killed] == [(child.pid, "sleep")]
    finally:
        child.kill()
        child.wait()


# A stand-in for a shell on a real terminal: it runs one program in front, takes its terminal back
# when the program ends, and only a moment later (a loaded machine) says that its line is over.
SLOW_SHELL = """
import os, signal, sys, time
terminal = os.open(sys.argv[1], os.O_RDWR)
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
program = os.fork()
if program == 0:
    os.setpgid(0, 0)
    os.execvp("sleep", ["sleep", "32.25"])
try:
    os.setpgid(program, program)  # as a shell does, whichever of the two comes first
except PermissionError:
    pass  # the program has already made its group and started
os.tcsetpgrp(terminal, program)
print(program, flush=True)
os.waitpid(program, 0)
os.tcsetpgrp(terminal, os.getpgrp())
time.sleep(0.3)
open(sys.argv[2], "w").close()
time.sleep(30)
"""


class Terminal:
    def __init__(self, master: int, shell: int) -> None:
        self.fd = master
        self.pid = shell

    def write(self, data: bytes) -> None:
        os.write(self.fd, data)


class InFront(SeenBefore):
    def session_processes(self) -> list[ProcessInfo]:
        return self._processes


def test_a_shell_slow_to_end_its_line_after_its_program_was_stopped_is_not_ended() -> None:
    """zsh cannot be interrupted out of a builtin, so a shell in front before its line is over is
    ended; one that just got its terminal back from the stopped program is only drawing its prompt,
    and what was stopped is still reported."""
    master, slave = os.openpty()
    line_over = Path(tempfile.mkdtemp()) / "line-over"
    shell = subprocess.Popen(
        [sys.executable, "-c", SLOW_SHELL, os.ttyname(slave), str(line_over)],
        stdout=subprocess.PIPE, start_new_session=True,
    )
    try:
        assert shell.stdout is not None
        program = int(shell.stdout.readline())
        seen = ProcessInfo(pid=program, comm="sleep", state="S", pgrp=program, session=shell.pid)
        reaper = Reaper(Terminal(master, shell.pid), InFront([seen]))  # type: ignore[arg-type]
        stopped = reaper.stop_foreground(interrupt_shell=False, line_over=line_over.exists)
        assert (stopped.killed, stopped.shell_must_end) == ([Killed(pid=program, command="sleep")], False)
        assert shell.poll() is None
    finally:
        shell.kill()
        shell.wait()
        os.close(master)
        os.close(slave)
        shutil.rmtree(line_over.parent)


class Listings(SeenBefore):
    """Scans of /proc in turn, each answered from a script, with what each asked for kept: the
    whole of /proc, or only what was made since the last scan (`new_only`)."""

    def __init__(self, scans: list[list[ProcessInfo]], whole: bool = False) -> None:
        super().__init__([], whole)
        self._scans = scans
        self.asked: list[str] = []

    def run_processes(self, new_only: bool = False) -> list[ProcessInfo]:
        self.asked.append("made since" if new_only else "all")
        return self._scans.pop(0) if self._scans else []

    def shell_at_prompt(self) -> bool | None:
        return True


def _hung_up_after(scans: list[list[ProcessInfo]], shell: int, first_typed: int, whole: bool = False) -> list[str]:
    """What the sweep of a command that ended by itself, then the wait for its shell's own work,
    asked of /proc: the command's line ran from pid `first_typed` to 10 past it."""
    kernel = Listings(scans, whole)
    reaper = Reaper(ShellTerminal(shell), kernel, spans=[(first_typed, first_typed + 10)])  # type: ignore[arg-type]
    assert reaper.kill_session(settle=True) == []
    reaper.let_shell_work_end()
    return kernel.asked


def test_after_a_sweep_that_left_nothing_the_wait_for_the_shells_work_reads_only_what_is_new() -> None:
    """Nothing of the run was alive at the sweep: a hook's process can only be one made since."""
    assert _hung_up_after([], unused_pid(), 1000) == ["all", "made since", "made since"]


def test_a_sweep_whose_first_look_missed_nothing_looks_once() -> None:
    """No task was made while it looked, so none can have slipped past it: a second look would
    find what the first did, and the wait for the shell's work again reads only what is new."""
    assert _hung_up_after([], unused_pid(), 1000, whole=True) == ["all", "made since"]


def test_a_sweep_that_found_something_looks_again_after_ending_it() -> None:
    """What it ended may have made children meanwhile, whatever the look said of itself."""
    child = subprocess.Popen(["sleep", "31.25"], start_new_session=True)
    try:
        shell = unused_pid()
        seen = ProcessInfo(pid=child.pid, comm="sleep", state="S", pgrp=child.pid, session=shell)
        kernel = Listings([[seen]], whole=True)
        killed = Reaper(ShellTerminal(shell), kernel).kill_session()  # type: ignore[arg-type]
        assert child.wait(timeout=10) != 0, "it was left running"
        assert ([(k.pid, k.command) for k in killed], kernel.asked) == ([(child.pid, "sleep")], ["all", "made since"])
    finally:
        child.kill()
        child.wait()


def test_after_a_sweep_that_left_the_shells_own_work_the_wait_looks_at_every_process() -> None:
    """A worker the shell started before the command (a prompt theme's) is left to the hang-up by
    the sweep, and the wait must see whether it is still at work: every process is read again."""
    shell = unused_pid()
    worker = ProcessInfo(pid=900, comm="zsh", state="S", pgrp=shell, session=shell)
    asked = _hung_up_after([[worker], [], [worker]], shell, 1000)
    assert asked[:3] == ["all", "made since", "all"], asked

"""Starting the shell on a new terminal with the process state of a fresh terminal window.

A child of Python inherits what Python changed: SIGPIPE and SIGXFSZ ignored (ignored dispositions
survive exec, so `yes | head` prints "Broken pipe" and never dies of SIGPIPE), possibly a blocked
signal mask, and any descriptor someone forgot to mark close-on-exec. A terminal emulator starts
its shell with every signal at its default, nothing blocked and only descriptors 0-2; the command
must run exactly as it would there.

Where the C library allows it, the shell is started by its posix_spawn (`libc_spawn`), to the
same state without forking this process. Otherwise, between fork and exec the child runs only
system calls on values prepared before the fork. A failure there (the directory cannot be
entered, the shell cannot be executed) is written to a close-on-exec pipe as the failed step and
its errno, and the child leaves with `os._exit`: none of safe-run's own error handling or clean-up
runs in it. Exec closes the pipe, which tells the parent that the shell started.
"""

from __future__ import annotations

import fcntl
import os
import signal
import struct
import termios
import time
from dataclasses import dataclass, replace
from typing import NoReturn

from . import libc_spawn, polling

# How long the child gets to reach exec before it is taken for wedged (a hung file system).
EXEC_TIMEOUT_S = 10.0
# Signals no process can catch or ignore: they are always at their default.
FIXED_SIGNALS = frozenset({signal.SIGKILL, signal.SIGSTOP})
CHILD_FAILED = 127
# The steps between fork and exec that can fail, as the child reports them.
SETUP, CHDIR, EXEC = "setup", "chdir", "exec"
# Where the shell finds the standard input a caller gives the command (`--stdin`): a number above
# the ten that scripts use, below where bash and zsh move their own (10 up, and bash's 255), and
# not bash's first process substitution (63).
GIVEN_STDIN_FD = 57


class SpawnError(Exception):
    """The shell could not be started; the message says why, in one line."""


@dataclass(frozen=True)
class Spawned:
    pid: int
    master_fd: int


@dataclass(frozen=True)
class _Plan:
    """Everything the child needs, encoded before the fork so that the child only makes calls."""

    program: bytes
    argv: list[bytes]
    env: dict[bytes, bytes]
    cwd: bytes
    signals: list[int]
    max_fd: int
    stdin: int | None = None  # this process's descriptor the shell gets as GIVEN_STDIN_FD


def spawn(
    argv: list[str], env: dict[str, str], cwd: str, rows: int, cols: int, stdin: int | None = None,
    posix_spawn: bool | None = None,
) -> Spawned:
    """Start `argv` as the leader of a new session whose controlling terminal is a new PTY; with
    `stdin`, that descriptor of this process goes along as the shell's GIVEN_STDIN_FD."""
    program = _find_program(argv[0], env)
    plan = replace(_plan(program, argv, env, cwd), stdin=stdin)
    master, slave = (_above_stdio(fd) for fd in os.openpty())
    try:
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        use_libc = libc_spawn.available() if posix_spawn is None else posix_spawn
        pid = _spawned(plan, slave) if use_libc else _forked(plan, slave)
    except OSError as exc:
        os.close(master)
        raise SpawnError(f"cannot start {program}: {_reason(exc.errno)}") from exc
    except SpawnError:
        os.close(master)
        raise
    finally:
        os.close(slave)
    return Spawned(pid=pid, master_fd=master)


def _spawned(plan: _Plan, slave: int) -> int:
    """Through the C library's posix_spawn (see `libc_spawn`): no fork of this process."""
    try:
        given = None if plan.stdin is None else (plan.stdin, GIVEN_STDIN_FD)
        return libc_spawn.spawn_session(plan.program, plan.argv, plan.env, plan.cwd, os.fsencode(os.ttyname(slave)), given)
    except OSError as exc:
        report = f"{_failed_step(plan)} {exc.errno or 0}".encode("ascii")
        raise SpawnError(describe_failure(report, os.fsdecode(plan.program), os.fsdecode(plan.cwd))) from exc


def _failed_step(plan: _Plan) -> str:
    """Which step of a spawn failed, which posix_spawn's one error number does not say: the
    directory when it cannot be entered, else the exec (the terminal it opens is already open here)."""
    return EXEC if os.path.isdir(plan.cwd) and os.access(plan.cwd, os.X_OK) else CHDIR


def _forked(plan: _Plan, slave: int) -> int:
    """By fork and exec, where the C library has no posix_spawn that can set the shell up."""
    report_read, report_write = (_above_stdio(fd) for fd in os.pipe())
    try:
        pid = _fork(plan, slave, report_write)
    finally:
        os.close(report_write)
    try:
        report = _read_report(report_read, EXEC_TIMEOUT_S)
    finally:
        os.close(report_read)
    if report is None or report:
        _reap(pid, kill=report is None)
        program, cwd = os.fsdecode(plan.program), os.fsdecode(plan.cwd)
        raise SpawnError(
            f"cannot start {program}: it did not start within {EXEC_TIMEOUT_S:g} s"
            if report is None
            else describe_failure(report, program, cwd)
        )
    return pid


def describe_failure(report: bytes, program: str, cwd: str) -> str:
    """The child's report ("STEP ERRNO") as the one line a person reads."""
    step, _, number = report.decode("ascii", "replace").partition(" ")
    errno = int(number) if number.isdigit() else 0
    reason = _reason(errno)
    if step == CHDIR:
        return f"cannot enter {cwd}: {reason}"
    if step == EXEC:
        return f"cannot run {program}: {reason}"
    return f"cannot start {program}: {reason}"


def _reason(errno: int | None) -> str:
    """strerror in the lower case of a message that continues a sentence."""
    if not errno:
        return "the terminal could not be set up"
    text = os.strerror(errno)
    return text[:1].lower() + text[1:]


def _find_program(name: str, env: dict[str, str]) -> str:
    if os.sep in name:
        return name
    for directory in env.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise SpawnError(f"cannot start {name}: not found on PATH")


def _plan(program: str, argv: list[str], env: dict[str, str], cwd: str) -> _Plan:
    try:
        encoded_env = {os.fsencode(key): os.fsencode(value) for key, value in env.items()}
        plan = _Plan(
            program=os.fsencode(program),
            argv=[os.fsencode(word) for word in argv],
            env=encoded_env,
            cwd=os.fsencode(cwd),
            signals=sorted(set(signal.valid_signals()) - FIXED_SIGNALS),
            max_fd=_max_fd(),
        )
    except UnicodeError as exc:
        raise SpawnError(f"cannot start {program}: {exc}") from exc
    words = [plan.program, *plan.argv, plan.cwd, *plan.env, *plan.env.values()]
    if any(b"\0" in word for word in words) or any(b"=" in key for key in plan.env):
        raise SpawnError(f"cannot start {program}: a NUL byte in an argument, a variable or the directory")
    return plan


def _max_fd() -> int:
    try:
        return max(256, os.sysconf("SC_OPEN_MAX"))
    except (OSError, ValueError):
        return 65536


def _above_stdio(fd: int) -> int:
    """The same descriptor moved to 3 or above (safe-run may run with 0-2 closed), close-on-exec."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _fork(plan: _Plan, slave: int, report_write: int) -> int:
    """Fork with every signal blocked, so that none is handled by Python in the child."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, plan.signals)
    try:
        pid = os.fork()
        if pid == 0:
            _become_shell(plan, slave, report_write)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # the parent only: the child never returns
    return pid


def _become_shell(plan: _Plan, slave: int, report_write: int) -> NoReturn:
    """The child: new session, the terminal as 0-2, the directory, pristine signals, exec."""
    step = SETUP
    errno = 0
    try:
        kept = [report_write]
        if plan.stdin is not None:
            os.dup2(plan.stdin, GIVEN_STDIN_FD)  # first: the given descriptor may be 0
            kept.append(GIVEN_STDIN_FD)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for target in (0, 1, 2):
            os.dup2(slave, target)
        step = CHDIR
        os.chdir(plan.cwd)
        step = SETUP
        for signum in plan.signals:
            _default_disposition(signum)
        low = 3
        for fd in sorted(kept):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, plan.max_fd)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        step = EXEC
        os.execve(plan.program, plan.argv, plan.env)
    except OSError as exc:
        errno = exc.errno or 0
    except BaseException:  # nothing may escape into safe-run's code in this process
        pass
    try:
        os.write(report_write, f"{step} {errno}".encode("ascii"))
    finally:
        os._exit(CHILD_FAILED)


def _default_disposition(signum: int) -> None:
    try:
        signal.signal(signum, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # a signal the C library reserves for itself


def _read_report(fd: int, timeout: float) -> bytes | None:
    """What the child wrote before the pipe closed (b"" when exec succeeded); None if it never closed."""
    deadline = time.monotonic() + timeout
    report = b""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not polling.readable([fd], remaining):
            return None
        chunk = os.read(fd, 512)
        if not chunk:
            return report
        report += chunk


def _reap(pid: int, kill: bool) -> None:
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass

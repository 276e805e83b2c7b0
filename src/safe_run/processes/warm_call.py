"""Runs in a warm call's child, forked by the warm process (`processes.warm`) for one call, or the
spare child it forked ahead (`processes.spare`) once that call comes: the client's own process.

The child takes the client's descriptors at their numbers, its directory, variables and umask
(`processes.caller.Caller`, built here from the call the client sent), its signal dispositions and
mask, and fresh standard streams, then runs `cli.main_here` as the client's process would have,
and reports its exit status to the client itself as soon as its output is out.
"""

from __future__ import annotations

import fcntl
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import NoReturn

from ..session.launch import Fork
from ..warm.wire import Call
from .caller import Caller
from .forking import die_with


def caller_of(call: Call, directory: str | int) -> Caller:
    """The client's place: its variables, from its call; its directory, passed beside the call;
    all else as this process has it (its umask), since a warm process serves only the calls of
    the context it was started in."""
    return replace(Caller.here(directory), environ=[os.fsdecode(entry) for entry in call.environ])


def become(
    call: Call, fds: list[int], conn: socket.socket, holders: Fork, warm: int, inherited: list[socket.socket],
) -> NoReturn:
    """Be the client's process, run the call, and exit as the command line would. `fds`: the
    client's directory, then the descriptors it passed; `conn`: its connection; `holders`: where
    its session's holder comes from (forked ahead by a spare); `warm`: the warm process;
    `inherited`: that process's sockets, which are not this process's to close.

    Its status goes to the client as soon as its output is out and the client's descriptors are
    let go: the end of a process this size takes a millisecond or two, which neither the client
    nor a reader of its output then waits for. This process's end is still reported as well, for
    a call that ends otherwise (killed)."""
    code = 125
    try:
        signal.set_wakeup_fd(-1)
        if not die_with(warm):
            os._exit(125)  # it was gone before the call was made
        os.setpgid(0, 0)  # a group of its own, as the client's process has its caller's
        for other in inherited:
            other.detach()
        caller_of(call, fds[0]).take()
        call_fd, *ahead = _take_descriptors(fds[0], fds[1:], call.targets, [conn.detach(), *holders.carried()])
        conn = socket.socket(fileno=call_fd)
        holders.renumbered(ahead)
        _take_signals(call.ignored, call.blocked)
        sys.argv = [os.fsdecode(word) for word in call.argv]
        _fresh_standard_streams()
        from ..cli import main as cli
        from .. import process_title

        process_title.hide_command()

        cli.main_here(sys.argv[1:], holders)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException as exc:  # noqa: BLE001 - the child must end here, whatever happened
        _say(f"internal error in a warm call: {type(exc).__name__}: {exc}")
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        _report_early(conn, code)
        holders.abandon()  # a holder forked ahead and not used ends its shell and directory first
        os._exit(code)


def _report_early(conn: socket.socket, code: int) -> None:
    """The exit status, as the warm process reports it (a wait status), once the client's standard
    descriptors are given back: a reader of the output sees its end when the client exits."""
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        conn.sendall(b"exit %d\n" % ((code & 0xFF) << 8))
    except OSError:
        pass  # the warm process reports it when this process has ended


def _take_descriptors(directory: int, passed: list[int], targets: list[int], kept: list[int]) -> list[int]:
    """The client's descriptors at the client's numbers, and nothing else open but `kept` (the
    call's connection, a holder forked ahead), whose new numbers (close-on-exec) are returned."""
    top = max([directory, *passed, *targets, *(int(name) for name in os.listdir("/proc/self/fd"))]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, top) for fd in [*passed, *kept]]
    os.closerange(0, top)
    for fd, target in zip(moved, targets):
        os.dup2(fd, target, inheritable=True)
    for fd in moved[:len(passed)]:
        os.close(fd)
    return moved[len(passed):]


def _take_signals(ignored: int, blocked: int) -> None:
    """The dispositions Python started the client with, and the mask it inherited."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if ignored >> (signum - 1) & 1:
            handler: signal.Handlers | Callable[..., object] = signal.SIG_IGN
        else:
            handler = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        try:
            signal.signal(signum, handler)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [s for s in signal.valid_signals() if blocked >> (s - 1) & 1])


def _fresh_standard_streams() -> None:
    """Streams on the client's descriptors, made as Python makes them at start (this process's were
    made for /dev/null and cached what they learnt of it), unbuffered where they were (-u)."""
    import io

    def stream(fd: int, old: io.TextIOWrapper, mode: str) -> io.TextIOWrapper:
        unbuffered = isinstance(old.buffer, io.RawIOBase)
        raw = io.open(fd, mode, buffering=0 if unbuffered else -1, closefd=False)
        return io.TextIOWrapper(
            raw, encoding=old.encoding, errors=old.errors, line_buffering=old.line_buffering,
            write_through=old.write_through,
        )

    for name, fd, mode in (("stdin", 0, "rb"), ("stdout", 1, "wb"), ("stderr", 2, "wb")):
        fresh = stream(fd, getattr(sys, name), mode)
        setattr(sys, name, fresh)
        setattr(sys, f"__{name}__", fresh)


def _say(line: str) -> None:
    try:
        os.write(2, f"safe-run: {line}\n".encode("utf-8", "replace"))
    except OSError:
        pass

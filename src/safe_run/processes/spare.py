"""Runs in the spare child, forked by the warm process (`processes.warm`) while no call runs: it
gets ready for the next call before it comes, waits for it, and becomes that call's child.

It forks the holder a session will need ahead too (`session.launch.Fork.prepare`), which starts
the shell that call will likely need, rc files loaded (`shell_start.KeptShell`), in the last
call's directory and with its variables; it parses a typical command line, and takes its memory
as its own (`processes.memory`), so that its call meets no page it still shares with the warm process:
about a third of a warm call here went to those page copies.
"""

from __future__ import annotations

import os
import signal
import socket

from ..engine.interrupts import STOP_SIGNALS
from ..session.launch import Fork
from ..warm.wire import MAX_DESCRIPTORS, decode, request_length
from .caller import Caller, anticipate
from .forking import die_with, receive_with_descriptors
from .holder_ahead import shell_ahead
from .memory import take_own_pages
from .warm_call import become


def wait_for_a_call(channel: socket.socket, warm: int, inherited: list[socket.socket], last: Caller | None) -> None:
    """Get ready, wait for the call the warm process (`warm`) hands over on `channel`, and be it;
    `inherited`: the warm process's sockets, not this process's to close; `last`: the last call's
    caller, whose like is expected next. Never returns into the warm process's code."""
    holders = Fork()
    try:
        signal.set_wakeup_fd(-1)
        # Ended by a stop signal, as `ps` shows it and its holder forked ahead (which
        # inherits this) as `safe-run warm` too; its call then sets what the caller had.
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        if not die_with(warm):
            os._exit(125)  # it was gone before the spare was made
        for other in inherited:
            other.detach()
        # The holder a session will need is forked ahead too, before the rehearsal: a fork
        # shares again every page written before it.
        if last is not None:
            anticipate(last)
        holders.prepare(shell_ahead)
        _rehearse()
        take_own_pages()
        message, fds, _ = receive_with_descriptors(channel, request_length, MAX_DESCRIPTORS)
        call = decode(message)
        channel.close()
    except BaseException:  # noqa: BLE001 - no call came (the warm process let it go), or it was garbled
        holders.abandon()
        os._exit(0)
    become(call, fds[:-1], socket.socket(fileno=fds[-1]), holders, warm, [])


def _rehearse() -> None:
    """Parse a typical call's command line, and make what a call makes first, without running
    anything: a spare child's pages that this writes are its own before its call needs them."""
    from ..cli.commands import cli
    from ..cli.report import json_line
    from ..core.request import RunRequest
    from ..core.result import Reason, Result, ShellInfo, Status, Strategy
    from ..environment import Environment

    try:
        with cli.make_context("safe-run", ["--format", "json", "--", "true"], resilient_parsing=True) as ctx:
            name, command, rest = cli.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
            if command is not None and name is not None:
                command.make_context(name, rest, parent=ctx, resilient_parsing=True).close()
        Environment.current()
        RunRequest("true")
        json_line(Result(Status.COMPLETED, 0, Strategy.RICH, Reason.SHELL_INTEGRATION, "true", ShellInfo("bash", "bash")), "json")
    except Exception:  # noqa: BLE001 - a rehearsal that fails costs the call only the time it would have saved
        pass

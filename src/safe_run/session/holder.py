"""Runs in a session's holder, a detached process that owns one shell's terminal and answers
callers: `make_holder` picks the holder's kind, and a one-shot session's is here.

A holder is of one of two kinds, decided once, when it is made (`make_holder`): a one-shot
session's (one command, then it ends: `OneShotHolder`, here) or a named shell's (`--in NAME`, one
command after another until it is closed or left idle: `shell_holder.ShellHolder`). Each kind has
a table from request type to the method that handles it, as the tracker has from phase and event;
what both share, the run and the requests about a running command, is `holder_base.Holder`.

The shared part is a module of its own so that both kinds can be built on it and this one, which
the rest of safe-run imports (`ShellPlan`, `make_holder`), can import both. The one-shot kind is
here, beside the choice: it is the shared part with its own table and nothing more.

This is the run side: the command's life, and what each request does to it. `callers.py` is the
socket side (connections, requests, answers), and `processes/holder.py` is the holder's process.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core.answers import NamedShell
from ..core.request import RunRequest
from ..engine.interrupts import Wakeup
from ..engine.runner import Run
from ..engine.shell_start import KeptShell
from . import wire
from .hibernation import KeeperLink
from .holder_base import COMMAND_HANDLERS, Call, Holder
from .shell_holder import ShellHolder
from .store import Session


@dataclass(frozen=True)
class ShellPlan:
    """What makes a holder a persistent shell: the caller's name for it."""

    name: str
    fresh_note: str | None = None  # said in the first answer: why this is a new shell


def make_holder(
    session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None = None,
    kept: KeptShell | None = None, clock: Callable[[], float] = time.monotonic, keeper: KeeperLink | None = None,
) -> Holder:
    """The holder of a one-shot session, or with a `plan` of a named shell; `kept`: a shell
    started ahead of this session (`shell_start.KeptShell`), for its run to take; `keeper`: a
    named shell's keeper (`processes.keeper`), if it has one."""
    if plan is None:
        return OneShotHolder(session, listener, request, first=session, kept=kept, clock=clock)
    named = NamedShell(session.id, plan.name, plan.fresh_note)
    return ShellHolder(session, listener, request, named, kept=kept, clock=clock, keeper=keeper)


class OneShotHolder(Holder):
    """Serves a one-shot session: its one command is the session's own, under the session's id."""

    def _serve_commands(self, run: Run, wakeup: Wakeup) -> None:
        self.final = self._follow_command(run, wakeup)

    def _dispatch(self, call: Call) -> None:
        HANDLERS[type(call.request)](self, call)

    def _shell_request(self, call: Call) -> None:
        """`run` and `close` are a named shell's: dropped while the command runs, and once it has
        ended answered with that end, as every call then is."""
        if self._running(call) is None:
            self.callers.wait(call.conn, None)
        else:
            self.callers.drop(call.conn)


# Request type -> the method that handles it in a one-shot session.
HANDLERS: dict[type[wire.Request], Callable[[OneShotHolder, Call], None]] = {
    **COMMAND_HANDLERS,
    wire.Attach: Holder._attach,
    wire.Close: OneShotHolder._shell_request,
    wire.Run: OneShotHolder._shell_request,
}

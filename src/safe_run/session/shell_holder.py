"""Runs in a named shell's holder (`--in NAME`): a holder that outlives its command.

Between commands it waits for the next `run` (one at a time: a `run` while a command runs is
answered `busy`), a `close`, or its idle limit, while it keeps reading what the shell prints so
that nothing blocks.

Each command has a session of its own, so a request says which command it is about (`about`); the
shell's own id names no command. What makes this kind differ from a one-shot session is then
in its table (`HANDLERS`): the requests about a command go through `_about_a_command`, which
answers one that has ended from its kept result, and one while the shell waits between commands
with the last command's result, before the running command's requests are handled as a one-shot
session handles them (`holder_base.COMMAND_HANDLERS`); `run` and `close` are this kind's alone.
Its records are written lazily (`Unkept`), so every request that may read them writes them first.
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

from ..core import answers
from ..core.answers import NOT_TYPED, Going, NamedShell, with_note
from ..core.request import RunRequest, timers_from_dict
from ..core.result import Killed, Result, error_result
from ..engine import polling
from ..engine.interrupts import Wakeup
from ..engine.runner import CommandRefused, Run
from ..engine.shell_start import KeptShell, RunFailed
from ..engine.terminal import Terminal
from ..shells.registry import kind_of
from . import wire
from .adoption import collect_adopted
from .hibernation import HIBERNATE_AFTER_S, KeeperLink, Watch, frozen
from .holder_base import COMMAND_HANDLERS, Call, Command, Holder, idle_expired, saved
from .store import SESSION_ID, Session, SessionStore

# A named shell's records of its commands are written once nothing was asked of it for this long.
KEEP_AFTER_S = 0.05
# How many of those records may wait at most, and how much output their results may hold. Calls
# that come without a pause (a loop of `Shell.run`) leave no quiet moment: every result, its
# output with it, was kept until the loop stopped (100 KB of output a call made the holder 60 MB
# larger in 600 calls). Past either, the oldest are written as each command ends, once its
# answer is out; below them, a burst of calls pays for no write (a journal line, its result
# encoded: about 50 us a command of little output).
OWED_MAX = 256
OWED_OUTPUT_MAX = 4 << 20


class ShellHolder(Holder):
    """Serves a named shell from its start until it closes, one command after another."""

    def __init__(
        self, session: Session, listener: socket.socket, request: RunRequest, named: NamedShell,
        kept: KeptShell | None = None, clock: Callable[[], float] = time.monotonic, keeper: KeeperLink | None = None,
    ) -> None:
        """`named`: what its answers call it; `kept`: a shell started ahead (`shell_start.KeptShell`);
        `keeper`: the holder process that keeps the shell while it waits (`processes.keeper`), if any."""
        self._named = named
        self._keeper = keeper
        self._unkept = Unkept()  # its records, written when nothing is asked (the first command's too)
        self._store = SessionStore(session.path.parent, sweep=False)  # where its commands' sessions go
        super().__init__(session, listener, request, self._new_command(session, request.command), kept, clock)
        self._commands = 0
        self._closed = False  # a `close` came
        self._next: tuple[RunRequest, str] | None = None
        self._last: Result | None = None
        self._listed: tuple[str | None, str | None] | None = None  # the shell's cwd and program, as last written
        self._idle_since = clock()  # when its last command ended
        self._answered_at = clock()
        self._woke = clock()  # when this process began to serve

    def __getstate__(self) -> dict[str, object]:
        """What goes over to the next worker: all but the way to the keeper, which is its own."""
        return {**self.__dict__, "_keeper": None}

    def resume(self, run: Run, wakeup: Wakeup, keeper: KeeperLink) -> None:
        """Serve on, in a worker its keeper woke, from the wait for the next command where the
        last worker handed the shell over."""
        self._keeper = keeper
        self._woke = self._clock()
        try:
            self._serve_started(run, wakeup, self._wait_and_serve)
        finally:
            self._workdir.remove()

    def _new_command(self, shell: Session, command: str) -> Session:
        """The next command's own session: named now, made in the store when the holder is idle
        (its id given out meanwhile makes it at once); kept in the shell's journal instead when the
        command has ended by then (see `_command_ended`)."""
        session, started = self._store.reserve(), self._store.now()
        meta = {"shell_name": self._named.name, "holder_pid": self._holder_pid()}
        owed = self._unkept.later(partial(self._store.make, session, command, shell, meta, started=started))
        self._record = CommandRecord(session, command, meta, started, owed)
        return session

    def _holder_pid(self) -> int:
        """The holder's pid as callers know it: its keeper's, where it has one."""
        return os.getpid() if self._keeper is None else self._keeper.keeper_pid

    @property
    def _closing(self) -> bool:
        """A `close` came, or nobody can reach the shell any more: either way it ends."""
        return self._closed or self._unreachable

    @property
    def _idle_limit(self) -> float | None:
        """How long the shell waits for its next command."""
        return self.command.request.idle_expire

    # ---- its commands -------------------------------------------------------------------------

    def _serve_commands(self, run: Run, wakeup: Wakeup) -> None:
        """Each command to its end, then the wait for the next one."""
        while True:
            result = self._follow_command(run, wakeup)
            if self._closing or wakeup.pending or not run.shell_alive():
                self.final = self._last_words(run, result, wakeup.pending)
                return
            self._command_ended(result)
            run.close_unused()
            self._idle_since = self._clock()
            if not self._next_command(run, wakeup):
                return

    def _wait_and_serve(self, run: Run, wakeup: Wakeup) -> None:
        """A woken worker's commands: the wait its keeper woke it in, then on as ever."""
        if self._next_command(run, wakeup):
            self._serve_commands(run, wakeup)

    def _next_command(self, run: Run, wakeup: Wakeup) -> bool:
        """Wait for the next command and start it; False, with the shell's last words, when it is
        to end instead."""
        if self._start_next_command(run, wakeup):
            return True
        assert self._last is not None  # a command has ended before every wait
        self.final = self._last_words(run, self._last, wakeup.pending)
        return False

    def _start_next_command(self, run: Run, wakeup: Wakeup) -> bool:
        """Wait for the shell's next command and start it; False when the shell is to end instead.

        A command the shell would not parse, or a shell replaced by a program that is no shell, is
        answered at once and the wait goes on.
        """
        while True:
            self._next = None
            while self._next is None:
                if not self._between_commands(run, wakeup):
                    return False
            request, command = self._next
            try:
                run.next_command(request, command)
            except CommandRefused as refused:
                self._answer_refused(self._as_answer(run, refused.result, started=False))
                continue
            except RunFailed as exc:
                self._answer_refused(self._as_answer(run, error_result(request.command, str(exc)), started=False))
                continue
            self.command = Command(self._new_command(self.session, request.command), request, self._shown, self._output)
            run.set_output(self.command.chunks.write)
            return True

    def _as_answer(self, run: Run, result: Result, started: bool = True) -> Result:
        """A persistent shell's answer names the shell (see `answers.in_shell`); `started`: a
        command of its own, counted."""
        fresh = self._commands == 0
        if started:
            self._commands += 1
        return answers.in_shell(result, self._named, run.directory(), fresh)

    def _command_ended(self, result: Result) -> None:
        """A command ended: its result is kept under its own id for later polls, and everyone
        waiting about it gets it."""
        final = replace(result, session_id=None, recording=str(self.recording.path))
        self._last = final
        self.handed_out = True  # a persistent shell's record outlives it, to say how it ended
        if self.onlookers.count:  # a person there for this command alone is let go with its end
            self.onlookers.end(final.to_json().encode("utf-8"), self.command.session.id)
        for waiter in list(self.callers.waiters):
            if not waiter.closing:
                self.callers.answer(waiter, with_note(final, waiter.note))
        self._answered_at = self._clock()
        record = self._record
        journal = partial(self._store.journal, self.session, record.session, record.command, record.meta, final,
                          record.started)
        if not self._unkept.amend(record.owed, journal, len(final.output)):
            self._unkept.later(partial(self.command.session.save_result, final), len(final.output))
        listed = (result.cwd, result.shell.name if result.shell else None)
        if listed != self._listed:  # what `sessions` shows of the shell, written when it changes
            self._listed = listed
            self._unkept.later(partial(self.session.write_meta, cwd=listed[0], shell=listed[1]))
        # The answers are out: the caller reads this one while the oldest records are written.
        self._unkept.keep_beyond(OWED_MAX, OWED_OUTPUT_MAX)

    def _answer_refused(self, result: Result) -> None:
        """A next command that was never typed: its caller gets why, and the shell waits on."""
        for waiter in list(self.callers.waiters):
            if not waiter.closing:
                self.callers.answer(waiter, with_note(result, waiter.note))

    def _between_commands(self, run: Run, wakeup: Wakeup) -> bool:
        """One turn of waiting for the next command; False when the shell is to end."""
        fds = (wakeup.fd, *self.callers.fds(), *self.onlookers.fds())
        if not run.wait_between_commands(self._wait_between(), fds, self.writers()):
            return False
        if wakeup.pending or self._closing or not self._still_reachable():
            return False
        if wakeup.fd in run.woken:
            wakeup.drain()
        collect_adopted(run.terminal.pid)
        self._serve_onlookers(run)  # keys typed now go nowhere, not into the next command (and unsent output goes)
        self.callers.serve(self._handler(run), ready=run.woken)
        self.callers.deliver()
        if self._closing:
            return False
        if self._next is not None:
            return True
        if self._unkept and self._clock() - self._quiet_since() >= KEEP_AFTER_S:
            self._unkept.keep(until=lambda: bool(polling.readable(self.callers.fds(), 0)))
        if self._may_hand_over() and self._clock() >= self._hand_over_at():
            self._hand_over(run, wakeup)
        return self.callers.busy or not idle_expired(self._idle_since, self._clock(), self._idle_limit)

    # ---- its keeper ---------------------------------------------------------------------------

    def _may_hand_over(self) -> bool:
        """Nobody is asking, attached or owed anything: the keeper could keep the shell."""
        return (
            self._keeper is not None and self._keeper.open and not self._unkept and self._next is None
            and not self.callers.busy and not self.callers.waiters and self.onlookers.count == 0
        )

    def _hand_over_at(self) -> float:
        """When the shell, left alone, goes to its keeper: a while after the last thing done here."""
        return max(self._idle_since, self._quiet_since(), self._woke) + HIBERNATE_AFTER_S

    def _hand_over(self, run: Run, wakeup: Wakeup) -> None:
        """Give the shell to the keeper and end (see `processes.keeper`); if it cannot take it now,
        serve on, and try again once the shell has been left alone as long again."""
        terminal, keeper = run.terminal, self._keeper
        assert keeper is not None
        self._woke = self._clock()
        if not isinstance(terminal, Terminal) or terminal.pidfd is None or self._identity is None:
            return
        self.callers.close_kept()
        limit = self._idle_limit
        watch = Watch(
            master=terminal.fd, listener=self.callers.listener.fileno(), shell=terminal.pidfd,
            session=str(self.session.path), identity=self._identity,
            wake_at=None if limit is None else self._idle_since + limit,
        )
        keeper.hand_over(frozen((self, run)), watch, {wakeup.fd, wakeup.write_fd}, lambda: bool(wakeup.pending))

    def _wait_between(self) -> float:
        """How long the wait between commands may sleep: until the next thing due, the idle limit,
        or the time to write the records owed."""
        limit = self._idle_limit
        wait = self.wait_time()
        if limit is not None:
            wait = min(wait, max(0.0, self._idle_since + limit - self._clock()))
        if self._may_hand_over():
            wait = min(wait, max(0.0, self._hand_over_at() - self._clock()))
        if self._unkept:
            wait = min(wait, max(0.0, self._quiet_since() + KEEP_AFTER_S - self._clock()))
        return wait

    def _quiet_since(self) -> float:
        """Since when nothing was asked of the holder nor answered by it."""
        return max(self._asked, self._answered_at)

    def _last_words(self, run: Run, result: Result, signals: list[int]) -> Result:
        """The result kept once the shell is gone, saying why it went (also told to its next user):
        about the shell (status closed, `killed` what its end ended). A command that was running
        when it went gets its own result, with the same note, under its own id.
        """
        self._unkept.keep()  # its writes and these go to the same records
        why = answers.why_it_went(Going(
            unreachable=self._unreachable, closing=self._closing, signals=tuple(signals), shell_ended=run.shell_ended,
            shell_alive=run.shell_alive(), idle_limit=self._idle_limit,
        ))
        saved(lambda: self.session.write_meta(ended=why))
        note = answers.gone_note(self._named, why, self._say)
        stopped: tuple[Killed, ...] = ()
        if result is not self._last:  # it went with a command: what ending that command ended is the close's too
            self._command_ended(with_note(result, note))
            stopped = result.killed if self._closing else ()
        return answers.closed(result, self._named, note, stopped)

    def _write_owed(self) -> None:
        self._unkept.keep()

    def _keep_result(self, final: Result) -> None:
        """As a one-shot session's, and a command the shell never ran (it did not start) keeps the
        end as its own."""
        super()._keep_result(final)
        command = self.command.session
        if command.path.is_dir() and not command.result_path.exists():  # (one that ended is in the journal)
            saved(lambda: command.save_result(final))

    # ---- callers ------------------------------------------------------------------------------

    def _handle(self, conn: socket.socket, request: wire.Request, run: Run | None) -> None:
        if not isinstance(request, wire.Run):  # it may name a command, or read what was kept
            self._unkept.keep()
        super()._handle(conn, request, run)

    def _dispatch(self, call: Call) -> None:
        HANDLERS[type(call.request)](self, call)

    def _about_a_command(self, call: Call) -> None:
        """A request about a command: one that has ended is answered from its kept result, whatever
        the shell runs now; the shell's own id names no command; between commands the last one's
        result answers. The rest is about the running command."""
        about = self._about(call)
        current = self.command.session
        last = self._idle_answer(call.run)
        if about is not None and (about != current.id or current.result_path.exists()):
            self._answer_kept(call, about)
        elif about is None and isinstance(call.request, (wire.Poll, wire.Send, wire.Stop)):
            refusal = answers.not_a_command(self._named, current.id, self._say)
            self.callers.answer_now(call.conn, error_result(None, refusal))
        elif last is not None:
            self._answer_idle(call, last)
        else:
            COMMAND_HANDLERS[type(call.request)](self, call)

    def _about(self, call: Call) -> str | None:
        """The command a request names. The call that started a command (its first poll) is about
        it, and so is an interrupt."""
        about: str | None = getattr(call.request, "about", None)
        if about is None and (call.first or isinstance(call.request, wire.Interrupt)):
            return self.command.session.id
        return about

    def _answer_kept(self, call: Call, about: str) -> None:
        """A command that has ended, answered from its kept result."""
        kept = self._kept_result(about)
        answer = with_note(kept, NOT_TYPED) if isinstance(call.request, wire.Send) else kept
        self.callers.answer_now(call.conn, answer, first=call.first)

    def _kept_result(self, about: str) -> Result:
        """The kept result of a command of this shell that has ended; one the shell never had is
        answered so."""
        kept = Session(about, self.session.path.parent / about).load_result() if SESSION_ID.match(about) else None
        return kept if kept is not None else error_result(None, f"no command {about} in the shell {self._named.name}")

    def _attach(self, call: Call) -> None:
        """As any holder's; a person there for one command (`wire.Attach.about`) is let go at its
        end, and at once, with its result, when it has ended already."""
        request, run = call.request, call.run
        assert isinstance(request, wire.Attach)
        about = request.about
        if about is None or run is None or (about == self.command.session.id and self._idle_answer(run) is None):
            super()._attach(call)
            return
        ended = self._last if about == self.command.session.id and self._last is not None else self._kept_result(about)
        self.callers.release(call.conn)
        self.onlookers.join(call.conn, request.watch, b"", about)
        self.onlookers.end(ended.to_json().encode("utf-8"), about)

    def _idle_answer(self, run: Run | None) -> Result | None:
        """While the shell waits between commands, the last command's result, which answers every
        call about the shell then; None while a command runs (or the holder is ending)."""
        return self._last if run is not None and run.finish is not None else None

    def _answer_idle(self, call: Call, last: Result) -> None:
        note = NOT_TYPED if isinstance(call.request, wire.Send) else None
        extra = self._idle_attendance() if isinstance(call.request, wire.Status) else {}
        self.callers.answer_now(call.conn, with_note(last, note), extra)

    def _idle_attendance(self) -> dict[str, object]:
        """For `sessions`: how long the shell has had no command, and when its idle limit ends it."""
        limit = self._idle_limit
        return self._attendance(self._idle_since, None if limit is None else self._idle_since + limit)

    def _close(self, call: Call) -> None:
        """End the shell: its running command is stopped, and the caller hears how the shell went."""
        run = call.run
        if run is None:  # it is ending already
            self.callers.wait(call.conn, None)
            return
        self._closed = True
        if self._idle_answer(run) is None:
            run.stop()
        self.callers.wait(call.conn, None, closing=True)

    def _run(self, call: Call) -> None:
        """Take the next command, or answer `busy` while one runs or was just taken."""
        request, run = call.request, call.run
        assert isinstance(request, wire.Run)
        if run is None:  # it is ending already
            self.callers.wait(call.conn, None)
        elif self._idle_answer(run) is None or self._next is not None:
            self.callers.answer_now(call.conn, self._busy(run, request.command), keep=True)
        else:
            self._next = _next_command(self.command.request, request, run.shell.name)
            self.callers.wait(call.conn, call.deadline, first=True, keep=True)

    def _busy(self, run: Run, command: str) -> Result:
        self._unkept.keep()  # the answer names the running command
        running = self._next[0].command if self._next is not None else self.command.request.command
        return answers.busy(command, run.shell, running, self.command.session.id, self._named, self._say)


# Request type -> the method that handles it in a named shell.
HANDLERS: dict[type[wire.Request], Callable[[ShellHolder, Call], None]] = {
    **{kind: ShellHolder._about_a_command for kind in COMMAND_HANDLERS},
    wire.Close: ShellHolder._close,
    wire.Run: ShellHolder._run,
    wire.Attach: ShellHolder._attach,
}


def _next_command(base: RunRequest, request: wire.Run, shell: str) -> tuple[RunRequest, str]:
    """The request for a persistent shell's next command, and the text to type for it.

    A --cwd or --env given with a later command applies to that command alone (see the shell
    kind's `scoped`).
    """
    next_request = replace(
        base, command=request.command, timers=timers_from_dict(request.timers), max_output=request.max_output,
        log=None,
    )
    return next_request, kind_of(shell).scoped(request.command, request.cwd, request.env or {})


class Unkept:
    """A named shell's records of its commands (each one's line in the shell's journal, or its own
    session and result once its id was given out, the shell's record), written when nothing is
    asked of the holder rather than between a command's end and the next command.

    A line is one append, but it is encoded (a result of much output: milliseconds), and a
    session is four files made in the store, over a millisecond when the disk is busy, against
    about 1 ms for a whole warm call. Nothing may see the store behind the holder's back: every
    request but a `run`, an answer that names a command, and the holder's end first write all
    that is owed. A command whose id nobody was told is listed by `sessions` once the holder has
    been left alone for KEEP_AFTER_S, or once more than OWED_MAX writes, or OWED_OUTPUT_MAX of
    output, are owed after it.
    """

    def __init__(self) -> None:
        self._owed: deque[Owed] = deque()
        self._size = 0  # the output the owed results hold

    def __bool__(self) -> bool:
        return bool(self._owed)

    def later(self, write: Callable[[], object], size: int = 0) -> Owed:
        """`size`: the output the write holds on to until it is made."""
        owed = Owed(write, size)
        self._owed.append(owed)
        self._size += size
        return owed

    def amend(self, owed: Owed, write: Callable[[], object], size: int) -> bool:
        """Make `owed`, while it is still owed, by `write` instead, which holds `size` more output;
        False once it was made."""
        if owed.made:
            return False
        owed.write = write
        owed.size += size
        self._size += size
        return True

    def keep(self, until: Callable[[], bool] = lambda: False) -> None:
        """Write what is owed, in order, stopping early once `until()` (a caller is asking)."""
        while self._owed and not until():
            self._write_oldest()

    def keep_beyond(self, most: int, most_size: int) -> None:
        """Write the oldest of what is owed until at most `most` writes holding at most `most_size`
        of output are left, whoever is asking."""
        while len(self._owed) > most or self._size > most_size:
            self._write_oldest()

    def _write_oldest(self) -> None:
        owed = self._owed.popleft()
        self._size -= owed.size
        owed.made = True
        saved(owed.write)


@dataclass(frozen=True)
class CommandRecord:
    """What a command's own session is made of, and its making, owed until the holder is idle."""

    session: Session
    command: str
    meta: dict[str, object]
    started: float  # by the store's clock
    owed: Owed


@dataclass
class Owed:
    """A write owed to the store; `size`: the output it holds on to until it is made."""

    write: Callable[[], object]
    size: int = 0
    made: bool = False

"""The session holder: a detached process that owns one shell's terminal and answers callers.

It drives the same `Run` a foreground call does, so strategies, fallbacks, --timeout and clean-up
are the foreground's; what it adds is the socket. Callers ask to poll (now, or waiting for the end,
an input wait or their time limit), to send input, or to stop. Waiting is done by the run loop's
own poll, which watches the terminal, the socket and every caller together: an end is answered
the moment it is seen.

This is the run side: the command's life, and what each request does to it. `callers.py` is the
socket side (connections, requests, answers), and `launch.py` starts the holder's process.

A persistent shell (`--in NAME`) is a holder that outlives its command: between commands it waits
for the next `run` (one at a time: a `run` while a command runs is answered `busy`), a `close`,
or its idle limit, while it keeps reading what the shell prints so that nothing blocks.

Nothing it holds outlives every way to reach it: a holder whose session directory or socket is
gone (a temporary HOME removed) ends its command and its shell as `stop` and `close` do, and an
input wait that no call has asked about for the idle limit is stopped, with a result that says so.
A command that works is never stopped for being left alone.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from ..engine import polling
from ..engine.loop import follow
from ..engine.interrupts import Wakeup
from ..core.output import Chunks
from ..engine.recording import FILE_NAME as RECORDING_FILE, Recording
from ..core.request import RunRequest, timers_from_dict
from ..core.screen import ScreenTail
from ..core.result import Killed, Result, error_result
from ..engine.runner import CommandRefused, Run
from ..engine.shell_start import KeptShell, RunFailed
from ..shells import ShellNotFound
from ..shells.registry import kind_of
from ..engine.terminal import TerminalError
from ..engine.workdir import private_workdir
from . import wire
from ..core.answers import NOT_TYPED, with_note
from ..core import answers
from .adoption import collect_adopted
from ..core.answers import UNREACHABLE, Going, NamedShell
from .callers import Callers
from .onlookers import KeysAhead, Onlookers
from .orphans import process
from .store import SESSION_ID, Session, SessionStore
from ..core.phrases import BY_CALLER, COMMAND_LINE, Phrases
from .typist import Typist

# How long a command that ended at once waits for the caller that started it to ask.
FIRST_CALLER_WAIT_S = 5.0
# How often a holder makes sure callers can still reach it (its directory and socket are there):
# the one thing an idle session does, so its cost is an idle session's.
REACH_CHECK_S = 2.0
# A named shell's records of its commands are written once nothing was asked of it for this long.
KEEP_AFTER_S = 0.05


@dataclass(frozen=True)
class ShellPlan:
    """What makes a holder a persistent shell: the caller's name for it."""

    name: str
    fresh_note: str | None = None  # said in the first answer: why this is a new shell


def idle_expired(last_used: float, now: float, limit: float | None) -> bool:
    """Whether something nobody used (a shell without a command, an input wait nobody asked about)
    has been left longer than it may."""
    return limit is not None and now - last_used >= limit


class Command:
    """One command the holder follows, made once per command as `tracker.Command` is: its own
    session (the holder's, or in a named shell one of its own, `store.make(of_shell=...)`, kept
    with its result once it ended), what it was asked with, its output between answers, what
    callers type to it, and when its held input wait began. What is the shell's (callers, the
    recording, people attached, the commands before it) stays the holder's."""

    def __init__(self, session: Session, request: RunRequest, screen: Callable[[], ScreenTail | None]) -> None:
        self.session = session
        self.request = request
        rows, columns = request.size
        # A full-screen program's output is its screen (`screen`: the run's, once it has started).
        self.chunks = Chunks(request.max_output, (columns, rows), screen)
        self.typist: Typist | None = None  # once it is followed
        self.waiting_since: float | None = None


class Holder:
    """Serves one session from the start of its command until its result is saved.

    Nothing here waits on anyone: callers are read and answered without blocking (one that takes
    too long is dropped), and text goes into the terminal only as far as it is taken at once.
    """

    def __init__(
        self, session: Session, listener: socket.socket, request: RunRequest, clock: Callable[[], float] = time.monotonic,
        plan: ShellPlan | None = None, kept: KeptShell | None = None,
    ) -> None:
        """`kept`: a shell started ahead of this session (`shell_start.KeptShell`), for its run to take."""
        self.session = session
        self._kept = kept
        self.callers = Callers(listener, clock)
        self.plan = plan
        self._named = None if plan is None else NamedShell(session.id, plan.name, plan.fresh_note)
        self._clock = clock
        self._commands = 0
        self._closing = False
        self._idle = False  # the shell ended while it waited for a command, not with one
        self._next: tuple[RunRequest, str] | None = None
        self._last: Result | None = None
        self._listed: tuple[str | None, str | None] | None = None  # the shell's cwd and program, as last written
        self._screen: ScreenTail | None = None  # the run's, once it has started
        self.final: Result | None = None
        self.handed_out = False  # a caller was given the session id, so the session must outlive the command
        self._asked = clock()  # the last call about this session, of any kind
        self._idle_since = clock()  # a persistent shell: when its last command ended
        self._identity = session.identity()
        self._reach_checked = clock()
        self._unreachable = False
        self._unkept = Unkept()  # a named shell's records, written when nothing is asked (see `Unkept`)
        self._answered_at = clock()
        self.command = Command(session if plan is None else self._new_command(request.command), request, self._shown)
        rows, columns = request.size
        # The terminal as it went, for people to play back (see `recording`): the shell's whole life.
        self.recording = Recording(session.path / RECORDING_FILE, columns, rows, RECORDING_PER_OUTPUT * request.max_output)
        self.onlookers = Onlookers(self.recording)  # people attached (`attach`, `watch`), and the recording
        self.keys_ahead = KeysAhead()  # what they typed while the command did not read its terminal

    def serve(self, wakeup: Wakeup) -> None:
        """Serve until the command (or the persistent shell) ends; `wakeup` carries stop requests.

        The private directory goes after the answers: with a session nobody was told of, as part
        of the session's own directory (removing its files first cost a millisecond before them)."""
        with private_workdir(self.session.path) as workdir:
            run = self._start(workdir)
            if run is not None:
                self._record_shell(run)
                swept = []
                try:
                    self._serve_commands(run, wakeup)
                finally:
                    swept = run.close(idle=self._idle)
                if self.final is not None and swept:
                    self.final = replace(self.final, killed=(*self.final.killed, *swept))
            self.recording.close()
            self._finish()

    def _serve_commands(self, run: Run, wakeup: Wakeup) -> None:
        """Each command to its end; a persistent shell then waits for the next one."""
        while True:
            result = self._follow_command(run, wakeup)
            if self.plan is None or self._closing or wakeup.pending or not run.shell_alive():
                self.final = self._last_words(run, result, wakeup.pending)
                return
            self._command_ended(result)
            if not self._start_next_command(run, wakeup):
                self._idle = True
                self.final = self._last_words(run, self._last or result, wakeup.pending)
                return

    def _new_command(self, command: str) -> Session:
        """The next command's own session: named now, made in the store when the holder is idle."""
        assert self.plan is not None
        store = SessionStore(self.session.path.parent, sweep=False)
        session = store.reserve()
        self._unkept.later(partial(
            store.make, session, command, of_shell=self.session, shell_name=self.plan.name, holder_pid=os.getpid(),
        ))
        return session

    @property
    def _say(self) -> Phrases:
        """The next steps in the words of the front end that started the session."""
        return BY_CALLER.get(self.command.request.caller, COMMAND_LINE)

    @property
    def _idle_limit(self) -> float | None:
        """How long a named shell waits for its next command."""
        return self.command.request.idle_expire

    @property
    def _wait_limit(self) -> float | None:
        """How long an input wait nobody asks about is held; without end while a person is attached."""
        return None if self.onlookers.count else self.command.request.wait_expire

    def _follow_command(self, run: Run, wakeup: Wakeup) -> Result:
        typist = Typist(look=run.reading, write=run.answer, clock=self._clock)
        self.command.typist = typist
        follow(run, wakeup, _Turns(self, run))
        self.command.waiting_since = None  # it waits no more
        run.end_command()
        return self._shell_fields(run, with_note(run.result(), typist.discard()))

    def _start_next_command(self, run: Run, wakeup: Wakeup) -> bool:
        """Wait for the shell's next command and start it; False when the shell is to end instead.

        A command the shell would not parse, or a shell replaced by a program that is no shell, is
        answered at once and the wait goes on.
        """
        self._idle_since = self._clock()
        while True:
            self._next = None
            while self._next is None:
                if not self._between_commands(run, wakeup):
                    return False
            request, command = self._next
            try:
                run.next_command(request, command)
            except CommandRefused as refused:
                self._answer_refused(self._shell_fields(run, refused.result, started=False))
                continue
            except RunFailed as exc:
                self._answer_refused(self._shell_fields(run, error_result(request.command, str(exc)), started=False))
                continue
            self.command = Command(self._new_command(request.command), request, self._shown)
            run.set_output(self.command.chunks.write)
            return True

    def _shell_fields(self, run: Run, result: Result, started: bool = True) -> Result:
        """A persistent shell's answer names the shell (see `answers.in_shell`); `started`: a
        command of its own, counted."""
        if self._named is None:
            return result
        fresh = self._commands == 0
        if started:
            self._commands += 1
        return answers.in_shell(result, self._named, run.directory(), fresh)

    def _command_ended(self, result: Result) -> None:
        """A named shell's command ended: its result is kept under its own id for later polls, and
        everyone waiting about it gets it."""
        final = replace(result, session_id=None, recording=str(self.recording.path))
        self._last = final
        self.handed_out = True  # a persistent shell's record outlives it, to say how it ended
        for waiter in list(self.callers.waiters):
            if not waiter.closing:
                self.callers.answer(waiter, with_note(final, waiter.note))
        self._answered_at = self._clock()
        self._unkept.later(partial(self.command.session.save_result, final))
        listed = (result.cwd, result.shell.name if result.shell else None)
        if listed != self._listed:  # what `sessions` shows of the shell, written when it changes
            self._listed = listed
            self._unkept.later(partial(self.session.write_meta, cwd=listed[0], shell=listed[1]))

    def _answer_refused(self, result: Result) -> None:
        """A next command that was never typed: its caller gets why, and the shell waits on."""
        for waiter in list(self.callers.waiters):
            if not waiter.closing:
                self.callers.answer(waiter, with_note(result, waiter.note))

    def _between_commands(self, run: Run, wakeup: Wakeup) -> bool:
        """One turn of waiting for the next command; False when the shell is to end."""
        limit = self._idle_limit
        wait = self.wait_time()
        if limit is not None:
            until = max(0.0, self._idle_since + limit - self._clock())
            wait = until if wait is None else min(wait, until)
        if self._unkept:
            wait = min(wait, max(0.0, self._quiet_since() + KEEP_AFTER_S - self._clock()))
        if not run.wait_between_commands(wait, (wakeup.fd, *self.callers.fds(), *self.onlookers.fds()), self.writers()):
            return False
        if wakeup.pending or self._closing or not self._still_reachable():
            return False
        wakeup.drain()
        collect_adopted(run.terminal.pid)
        self._serve_onlookers(run)  # keys typed now go nowhere, not into the next command (and unsent output goes)
        self.callers.serve(self._handler(run))
        self.callers.deliver()
        if self._closing:
            return False
        if self._next is not None:
            return True
        if self._unkept and self._clock() - self._quiet_since() >= KEEP_AFTER_S:
            self._unkept.keep(until=lambda: bool(polling.readable(self.callers.fds(), 0)))
        return self.callers.busy or not idle_expired(self._idle_since, self._clock(), limit)

    def _quiet_since(self) -> float:
        """Since when nothing was asked of the holder nor answered by it."""
        return max(self._asked, self._answered_at)

    def _last_words(self, run: Run, result: Result, signals: list[int]) -> Result:
        """The result kept once the shell is gone, saying why it went (also told to its next user).

        A named shell's is about the shell (status closed, `killed` what its end ended); a command
        that was running when it went gets its own result, with the same note, under its own id.
        """
        if self._named is None:
            return result
        self._unkept.keep()  # its writes and these go to the same records
        why = answers.why_it_went(Going(
            unreachable=self._unreachable, closing=self._closing, signals=tuple(signals), shell_ended=run.shell_ended,
            shell_alive=run.shell_alive(), idle_limit=self._idle_limit,
        ))
        _saved(lambda: self.session.write_meta(ended=why))
        note = answers.gone_note(self._named, why, self._say)
        stopped: tuple[Killed, ...] = ()
        if result is not self._last:  # it went with a command: what ending that command ended is the close's too
            self._command_ended(with_note(result, note))
            stopped = result.killed if self._closing else ()
        return answers.closed(result, self._named, note, stopped)

    def _shown(self) -> ScreenTail | None:
        """The run's screen, once it has started: a full-screen program's output is its screen."""
        return self._screen

    def _start(self, workdir: Path) -> Run | None:
        kept, self._kept = self._kept, None
        try:
            run = Run(self.command.request, workdir, self._clock, on_output=self.command.chunks.write,
                      audience=self.onlookers, kept=kept)
            self._screen = run.tracker.screen
            return run
        except CommandRefused as refused:
            self.final = refused.result
        except (ShellNotFound, TerminalError, RunFailed) as exc:
            self.final = error_result(self.command.request.command, str(exc))
        if kept is not None:
            kept.close()
        return None

    def _record_shell(self, run: Run) -> None:
        """What a later call needs to end the command's leftovers if this process is killed."""
        shell = process(run.terminal.pid)
        if shell is not None:
            self.session.write_shell(shell.pid, shell.start)

    def turn(self, run: Run) -> None:
        """Between two steps of a command: callers, text waiting to be typed, answers due."""
        typist = self.command.typist
        assert typist is not None
        collect_adopted(run.terminal.pid)
        self.callers.serve(self._handler(run))
        self._serve_onlookers(run)
        typist.tick()
        if not self._still_reachable():
            run.stop(UNREACHABLE)
        self._expire_unattended_wait(run)
        self._answer_due(run)
        self.callers.deliver()

    def _serve_onlookers(self, run: Run) -> None:
        """What the people attached typed goes to the command while it reads its terminal (see
        `KeysAhead`), and nowhere between a named shell's commands: the shell's prompt is for
        safe-run's lines. Their size becomes the terminal's, and the terminal's own comes back
        once the last one who types has left."""
        asked = self.onlookers.serve()
        self.keys_ahead.add(asked.keys)
        if run.finish is not None:
            self.keys_ahead.drop()
        elif self.keys_ahead.pending:
            keys = self.keys_ahead.due(run.reading(fresh=bool(asked.keys)).reading)
            if keys:
                self.keys_ahead.put_back(keys[run.answer(keys):])
        if asked.left:
            self._asked = max(self._asked, self._clock())  # the wait is unattended from now on
        if asked.size is not None:
            run.resize(*asked.size)
        elif asked.left and self.onlookers.typing == 0:
            run.resize(*self.command.request.size)

    def _attach(self, conn: socket.socket, request: wire.Attach, run: Run | None) -> None:
        """A person joins: the screen as it is now, then everything the terminal prints. One who
        types gives the terminal their size (the program redraws for it)."""
        self.callers.release(conn)
        if run is None:  # the command ended as the person came: they see its end, as those there did
            assert self.final is not None
            self.onlookers.join(conn, request.watch, b"")
            self.onlookers.end(self._told(self.final).to_json().encode("utf-8"))
            return
        self.onlookers.join(conn, request.watch, run.redraw(request.rows, request.columns))
        if not request.watch:
            run.resize(request.rows, request.columns)

    def _told(self, final: Result) -> Result:
        """The result as the session's end tells it: no session any more, and the recording kept
        only with a session someone was told of (the others go, and it with them)."""
        return replace(final, session_id=None, recording=str(self.recording.path) if self.handed_out else None)

    def _still_reachable(self) -> bool:
        """Checked every REACH_CHECK_S: a holder nobody can reach ends what it holds (see the module)."""
        now = self._clock()
        if not self._unreachable and now - self._reach_checked >= REACH_CHECK_S:
            self._reach_checked = now
            if not self.session.reachable(self._identity):
                self._unreachable = self._closing = True
        return not self._unreachable

    def _expire_unattended_wait(self, run: Run) -> None:
        """An input wait that no call has asked about for the idle limit is stopped: an agent that
        moved on would otherwise leave it (a REPL, a pager, an editor) for ever."""
        command = self.command
        if run.waiting is None or run.waiting.reads_keyboard:
            command.waiting_since = None  # a listener is a program at work: never stopped for being alone
            return
        now = self._clock()
        if command.waiting_since is None:
            command.waiting_since = now
        limit = self._wait_limit
        if idle_expired(max(self._asked, command.waiting_since), now, limit) and limit is not None:
            run.expire_wait(limit)

    def _expiry(self, asked: float | None = None) -> float | None:
        """When the held input wait is stopped if nobody asks about it (after `asked`) before."""
        limit, since = self._wait_limit, self.command.waiting_since
        if since is None or limit is None:
            return None
        return max(self._asked if asked is None else asked, since) + limit

    def _attendance(self, asked: float, idle: bool) -> dict[str, object]:
        """For `sessions`: how long nobody asked about it (a shell between commands: had none), and
        in how many seconds it ends for that (None: never, a command at work)."""
        now = self._clock()
        limit = self._idle_limit
        if idle:
            ends = None if limit is None else self._idle_since + limit
            return {"idle_s": now - self._idle_since, "expires_in_s": None if ends is None else max(0.0, ends - now),
                    "attached": self.onlookers.count}
        expiry = self._expiry(asked)
        return {"idle_s": now - asked, "expires_in_s": None if expiry is None else max(0.0, expiry - now),
                "attached": self.onlookers.count}

    def _finish(self) -> None:
        """Answer everyone, keep the result for whoever may still ask, and go; a session nobody was
        told of goes too."""
        assert self.final is not None
        self._unkept.keep()
        final = self._told(self.final)
        if self.onlookers.count:  # a result of a megabyte of output takes milliseconds to encode
            self.onlookers.end(final.to_json().encode("utf-8"))
        callers = self.callers
        # A session someone was told of keeps its result before anyone hears of its end: a caller
        # told of it looks for that result to know the shell is gone. One nobody was told of
        # keeps it only for a first caller yet to come (a flushed file is a good part of the end).
        if self.handed_out:
            _saved(lambda: self.session.save_result(final))  # nowhere to keep it once the directory is gone
        command = self.command.session
        if command is not self.session and not command.result_path.exists():
            _saved(lambda: command.save_result(final))  # the shell never ran it (it did not start)
        self._answer_all(final)
        if not self.handed_out and not callers.first_answered:
            _saved(lambda: self.session.save_result(final))
        give_up = self._clock() + FIRST_CALLER_WAIT_S
        while True:
            self._answer_all(final)
            callers.deliver()
            # The caller that started the session may connect after the end; a named shell's is
            # still owed its first command's result (what the shell left is the shell's own end).
            expecting = not callers.first_answered and self._clock() < give_up
            if not expecting and not callers.sending:
                break
            deadlines = ([give_up] if expecting else []) + callers.sending_deadlines()
            callers.serve(self._handler(None), max(0.0, min(deadlines) - self._clock()), accept=expecting)
        callers.listener.close()
        self.session.socket_path.unlink(missing_ok=True)
        if not self.handed_out:
            self.session.remove()

    def _answer_all(self, final: Result) -> None:
        """Answer everyone waiting. A session nobody else can name is gone before the caller that
        started it hears how it ended, so that whatever that caller does next (`sessions`) finds
        nothing of it."""
        if not self.handed_out and any(waiter.first for waiter in self.callers.waiters):
            self.session.remove()
        for waiter in list(self.callers.waiters):
            self.callers.answer(waiter, with_note(final, waiter.note))

    # ---- callers ------------------------------------------------------------------------------

    def writers(self) -> list[int]:
        """Who is owed bytes that did not fit: callers taking an answer, people attached behind."""
        return [*self.callers.writers(), *self.onlookers.writers()]

    def wait_time(self) -> float:
        """Until the next thing due: a caller's answer or drop, the reach check, an unattended wait's end."""
        deadlines = [*self.callers.deadlines(), self._reach_checked + REACH_CHECK_S]
        expiry = self._expiry()
        if expiry is not None:
            deadlines.append(expiry)
        return max(0.0, min(deadlines) - self._clock())

    def _handler(self, run: Run | None) -> Callable[[socket.socket, wire.Request], None]:
        return lambda conn, request: self._handle(conn, request, run)

    def _handle(self, conn: socket.socket, request: wire.Request, run: Run | None) -> None:
        if not isinstance(request, wire.Run):  # it may name a command, or read what was kept
            self._unkept.keep()
        now = self._clock()
        asked, self._asked = self._asked, now
        deadline = now + wire.wait_of(request)
        first = isinstance(request, wire.Poll) and request.first
        if isinstance(request, wire.Attach):
            self._attach(conn, request, run)
            return
        if self.plan is not None and self._handle_command_of_shell(conn, request, first):
            return
        if self.plan is not None and run is not None and self._handle_shell(conn, request, run, deadline, asked):
            return
        typist = self.command.typist
        if run is None or run.finish is not None or typist is None:
            note = NOT_TYPED if isinstance(request, wire.Send) else None
            self.callers.wait(conn, None, first=first, note=note)
            return
        if isinstance(request, (wire.Poll, wire.Status)) and run.waiting is not None:
            run.take_a_look()  # a held wait is looked at seldom while nobody asks (`tracker.HELD_LOOK_S`)
        match request:
            case wire.Poll():
                self.callers.wait(conn, deadline, first=first)
            case wire.Send(text=text, keys=keys, queue=queue):
                outcome = typist.send(text.encode("utf-8", "replace"), keys.encode("utf-8", "replace"), queue)
                self.callers.wait(conn, deadline if outcome.typed else now, note=outcome.note)
            case wire.Stop(why=why):
                run.stop(why or self._say.stopped)
                self.callers.wait(conn, None)
            case wire.Interrupt(signal=name):
                run.interrupt(signal.Signals.__members__.get(name, signal.SIGINT))
                self.callers.wait(conn, None)
            case wire.Status():
                self.callers.answer_now(conn, self._progress(run, take_output=False), self._attendance(asked, False))
            case _:  # a shell's request to a one-shot session
                self.callers.drop(conn)

    def _handle_command_of_shell(self, conn: socket.socket, request: wire.Request, first: bool) -> bool:
        """A named shell's requests name the command they are about: one that has ended is answered
        from its kept result, whatever the shell runs now; the shell's own id names no command. The
        call that started a command (its first poll, its `run`) is about it, and so is its interrupt."""
        assert self.plan is not None
        about = getattr(request, "about", None)
        if about is None and (first or isinstance(request, wire.Interrupt)):
            about = self.command.session.id
        if about is not None and (about != self.command.session.id or self.command.session.result_path.exists()):
            kept = Session(about, self.session.path.parent / about).load_result() if SESSION_ID.match(about) else None
            if kept is None:
                kept = error_result(None, f"no command {about} in the shell {self.plan.name}")
            answer = with_note(kept, NOT_TYPED) if isinstance(request, wire.Send) else kept
            self.callers.answer_now(conn, answer, first=first)
            return True
        if about is None and isinstance(request, (wire.Poll, wire.Send, wire.Stop)):
            assert self._named is not None
            refusal = answers.not_a_command(self._named, self.command.session.id, self._say)
            self.callers.answer_now(conn, error_result(None, refusal))
            return True
        return False

    def _handle_shell(self, conn: socket.socket, request: wire.Request, run: Run, deadline: float, asked: float) -> bool:
        """What only a persistent shell answers: run, close, and any call between commands."""
        idle = run.finish is not None and self._last is not None
        if isinstance(request, wire.Close):
            self._closing = True
            if not idle:
                run.stop()
            self.callers.wait(conn, None, closing=True)
            return True
        if isinstance(request, wire.Run) and (not idle or self._next is not None):  # one running, or one just taken
            self.callers.answer_now(conn, self._busy(run, request.command))
            return True
        if isinstance(request, wire.Run):
            self._next = _next_command(self.command.request, request, run.shell.name)
            self.callers.wait(conn, deadline, first=True)
            return True
        if idle and self._last is not None:
            note = NOT_TYPED if isinstance(request, wire.Send) else None
            extra = self._attendance(asked, idle=True) if isinstance(request, wire.Status) else {}
            self.callers.answer_now(conn, with_note(self._last, note), extra)
            return True
        return False

    def _busy(self, run: Run, command: str) -> Result:
        assert self._named is not None
        self._unkept.keep()  # the answer names the running command
        running = self._running_command()
        return answers.busy(command, run.shell, running, self.command.session.id, self._named, self._say)

    def _running_command(self) -> str:
        """The command the shell runs, or the one it has just taken and is about to type."""
        return self._next[0].command if self._next is not None else self.command.request.command

    def _answer_due(self, run: Run) -> None:
        now = self._clock()
        waiting = run.waiting is not None
        for waiter in list(self.callers.waiters):
            if waiter.deadline is not None and (waiting or now >= waiter.deadline):
                self.callers.answer(waiter, with_note(self._progress(run), waiter.note))

    def _progress(self, run: Run, take_output: bool = True) -> Result:
        """Where the command stands, with the output since the last answer and what to do next."""
        self._unkept.keep()  # the answer names the command
        command = self.command
        progress = replace(run.progress(), session_id=command.session.id, recording=str(self.recording.path))
        result = self._shell_fields(run, progress, started=False)
        if not take_output:
            return answers.progress(result, command.session.id, self._say)
        self.handed_out = True
        notes = None if command.typist is None else command.typist.take_notes()
        return answers.progress(result, command.session.id, self._say, command.chunks.take(), notes)

# A recording may grow to this many times the output a result keeps (escape sequences, timing).
RECORDING_PER_OUTPUT = 4


class _Turns:
    """The holder as the loop's watcher: its callers wake the loop and are served between steps."""

    def __init__(self, holder: Holder, run: Run) -> None:
        self._holder = holder
        self._run = run

    def wait_time(self) -> float | None:
        return self._holder.wait_time()

    def fds(self) -> list[int]:
        return [*self._holder.callers.fds(), *self._holder.onlookers.fds()]

    def writers(self) -> list[int]:
        return self._holder.writers()

    def turn(self) -> int | None:
        self._holder.turn(self._run)
        return None


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
    """A named shell's records of its commands (each one's own session, its result, the shell's
    record), written when nothing is asked of the holder rather than between a command's end and
    the next command.

    Each is a file made in the store: 0.2 ms on ext4 here, and over a millisecond when the disk is
    busy, several per command, against about 1 ms for a whole warm call. Nothing may see the store
    behind the holder's back: every request but a `run`, an answer that names a command, and the
    holder's end first write all that is owed. A command whose id nobody was told is listed by
    `sessions` once the holder has been left alone for KEEP_AFTER_S.
    """

    def __init__(self) -> None:
        self._owed: deque[Callable[[], object]] = deque()

    def __bool__(self) -> bool:
        return bool(self._owed)

    def later(self, write: Callable[[], object]) -> None:
        self._owed.append(write)

    def keep(self, until: Callable[[], bool] = lambda: False) -> None:
        """Write what is owed, in order, stopping early once `until()` (a caller is asking)."""
        while self._owed and not until():
            _saved(self._owed.popleft())


def _saved(write: Callable[[], object]) -> None:
    """A write into the session directory, which may be gone: then there is nobody to tell."""
    try:
        write()
    except OSError:
        pass

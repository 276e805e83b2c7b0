"""Runs in a session's holder, of either kind: what both share, the run of one shell's terminal,
and what a request about its command does.

A holder drives the same `Run` a foreground call does, so strategies, fallbacks, --timeout and
clean-up are the foreground's; what it adds is the socket. Callers ask to poll (now, or waiting for
the end, an input wait or their time limit), to send input, or to stop. Waiting is done by the run
loop's own poll, which watches the terminal, the socket and every caller together: an end is
answered the moment it is seen.

`Holder` is the part the two kinds have alike: starting the run, each turn of the loop (callers,
people attached, reach checks, unattended input waits), and the end (everyone answered, the result
kept for whoever may still ask). A request goes to its kind's table (`_dispatch`), and both tables
take the requests about a command (`COMMAND_HANDLERS`) from here: a one-shot session hands them
over as they come, a named shell first decides which of its commands they are about. Where the
kinds differ in what they serve (one command, or one after another) or answer (a named shell's
answers name it), a kind says so in its own class, decided once, when `holder.make_holder` picks
it.

Nothing it holds outlives every way to reach it: a holder whose session directory or socket is
gone (a temporary HOME removed) ends its command and its shell as `stop` and `close` do, and an
input wait that no call has asked about for the idle limit is stopped, with a result that says so.
A command that works is never stopped for being left alone.
"""

from __future__ import annotations

import signal
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.answers import NOT_TYPED, UNREACHABLE, with_note
from ..core import answers
from ..core.output import Chunks, HeadTail
from ..core.phrases import BY_CALLER, COMMAND_LINE, Phrases
from ..core.request import RunRequest
from ..core.result import Result, error_result
from ..core.screen import ScreenTail
from ..core.tracker import CommandTracker
from ..engine.interrupts import Wakeup
from ..engine.loop import follow
from ..engine.recording import FILE_NAME as RECORDING_FILE, Recording
from ..engine.runner import CommandRefused, Run
from ..engine.shell_start import KeptShell, RunFailed
from ..engine.terminal import TerminalError
from ..engine.workdir import HeldDirectory
from ..shells import ShellNotFound
from . import wire
from .adoption import collect_adopted
from .callers import Callers
from .onlookers import KeysAhead, Onlookers
from .orphans import process
from .store import Session
from .typist import Typist

# How long a command that ended at once waits for the caller that started it to ask.
FIRST_CALLER_WAIT_S = 5.0
# How often a holder makes sure callers can still reach it (its directory and socket are there):
# the one thing an idle session does, so its cost is an idle session's.
REACH_CHECK_S = 2.0
# A recording may grow to this many times the output a result keeps (escape sequences, timing).
RECORDING_PER_OUTPUT = 4
# An answer too large for its socket goes on out before the shell is hung up while its caller
# takes more within this.
ANSWER_PATIENCE_S = 0.05


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

    def __init__(
        self, session: Session, request: RunRequest, screen: Callable[[], ScreenTail | None],
        output: Callable[[], tuple[HeadTail, int]],
    ) -> None:
        """`screen`: the run's, once it has started (a full-screen program's output is its screen);
        `output`: the command's output as the run keeps it (`CommandTracker.passed_on`), which the
        output between answers is cut from until an answer takes some."""
        self.session = session
        self.request = request
        rows, columns = request.size
        self.chunks = Chunks(request.max_output, (columns, rows), screen, output)
        self.typist: Typist | None = None  # once it is followed
        self.waiting_since: float | None = None


@dataclass(frozen=True)
class Call:
    """One request as a handler takes it: the connection to answer, the run (None once the holder
    is ending), when it came, and when the call before it came (`asked`, for how long nobody
    asked)."""

    conn: socket.socket
    request: wire.Request
    run: Run | None
    now: float
    asked: float

    @property
    def deadline(self) -> float:
        """Until when the caller may be kept waiting for its answer."""
        return self.now + wire.wait_of(self.request)

    @property
    def first(self) -> bool:
        """The call that started the session (or a named shell's first command), about it."""
        return isinstance(self.request, wire.Poll) and self.request.first


class Holder(ABC):
    """Serves one session from the start of its shell until its result is saved.

    Nothing here waits on anyone: callers are read and answered without blocking (one that takes
    too long is dropped), and text goes into the terminal only as far as it is taken at once.
    """

    def __init__(
        self, session: Session, listener: socket.socket, request: RunRequest, first: Session,
        kept: KeptShell | None = None, clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`first`: the first command's own session; `kept`: a shell started ahead of this session
        (`shell_start.KeptShell`), for its run to take."""
        self.session = session
        self._kept = kept
        self.callers = Callers(listener, clock)
        self._clock = clock
        self._screen: ScreenTail | None = None  # the run's, once it has started
        self._tracker: CommandTracker | None = None  # likewise
        self.final: Result | None = None
        self.handed_out = False  # a caller was given the session id, so the session must outlive the command
        self._asked = clock()  # the last call about this session, of any kind
        self._identity = session.identity()
        self._reach_checked = clock()
        self._unreachable = False
        self.command = Command(first, request, self._shown, self._output)
        rows, columns = request.size
        # The terminal as it went, for people to play back (see `recording`): the shell's whole life.
        self.recording = Recording(session.path / RECORDING_FILE, columns, rows, RECORDING_PER_OUTPUT * request.max_output)
        self.onlookers = Onlookers(self.recording)  # people attached (`attach`, `watch`), and the recording
        self.keys_ahead = KeysAhead()  # what they typed while the command did not read its terminal

    # ---- what a kind decides ------------------------------------------------------------------

    @abstractmethod
    def _serve_commands(self, run: Run, wakeup: Wakeup) -> None:
        """Follow the commands this holder runs and set `final`."""

    @abstractmethod
    def _dispatch(self, call: Call) -> None:
        """Hand a request to the handler its kind's table names for it."""

    def _as_answer(self, run: Run, result: Result, started: bool = True) -> Result:
        """An answer as the kind gives it (a one-shot session's: its command's alone); `started`:
        about a command of its own, counted."""
        return result

    def _write_owed(self) -> None:
        """Write the records the holder still owes (a one-shot session's were made before it
        started), before an answer that names a command or the end."""

    def _keep_result(self, final: Result) -> None:
        """A session someone was told of keeps its result before anyone hears of its end: a caller
        told of it looks for that result to know the shell is gone."""
        if self.handed_out:
            saved(lambda: self.session.save_result(final))  # nowhere to keep it once the directory is gone

    # ---- the run ------------------------------------------------------------------------------

    def serve(self, wakeup: Wakeup) -> None:
        """Serve until the command (or the persistent shell) ends; `wakeup` carries stop requests.

        The private directory goes after the answers: with a session nobody was told of, as part
        of the session's own directory (removing its files first cost a millisecond before them).
        A shell still at work of its own after its command is hung up once everyone waiting is
        answered (`Run.hang_up`)."""
        self._workdir = HeldDirectory.make(self.session.path)
        try:
            self._serve_started(self._start(self._workdir.path), wakeup, self._first_commands)
        finally:
            self._workdir.remove()

    def _serve_started(self, run: Run | None, wakeup: Wakeup, commands: Callable[[Run, Wakeup], None]) -> None:
        """The `commands`, then the end; a named shell's later worker starts here too."""
        try:
            if run is not None:
                self._serve_run(run, wakeup, commands)
            self.recording.close()
            self._finish(run)
        finally:
            if run is not None:
                run.hang_up()

    def _first_commands(self, run: Run, wakeup: Wakeup) -> None:
        self._record_shell(run)
        self._serve_commands(run, wakeup)

    def _serve_run(self, run: Run, wakeup: Wakeup, commands: Callable[[Run, Wakeup], None]) -> None:
        """The commands, then the shell's end: what ending it ended is the result's too."""
        try:
            commands(run, wakeup)
        finally:
            swept = run.close()
        if self.final is not None and swept:
            self.final = replace(self.final, killed=(*self.final.killed, *swept))

    def _start(self, workdir: Path) -> Run | None:
        kept, self._kept = self._kept, None
        try:
            run = Run(self.command.request, workdir, self._clock, on_output=self.command.chunks.write,
                      audience=self.onlookers, kept=kept)
            self._screen, self._tracker = run.tracker.screen, run.tracker
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

    def _follow_command(self, run: Run, wakeup: Wakeup) -> Result:
        typist = Typist(look=run.reading, write=run.answer, clock=self._clock)
        self.command.typist = typist
        follow(run, wakeup, _Turns(self, run))
        self.command.waiting_since = None  # it waits no more
        run.end_command()
        return self._as_answer(run, with_note(run.result(), typist.discard()))

    def _shown(self) -> ScreenTail | None:
        """The run's screen, once it has started: a full-screen program's output is its screen."""
        return self._screen

    def _output(self) -> tuple[HeadTail, int]:
        """The command's output as the run keeps it; none before the run has started."""
        return self._tracker.passed_on() if self._tracker is not None else (HeadTail(0, 0), 0)

    @property
    def _say(self) -> Phrases:
        """The next steps in the words of the front end that started the session."""
        return BY_CALLER.get(self.command.request.caller, COMMAND_LINE)

    @property
    def _wait_limit(self) -> float | None:
        """How long an input wait nobody asks about is held; without end while a person is attached."""
        return None if self.onlookers.count else self.command.request.wait_expire

    def turn(self, run: Run) -> None:
        """Between two steps of a command: callers, text waiting to be typed, answers due."""
        typist = self.command.typist
        assert typist is not None
        collect_adopted(run.terminal.pid)
        self.callers.serve(self._handler(run), ready=run.woken)
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

    def _still_reachable(self) -> bool:
        """Checked every REACH_CHECK_S: a holder nobody can reach ends what it holds (see the module)."""
        now = self._clock()
        if not self._unreachable and now - self._reach_checked >= REACH_CHECK_S:
            self._reach_checked = now
            if not self.session.reachable(self._identity):
                self._unreachable = True
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

    def _attendance(self, since: float, ends: float | None) -> dict[str, object]:
        """For `sessions`: how long nobody asked about it (a shell between commands: had none,
        since `since`), and in how many seconds it ends for that (None: never, a command at work)."""
        now = self._clock()
        return {"idle_s": now - since, "expires_in_s": None if ends is None else max(0.0, ends - now),
                "attached": self.onlookers.count}

    # ---- the end ------------------------------------------------------------------------------

    def _finish(self, run: Run | None) -> None:
        """Answer everyone, keep the result for whoever may still ask, and go; a session nobody was
        told of goes too. The shell is hung up once those waiting are answered."""
        assert self.final is not None
        self._write_owed()
        final = self._told(self.final)
        if self.onlookers.count:  # a result of a megabyte of output takes milliseconds to encode
            self.onlookers.end(final.to_json().encode("utf-8"))
        self._keep_result(final)
        self.callers.close_kept(ending=True)  # a request sent on one since finds the result kept above
        self._answer_all(final)
        self.callers.deliver_while_taken(ANSWER_PATIENCE_S)
        if run is not None:
            run.hang_up()
        # One nobody was told of keeps its result only for a first caller yet to come (a flushed
        # file is a good part of the end).
        if not self.handed_out and not self.callers.first_answered:
            saved(lambda: self.session.save_result(final))
        self._await_first_caller(final)
        self.callers.listener.close()
        self.session.socket_path.unlink(missing_ok=True)
        if not self.handed_out:
            self.session.remove()

    def _await_first_caller(self, final: Result) -> None:
        """The caller that started the session may connect after the end; a named shell's is still
        owed its first command's result (what the shell left is the shell's own end). Answers
        that did not fit go out meanwhile."""
        callers = self.callers
        give_up = self._clock() + FIRST_CALLER_WAIT_S
        while True:
            self._answer_all(final)
            callers.deliver()
            expecting = not callers.first_answered and self._clock() < give_up
            if not expecting and not callers.sending:
                return
            deadlines = ([give_up] if expecting else []) + callers.sending_deadlines()
            callers.serve(self._handler(None), max(0.0, min(deadlines) - self._clock()), accept=expecting)

    def _answer_all(self, final: Result) -> None:
        """Answer everyone waiting. A session nobody else can name is out of sight before the
        caller that started it hears how it ended, so that whatever that caller does next
        (`sessions`) finds nothing of it; its files go after (`_finish`)."""
        if not self.handed_out and any(waiter.first for waiter in self.callers.waiters):
            self.session = self.session.put_away()
        for waiter in list(self.callers.waiters):
            self.callers.answer(waiter, with_note(final, waiter.note))

    def _told(self, final: Result) -> Result:
        """The result as the session's end tells it: no session any more, and the recording kept
        only with a session someone was told of (the others go, and it with them)."""
        return replace(final, session_id=None, recording=str(self.recording.path) if self.handed_out else None)

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
        now = self._clock()
        call = Call(conn, request, run, now, self._asked)
        self._asked = now
        self._dispatch(call)

    def _running(self, call: Call) -> Run | None:
        """The run while its command goes on; None once it has ended (or the holder is ending),
        when every request about it is answered with that end."""
        run = call.run
        if run is None or run.finish is not None or self.command.typist is None:
            return None
        return run

    @staticmethod
    def _look(run: Run) -> None:
        """A held wait is looked at seldom while nobody asks (`tracker.HELD_LOOK_S`): a caller asking
        where it stands gets a fresh look."""
        if run.waiting is not None:
            run.take_a_look()

    def _poll(self, call: Call) -> None:
        run = self._running(call)
        if run is not None:
            self._look(run)
        self.callers.wait(call.conn, None if run is None else call.deadline, first=call.first)

    def _send(self, call: Call) -> None:
        request = call.request
        assert isinstance(request, wire.Send)
        typist = self.command.typist
        if self._running(call) is None or typist is None:
            self.callers.wait(call.conn, None, note=NOT_TYPED)
            return
        outcome = typist.send(request.text.encode("utf-8", "replace"), request.keys.encode("utf-8", "replace"),
                              request.queue)
        self.callers.wait(call.conn, call.deadline if outcome.typed else call.now, note=outcome.note)

    def _stop(self, call: Call) -> None:
        request = call.request
        assert isinstance(request, wire.Stop)
        run = self._running(call)
        if run is not None:
            run.stop(request.why or self._say.stopped)
        self.callers.wait(call.conn, None)

    def _interrupt(self, call: Call) -> None:
        request = call.request
        assert isinstance(request, wire.Interrupt)
        run = self._running(call)
        if run is not None and run.interrupt(signal.Signals.__members__.get(request.signal, signal.SIGINT), request.typed):
            self.callers.answer_now(call.conn, self._progress(run, take_output=False))
            return
        self.callers.wait(call.conn, None)

    def _status(self, call: Call) -> None:
        run = self._running(call)
        if run is None:
            self.callers.wait(call.conn, None)
            return
        self._look(run)
        progress = self._progress(run, take_output=False)
        self.callers.answer_now(call.conn, progress, self._attendance(call.asked, self._expiry(call.asked)))

    def _attach(self, call: Call) -> None:
        """A person joins: the screen as it is now, then everything the terminal prints. One who
        types gives the terminal their size (the program redraws for it)."""
        request, run = call.request, call.run
        assert isinstance(request, wire.Attach)
        early = self.callers.release(call.conn)
        if run is None:  # the command ended as the person came: they see its end, as those there did
            assert self.final is not None
            self.onlookers.join(call.conn, request.watch, b"")
            self.onlookers.end(self._told(self.final).to_json().encode("utf-8"))
            return
        self.onlookers.join(call.conn, request.watch, run.redraw(request.rows, request.columns), request.about, early)
        if not request.watch:
            run.resize(request.rows, request.columns)
        if early:  # keys the person typed before their terminal joined go now, not at the next wake-up
            self._serve_onlookers(run)

    def _answer_due(self, run: Run) -> None:
        now = self._clock()
        waiting = run.waiting is not None
        for waiter in list(self.callers.waiters):
            if waiter.deadline is not None and (waiting or now >= waiter.deadline):
                self.callers.answer(waiter, with_note(self._progress(run), waiter.note))

    def _progress(self, run: Run, take_output: bool = True) -> Result:
        """Where the command stands, with the output since the last answer and what to do next."""
        self._write_owed()  # the answer names the command
        command = self.command
        progress = replace(run.progress(), session_id=command.session.id, recording=str(self.recording.path))
        result = self._as_answer(run, progress, started=False)
        if not take_output:
            return answers.progress(result, command.session.id, self._say)
        self.handed_out = True
        notes = None if command.typist is None else command.typist.take_notes()
        return answers.progress(result, command.session.id, self._say, command.chunks.take(), notes)


Handler = Callable[[Holder, Call], None]

# The requests about a command, which both kinds take alike once they know it is the one running.
COMMAND_HANDLERS: dict[type[wire.Request], Handler] = {
    wire.Poll: Holder._poll,
    wire.Send: Holder._send,
    wire.Stop: Holder._stop,
    wire.Interrupt: Holder._interrupt,
    wire.Status: Holder._status,
}


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


def saved(write: Callable[[], object]) -> None:
    """A write into the session directory, which may be gone: then there is nobody to tell."""
    try:
        write()
    except OSError:
        pass

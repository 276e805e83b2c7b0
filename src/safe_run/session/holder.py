"""The session holder: a detached process that owns one shell's terminal and answers callers.

It drives the same `Run` a foreground call does, so strategies, fallbacks, --timeout and clean-up
are the foreground's; what it adds is the socket. Callers ask to poll (now, or waiting for the end,
an input wait or their time limit), to send input, or to stop. Waiting is done by the run loop's
own poll, which watches the terminal, the socket and every caller together: an end is answered
the moment it is seen.

A persistent shell (`--in NAME`) is a holder that outlives its command: between commands it waits
for the next `run` (one at a time: a `run` while a command runs is answered `busy`), a `close`,
or its idle limit, while it keeps reading what the shell prints so that nothing blocks.

Nothing it holds outlives every way to reach it: a holder whose session directory or socket is
gone (a temporary HOME removed) ends its command and its shell as `stop` and `close` do, and an
input wait that no call has asked about for the idle limit is stopped, with a result that says so.
A command that works is never stopped for being left alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import signal
import socket
import struct
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .. import polling
from ..output import Chunks
from ..process_title import name_holder
from ..result import Reason, Result, Status, error_result
from ..driver import follow
from ..interrupts import STOP_SIGNALS, StopSignals, Wakeup
from ..request import RunRequest, request_from_dict, request_to_dict, timers_from_dict
from ..runner import CommandRefused, Run, RunFailed
from ..shells import ShellNotFound
from ..shells.registry import kind_of
from ..terminal import TerminalError
from ..workdir import private_workdir
from . import NOT_TYPED, wire, with_note
from .adoption import adopt_orphans, collect_adopted
from .orphans import process
from .store import Session
from .typist import Look, Typist, look_from

# A caller that does not send its request, or take its answer, within this is dropped.
CALLER_TIMEOUT_S = 5.0
# How long a command that ended at once waits for the caller that started it to ask.
FIRST_CALLER_WAIT_S = 5.0
# What the caller wants run, handed to a new holder process (read and removed at its start).
REQUEST_FILE = "request.json"
# Callers served at once; more wait in the socket's queue, which the kernel bounds.
MAX_CALLERS = 64
# How often a holder makes sure callers can still reach it (its directory and socket are there).
REACH_CHECK_S = 1.0
UNREACHABLE = "its session directory was removed, so no call could reach it any more"


@dataclass(frozen=True)
class ShellPlan:
    """What makes a holder a persistent shell: the caller's name for it."""

    name: str
    fresh_note: str | None = None  # said in the first answer: why this is a new shell


def idle_expired(last_used: float, now: float, limit: float | None) -> bool:
    """Whether something nobody used (a shell without a command, an input wait nobody asked about)
    has been left longer than it may."""
    return limit is not None and now - last_used >= limit


@dataclass
class Waiter:
    """A caller waiting for its answer: at `deadline`, or (None) only when the command has ended."""

    conn: socket.socket
    deadline: float | None
    first: bool = False
    note: str | None = None


@dataclass
class Inbox:
    """What a caller sent so far, and until when it may take to send its request (None: it did)."""

    data: bytearray
    deadline: float | None


@dataclass
class Outbox:
    """An answer the caller has not taken yet, all of it or the rest."""

    data: bytes
    deadline: float


class Holder:
    """Serves one session from the start of its command until its result is saved.

    Nothing here waits on anyone: callers are read and answered without blocking (one that takes
    too long is dropped), and text goes into the terminal only as far as it is taken at once.
    """

    def __init__(
        self, session: Session, listener: socket.socket, request: RunRequest, clock: Callable[[], float] = time.monotonic,
        plan: ShellPlan | None = None,
    ) -> None:
        self.session = session
        self.listener = listener
        self.request = request
        self.plan = plan
        self._clock = clock
        self._commands = 0
        self._closing = False
        self._idle = False  # the shell ended while it waited for a command, not with one
        self._next: tuple[RunRequest, str] | None = None
        self._last: Result | None = None
        self.chunks = Chunks(request.max_output)
        self.final: Result | None = None
        self.typist: Typist | None = None
        self.waiters: list[Waiter] = []
        self.inboxes: dict[socket.socket, Inbox] = {}
        self.outboxes: dict[socket.socket, Outbox] = {}
        self.handed_out = False  # a caller was given the session id, so the session must outlive the command
        self.first_answered = False
        self._asked = clock()  # the last call about this session, of any kind
        self._waiting_since: float | None = None  # when the command's held input wait began
        self._idle_since = clock()  # a persistent shell: when its last command ended
        self._identity = session.identity()
        self._reach_checked = clock()
        self._unreachable = False

    def serve(self, wakeup: Wakeup) -> None:
        """Serve until the command (or the persistent shell) ends; `wakeup` carries stop requests."""
        with private_workdir(self.session.path) as workdir:
            run = self._start(workdir)
            if run is not None:
                self._record_shell(run)
                counted = 0
                try:
                    self._serve_commands(run, wakeup)
                finally:
                    counted = len(run.killed)  # those are in the result already
                    run.close(idle=self._idle)
                if self.final is not None and len(run.killed) > counted:
                    self.final = replace(self.final, killed=(*self.final.killed, *run.killed[counted:]))
        self._finish()

    def _serve_commands(self, run: Run, wakeup: Wakeup) -> None:
        """Each command to its end; a persistent shell then waits for the next one."""
        while True:
            result = self._follow_command(run, wakeup)
            if self.plan is None or self._closing or wakeup.pending or not run.shell_alive():
                self.final = self._last_words(run, result, wakeup.pending)
                return
            self._answer_ended(result)
            if not self._start_next_command(run, wakeup):
                self._idle = True
                self.final = self._last_words(run, self._last or result, wakeup.pending)
                return

    @property
    def _idle_limit(self) -> float | None:
        return self.request.idle_expire

    def _follow_command(self, run: Run, wakeup: Wakeup) -> Result:
        typist = Typist(look=lambda: _look(run), write=run.answer, clock=self._clock)
        self.typist = typist
        follow(run, wakeup, Callers(self, run))
        self._waiting_since = None
        run.end_command()
        return self._shell_fields(run, with_note(run.result(), typist.discard()))

    def _start_next_command(self, run: Run, wakeup: Wakeup) -> bool:
        """Wait for the shell's next command and start it; False when the shell is to end instead.

        A command the shell would not parse, or a shell replaced by a program that is no shell, is
        answered at once and the wait goes on.
        """
        run.killed = []
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
                self._answer_ended(self._shell_fields(run, refused.result, started=False))
                continue
            except RunFailed as exc:
                self._answer_ended(self._shell_fields(run, error_result(request.command, str(exc)), started=False))
                continue
            self.request = request
            self.chunks = Chunks(request.max_output)
            run.set_output(self.chunks.write)
            return True

    def _shell_fields(self, run: Run, result: Result, started: bool = True) -> Result:
        """A persistent shell's answer names the shell, its directory, and whether it is new."""
        if self.plan is None:
            return result
        fresh = self._commands == 0
        if started:
            self._commands += 1
        note = self.plan.fresh_note if fresh else None
        return with_note(replace(
            result, shell_id=self.session.id, shell_name=self.plan.name, cwd=run.directory(), fresh=fresh,
        ), note)

    def _answer_ended(self, result: Result) -> None:
        """Everyone waiting gets the command's final result, and a later `poll` gets it again."""
        self._last = result
        self.handed_out = True  # a persistent shell's record outlives it, to say how it ended
        shell = result.shell.name if result.shell else None
        _saved(lambda: self.session.write_meta(last_used=time.time(), cwd=result.cwd, shell=shell))
        for waiter in list(self.waiters):
            self._answer(waiter, with_note(result, waiter.note))
        self._deliver()

    def _between_commands(self, run: Run, wakeup: Wakeup) -> bool:
        """One turn of waiting for the next command; False when the shell is to end."""
        limit = self._idle_limit
        wait = self.wait_time()
        if limit is not None:
            until = max(0.0, self._idle_since + limit - self._clock())
            wait = until if wait is None else min(wait, until)
        if not run.wait_between_commands(wait, (wakeup.fd, *self.fds())):
            return False
        if wakeup.pending or self._closing or not self._still_reachable():
            return False
        wakeup.drain()
        collect_adopted(run.terminal.pid)
        self._serve_callers(run)
        self._deliver()
        if self._closing:
            return False
        if self._next is not None:
            return True
        callers = bool(self.inboxes or self.outboxes)
        return callers or not idle_expired(self._idle_since, self._clock(), limit)

    def _last_words(self, run: Run, result: Result, signals: list[int]) -> Result:
        """The result kept once the shell is gone, saying why it went (also told to its next user)."""
        if self.plan is None:
            return result
        name = self.plan.name
        if self._unreachable:
            why = f"was closed: {UNREACHABLE}"
        elif self._closing:
            why = "was closed"
            result = replace(result, output="", output_truncated=False, output_dropped_bytes=0, message=None)
        elif signals:
            why = f"was ended by {signal.Signals(signals[0]).name} to its holder"
        elif run.shell_ended:
            why = ("was ended with its command: the shell itself was reading its terminal (fish's read, zsh's "
                   "read or vared), and only ending the shell stops a command there")
        elif not run.shell_alive():
            why = "exited"
        else:
            why = f"was idle for {self._idle_limit:g} s and closed itself"
        _saved(lambda: self.session.write_meta(ended=why))
        return with_note(result, f"the shell {name} {why}; the next `safe-run --in {name}` starts a new shell")

    def _start(self, workdir: Path) -> Run | None:
        try:
            return Run(self.request, workdir, self._clock, on_output=self.chunks.write)
        except CommandRefused as refused:
            self.final = refused.result
        except (ShellNotFound, TerminalError, RunFailed) as exc:
            self.final = error_result(self.request.command, str(exc))
        return None

    def _record_shell(self, run: Run) -> None:
        """What a later call needs to end the command's leftovers if this process is killed."""
        shell = process(run.terminal.pid)
        if shell is not None:
            self.session.write_shell(shell.pid, shell.start)

    def turn(self, run: Run) -> None:
        """Between two steps of a command: callers, text waiting to be typed, answers due."""
        assert self.typist is not None
        collect_adopted(run.terminal.pid)
        self._serve_callers(run)
        self.typist.tick()
        if not self._still_reachable():
            run.stop(UNREACHABLE)
        self._expire_unattended_wait(run)
        self._answer_due(run)
        self._deliver()

    def _still_reachable(self) -> bool:
        """Checked once a second: a holder nobody can reach ends what it holds (see the module)."""
        now = self._clock()
        if not self._unreachable and now - self._reach_checked >= REACH_CHECK_S:
            self._reach_checked = now
            if not self.session.reachable(self._identity):
                self._unreachable = self._closing = True
        return not self._unreachable

    def _expire_unattended_wait(self, run: Run) -> None:
        """An input wait that no call has asked about for the idle limit is stopped: an agent that
        moved on would otherwise leave it (a REPL, a pager, an editor) for ever."""
        if run.waiting is None:
            self._waiting_since = None
            return
        now = self._clock()
        if self._waiting_since is None:
            self._waiting_since = now
        limit = self._idle_limit
        if idle_expired(max(self._asked, self._waiting_since), now, limit) and limit is not None:
            run.expire_wait(limit)

    def _expiry(self, asked: float | None = None) -> float | None:
        """When the held input wait is stopped if nobody asks about it (after `asked`) before."""
        limit = self._idle_limit
        if self._waiting_since is None or limit is None:
            return None
        return max(self._asked if asked is None else asked, self._waiting_since) + limit

    def _attendance(self, asked: float, idle: bool) -> dict[str, object]:
        """For `sessions`: how long nobody asked about it (a shell between commands: had none), and
        in how many seconds it ends for that (None: never, a command at work)."""
        now = self._clock()
        limit = self._idle_limit
        if idle:
            ends = None if limit is None else self._idle_since + limit
            return {"idle_s": now - self._idle_since, "expires_in_s": None if ends is None else max(0.0, ends - now)}
        expiry = self._expiry(asked)
        return {"idle_s": now - asked, "expires_in_s": None if expiry is None else max(0.0, expiry - now)}

    def _finish(self) -> None:
        """Save the result, answer everyone, and go; a session nobody was told of goes too."""
        assert self.final is not None
        final = replace(self.final, session_id=None)
        _saved(lambda: self.session.save_result(final))  # nowhere to keep it once the directory is gone
        give_up = self._clock() + FIRST_CALLER_WAIT_S
        while True:
            for waiter in list(self.waiters):
                self._answer(waiter, with_note(final, waiter.note))
            self._deliver()
            expecting = not (self.first_answered or self.handed_out) and self._clock() < give_up
            if not expecting and not self.outboxes:
                break
            deadlines = [give_up] if expecting else []
            deadlines += [box.deadline for box in self.outboxes.values()]
            self._serve_callers(None, max(0.0, min(deadlines) - self._clock()), accept=expecting)
        self.listener.close()
        self.session.socket_path.unlink(missing_ok=True)
        if not self.handed_out:
            self.session.remove()

    # ---- callers ------------------------------------------------------------------------------

    def fds(self) -> list[int]:
        listening = [self.listener.fileno()] if self._room() else []
        return listening + [conn.fileno() for conn in self.inboxes]

    def _room(self) -> bool:
        return len(self.inboxes) + len(self.outboxes) < MAX_CALLERS

    def wait_time(self) -> float | None:
        deadlines = [w.deadline for w in self.waiters if w.deadline is not None]
        deadlines += [box.deadline for box in self.inboxes.values() if box.deadline is not None]
        deadlines.append(self._reach_checked + REACH_CHECK_S)
        expiry = self._expiry()
        if expiry is not None:
            deadlines.append(expiry)
        # Answers not yet taken and text not yet typed need no deadline of their own: the run looks
        # at the kernel several times a second, and every turn of the loop retries them.
        return max(0.0, min(deadlines) - self._clock()) if deadlines else None

    def _serve_callers(self, run: Run | None, timeout: float = 0.0, accept: bool = True) -> None:
        listening = [self.listener] if accept and self._room() else []
        by_fd = {sock.fileno(): sock for sock in [*listening, *self.inboxes]}
        readable, _ = polling.wait(by_fd, timeout, [conn.fileno() for conn in self.outboxes])
        for fd in sorted(readable):
            sock = by_fd[fd]
            if sock is self.listener:
                self._accept()
            elif sock in self.inboxes:
                self._read(sock, run)
        now = self._clock()
        for conn, box in list(self.inboxes.items()):
            if box.deadline is not None and now >= box.deadline:
                self._drop(conn)  # connected and sent no request in time

    def _accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        if _peer_uid(conn) != os.geteuid():
            conn.close()
            return
        conn.setblocking(False)
        self.inboxes[conn] = Inbox(bytearray(), self._clock() + CALLER_TIMEOUT_S)

    def _read(self, conn: socket.socket, run: Run | None) -> None:
        try:
            data = conn.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        inbox = self.inboxes[conn]
        if not data or len(inbox.data) + len(data) > wire.MAX_MESSAGE:
            self._drop(conn)  # the caller went away (a poll interrupted): its output stays for the next
            return
        inbox.data += data
        if b"\n" in inbox.data and inbox.deadline is not None:
            inbox.deadline = None
            request = wire.decode_request(bytes(inbox.data).partition(b"\n")[0])
            if request is None or _hung_up(conn):  # a caller that gave up waiting is not acted for
                self._drop(conn)
            else:
                self._handle(conn, request, run)

    def _handle(self, conn: socket.socket, request: wire.Request, run: Run | None) -> None:
        now = self._clock()
        asked, self._asked = self._asked, now
        deadline = now + wire.wait_of(request)
        first = isinstance(request, wire.Poll) and request.first
        if self.plan is not None and run is not None and self._handle_shell(conn, request, run, deadline, asked):
            return
        if run is None or run.finish is not None or self.typist is None:
            note = NOT_TYPED if isinstance(request, wire.Send) else None
            self.waiters.append(Waiter(conn, None, first=first, note=note))
            return
        match request:
            case wire.Poll():
                self.waiters.append(Waiter(conn, deadline, first=first))
            case wire.Send(text=text, keys=keys, queue=queue):
                outcome = self.typist.send(text.encode("utf-8", "replace"), keys.encode("utf-8", "replace"), queue)
                self.waiters.append(Waiter(conn, deadline if outcome.typed else now, note=outcome.note))
            case wire.Stop():
                run.stop()
                self.waiters.append(Waiter(conn, None))
            case wire.Interrupt(signal=name):
                run.interrupt(signal.Signals.__members__.get(name, signal.SIGINT))
                self.waiters.append(Waiter(conn, None))
            case wire.Status():
                self._answer(Waiter(conn, now), self._progress(run, take_output=False), self._attendance(asked, False))
            case _:  # a shell's request to a one-shot session
                self._drop(conn)

    def _handle_shell(self, conn: socket.socket, request: wire.Request, run: Run, deadline: float, asked: float) -> bool:
        """What only a persistent shell answers: run, close, and any call between commands."""
        idle = run.finish is not None and self._last is not None
        if isinstance(request, wire.Close):
            self._closing = True
            if not idle:
                run.stop()
            self.waiters.append(Waiter(conn, None))
            return True
        if isinstance(request, wire.Run) and (not idle or self._next is not None):  # one running, or one just taken
            self._answer(Waiter(conn, self._clock()), self._busy(run, request.command))
            return True
        if isinstance(request, wire.Run):
            self._next = _next_command(self.request, request, run.shell.name)
            self.waiters.append(Waiter(conn, deadline, first=True))
            return True
        if idle and self._last is not None:
            note = NOT_TYPED if isinstance(request, wire.Send) else None
            extra = self._attendance(asked, idle=True) if isinstance(request, wire.Status) else {}
            self._answer(Waiter(conn, self._clock()), with_note(self._last, note), extra)
            return True
        return False

    def _busy(self, run: Run, command: str) -> Result:
        assert self.plan is not None
        return Result(
            status=Status.BUSY, exit_code=None, strategy=None, completion_reason=Reason.BUSY, command=command,
            shell=run.shell, session_id=self.session.id, shell_id=self.session.id, shell_name=self.plan.name,
            message=(
                f"nothing was run: the shell {self.plan.name} is running {_first_line(self._running_command())!r} "
                f"(session {self.session.id}). Wait for it with `safe-run poll {self.session.id} --wait 60`, "
                f"end it with `safe-run stop {self.session.id}`, or use another shell name"
            ),
        )

    def _running_command(self) -> str:
        """The command the shell runs, or the one it has just taken and is about to type."""
        return self._next[0].command if self._next is not None else self.request.command

    def _answer_due(self, run: Run) -> None:
        now = self._clock()
        waiting = run.waiting is not None
        for waiter in list(self.waiters):
            if waiter.deadline is not None and (waiting or now >= waiter.deadline):
                self._answer(waiter, with_note(self._progress(run), waiter.note))

    def _progress(self, run: Run, take_output: bool = True) -> Result:
        """Where the command stands, with the output since the last answer and what to do next."""
        result = self._shell_fields(run, replace(run.progress(), session_id=self.session.id), started=False)
        if self.plan is not None:
            result = replace(result, fresh=self._commands == 0)
        if take_output:
            text, dropped = self.chunks.take()
            result = replace(result, output=text, output_truncated=dropped > 0, output_dropped_bytes=dropped)
            self.handed_out = True
        result = replace(result, message=_next_steps(result, self.session.id))
        if take_output and self.typist is not None:
            result = with_note(result, self.typist.take_notes())
        return result

    def _answer(self, waiter: Waiter, result: Result, extra: dict[str, object] | None = None) -> None:
        """Hand the answer over as far as the caller takes it now; the rest goes out from the loop."""
        self.first_answered = self.first_answered or waiter.first
        conn = waiter.conn
        self.waiters = [w for w in self.waiters if w.conn is not conn]
        self.inboxes.pop(conn, None)
        self.outboxes[conn] = Outbox(wire.encode({**result.to_dict(), **(extra or {})}), self._clock() + CALLER_TIMEOUT_S)
        self._deliver()

    def _deliver(self) -> None:
        now = self._clock()
        for conn, box in list(self.outboxes.items()):
            try:
                sent = conn.send(box.data)
            except BlockingIOError:
                sent = 0
            except OSError:
                self._drop(conn)
                continue
            box.data = box.data[sent:]
            if not box.data or now >= box.deadline:
                self._drop(conn)  # answered, or the caller does not read: it is not waited for

    def _drop(self, conn: socket.socket) -> None:
        self.waiters = [w for w in self.waiters if w.conn is not conn]
        self.inboxes.pop(conn, None)
        self.outboxes.pop(conn, None)
        conn.close()


class Callers:
    """The holder as the loop's watcher: its callers wake the loop and are served between steps."""

    def __init__(self, holder: Holder, run: Run) -> None:
        self._holder = holder
        self._run = run

    def wait_time(self) -> float | None:
        return self._holder.wait_time()

    def fds(self) -> list[int]:
        return self._holder.fds()

    def turn(self) -> int | None:
        self._holder.turn(self._run)
        return None


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:80] if lines else ""


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


def _saved(write: Callable[[], None]) -> None:
    """A write into the session directory, which may be gone: then there is nobody to tell."""
    try:
        write()
    except OSError:
        pass


def _hung_up(conn: socket.socket) -> bool:
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _look(run: Run) -> Look:
    """Whether the command reads its terminal now, from the kernel, else from the run's input wait."""
    return look_from(run.take_a_look(), run.waiting is not None)


def _next_steps(result: Result, session_id: str) -> str:
    """Tell the caller exactly what to run next, and what not to."""
    if result.status is Status.INPUT_REQUIRED:
        return (
            f"{result.message}; it is still running in session {session_id}. Answer with "
            f"`safe-run send {session_id} 'TEXT'` (or `--key ctrl-c`, `--key ctrl-d`), "
            f"or end it with `safe-run stop {session_id}`"
        )
    return (
        f"still running after {result.duration_s:.1f} s in session {session_id}; the output since the last "
        f"answer is included. Wait for the end with `safe-run poll {session_id} --wait 60` (it returns as soon "
        "as the command ends or asks for input); do not run the command again"
    )


def _peer_uid(conn: socket.socket) -> int | None:
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return None
    uid: int = struct.unpack("3i", creds)[1]
    return uid


def detach(session: Session, request: RunRequest, plan: ShellPlan | None = None, fork: bool = False) -> int | None:
    """Start the holder in a process of its own session, free of the caller's terminal and pipes.

    The listening socket exists before the holder does, so the caller can connect at once. The
    holder keeps no descriptor of the caller's (a caller reading our stdout to its end must not
    wait for the command), and its own errors go to a log in the session directory.

    A new interpreter runs the holder, so it carries nothing of its caller (threads, memory, locks
    held mid-fork). `fork` is for safe-run's own single-threaded command line, where a fork costs
    nothing and spares each session a second start-up of Python; the forked holder's pid is
    returned, for the caller to collect it if it ends while the caller still runs.
    """
    listener = session.listen()
    if fork:
        return _fork_holder(session, listener, request, plan)
    _spawn_holder(session, listener, request, plan)
    return None


def _spawn_holder(session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> None:
    spec = {"request": request_to_dict(request), "plan": None if plan is None else asdict(plan)}
    _write_private(session.path / REQUEST_FILE, json.dumps(spec))
    log_fd = -1 if request.log is None else request.log.fileno()
    passed = [listener.fileno()] + ([log_fd] if log_fd >= 0 else [])
    with open(session.path / "holder.log", "ab") as errors:
        os.chmod(errors.fileno(), 0o600)
        holder = subprocess.Popen(
            [sys.executable, "-m", "safe_run.session.holder", str(session.path), str(listener.fileno()), str(log_fd)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, pass_fds=passed,
            start_new_session=True,
        )
    listener.close()
    session.write_meta(holder_pid=holder.pid)
    # Collected when it ends, so that a long-lived caller (the Python API) keeps no zombie.
    threading.Thread(target=holder.wait, name=f"safe-run holder {session.id}", daemon=True).start()


def _fork_holder(session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> int:
    pid = os.fork()
    if pid != 0:
        listener.close()
        session.write_meta(holder_pid=pid)
        return pid
    status = 1
    try:
        for signum in STOP_SIGNALS:  # the caller's handlers came along with the fork
            signal.signal(signum, signal.SIG_DFL)
        os.setsid()
        _detach_descriptors(session, listener, request)
        status = _serve_here(session, listener, request, plan)
    finally:
        sys.stderr.flush()
        os._exit(status)


def _serve_here(session: Session, listener: socket.socket, request: RunRequest, plan: ShellPlan | None) -> int:
    """The holder's life, in the process that is now its own; its exit status."""
    try:
        name_holder(session.id)
        # The holder owns its process: its stop signals end the command (or the shell) with a result.
        signals = StopSignals()
        signals.install(deferring=True)
        adopt_orphans()  # what its commands detach comes back to it, to be collected
        Holder(session, listener, request, plan=plan).serve(signals.wakeup)
        collect_adopted(None)  # the shell is collected by now
        return 0
    except BaseException:  # a holder must never return into its caller's code
        traceback.print_exc()
        return 1


def main(argv: list[str]) -> int:
    """`python -m safe_run.session.holder SESSION_DIR LISTEN_FD LOG_FD`, as `detach` starts it."""
    path, listen_fd, log_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    session = Session(path.name, path)
    spec = json.loads((path / REQUEST_FILE).read_text(encoding="utf-8"))
    (path / REQUEST_FILE).unlink()
    log = None if log_fd < 0 else os.fdopen(log_fd, "ab", buffering=0)
    request = request_from_dict(spec["request"], log)
    plan = None if spec["plan"] is None else ShellPlan(**spec["plan"])
    listener = socket.socket(fileno=listen_fd)
    return _serve_here(session, listener, request, plan)


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _detach_descriptors(session: Session, listener: socket.socket, request: RunRequest) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(session.path / "holder.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target, source in ((0, devnull), (1, devnull), (2, log)):
        os.dup2(source, target)
    keep = {0, 1, 2, listener.fileno()}
    if request.log is not None:
        keep.add(request.log.fileno())
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _open_fds() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 256))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

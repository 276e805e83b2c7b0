"""The caller's side of a session: start one, ask its holder, or read what it left.

Every call has a bound: connecting, sending the request and reading the answer all end by the
wait the caller asked for plus ANSWER_MARGIN_S. A holder that does not answer by then (stopped
with SIGSTOP, or stuck) is reported as unresponsive, with its own exit status, and never waited
for further. A holder that has gone away is not an error by itself: a finished command's holder
leaves its result in the session directory and exits. A holder gone without a result died: its
session gets an error result saying so, for as long as results are kept.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from ..engine import polling
from ..engine.interrupts import KEYS, Wakeup
from ..core.request import RunRequest, Scope
from ..core.result import ExitStatus, Result, Status
from . import SessionError, wire
from ..core.answers import NOT_TYPED, with_note
from ..engine.recording import FILE_NAME as RECORDING_FILE
from .store import SHELL_NAME, Session, SessionStore

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from .launch import Launcher


# How long a holder gets to answer beyond the wait asked for: stopping a command (Ctrl-C, SIGTERM,
# SIGKILL, the sweep of its jobs, the hang-up) takes it up to about 3 s.
ANSWER_MARGIN_S = 5.0
# `sessions` asks this many holders at once, so that stuck ones cost one margin, not one each.
LISTING_PARALLEL = 16
UNRESPONSIVE = "unresponsive"
# How long a caller that forked a holder waits for it to exit after its final answer.
HOLDER_EXIT_S = 2.0
# A connection its holder kept (see `callers`) carries the next request only this soon after its
# answer: well within the time the holder keeps it open, and long before a shell left alone goes
# to its keeper; the holder closes it only at its end otherwise, once its result is saved.
REUSE_S = 1.0

Report = Callable[[str], None]


def start_session(
    request: RunRequest, yield_after: float, launcher: Launcher, report: Report | None = None,
    wakeup: Wakeup | None = None,
) -> Result:
    """Run the command in a new session; answer at its end or after `yield_after` seconds.

    A signal to this caller while it waits (Ctrl-C) stops the command, as in a foreground run.
    """
    from .launch import detach

    store = SessionStore.open(report=report, sweep=False)
    session = store.create(request.command)
    holder = detach(session, replace(request, hold_on_input=True), None, launcher)
    store.sweep(when_due=True)  # while the holder starts: the store's upkeep costs the call nothing
    result = _ask_interruptibly(session, wire.Poll(wait=yield_after, first=True), wakeup)
    if holder is not None and result.session_id is None:
        from .adoption import collect_at_exit

        collect_at_exit(holder, HOLDER_EXIT_S)  # it ends once it has answered; a container's PID 1 may never collect it
    return result


def run_in_shell(
    name: str, request: RunRequest, bound: float | None, scope: Scope = Scope(), *,
    launcher: Launcher, report: Report | None = None, wakeup: Wakeup | None = None, person: bool = False,
) -> Result:
    """Run the command in the persistent shell `name`, started with `request`'s shell (and its
    idle limit, its holder by `launcher`) on first use.

    `scope` holds a later command's own --cwd and --env. Answers at the command's end, or after
    `bound` seconds with the session that holds it (None: at the end). `person`: the caller is a
    person at their terminal, whose Ctrl-C is the command's (see `_ask_held`).
    """
    check_name(name)
    ask_run = run_message(request, bound, scope)
    warm = warm_shell(name, report)
    held = None if warm is None else ask_warm(warm, ask_run, wakeup, person=person)
    if held is not None:
        return held
    store = SessionStore.open(report=report, sweep=False)
    for _ in range(2):  # a second time only after the shell went just before the command's turn
        # The names are held only while one is looked up and its holder started (which listens
        # before it exists): shells of different names start side by side, and a second call for
        # the same new name finds its holder and is answered busy, as for any shell running a command.
        with store.naming():
            session = store.named(name)
            started = session is None or not _live(session)
            if started:
                from .holder import ShellPlan
                from .launch import detach

                note = _fresh_note(name, session)
                session = store.create(request.command, shell_name=name)
                store.give_name(name, session)
                detach(session, replace(request, hold_on_input=True), ShellPlan(name, note), launcher)
        if started:
            store.sweep(when_due=True)  # while the holder starts (see `start_session`)
        assert session is not None
        asked = wire.Poll(wait=ask_run.wait, first=True) if started else ask_run
        answer = _ask_interruptibly(session, asked, wakeup, person)
        if started or not gone_first(answer):
            break
    return answer


def run_message(request: RunRequest, bound: float | None, scope: Scope = Scope()) -> wire.Run:
    """What a named shell's holder is asked: the command with its own timers, output bound and
    scope, answered at its end or after `bound` seconds (None: at the end)."""
    return wire.Run(
        command=request.command, wait=wire.MAX_WAIT_S if bound is None else bound,
        timers=dict(vars(request.timers)), max_output=request.max_output, cwd=scope.cwd, env=scope.env,
    )


def warm_shell(name: str, report: Report | None = None, last: Session | None = None) -> Session | None:
    """The named shell's session when its holder can be asked at once (no sweep of the store, no
    lock, one connection); None when it must be looked up, or started, the careful way.

    `last`, the session the name had at the caller's last call, is taken without looking the name
    up while it has no result: a name passes to another shell only once its shell has ended."""
    if last is not None and not last.result_path.exists():
        return last
    warm = SessionStore.open(report=report, sweep=False).named(name)
    return warm if warm is not None and not warm.result_path.exists() else None


def ask_warm(
    session: Session, request: wire.Run, wakeup: Wakeup | None = None, line: Line | None = None,
    person: bool = False,
) -> Result | None:
    """The answer of the warm shell `warm_shell` found; None when its holder took no command after
    all (it is ending, or its shell went first): the careful way then looks the name up again.
    `line`: the caller's connection to that holder, kept from its last call if the holder kept it;
    `person`: see `run_in_shell`."""
    held = _ask_held(session, request, wakeup, line, person)
    return held if held is not None and not gone_first(held) else None


class Line:
    """One caller's connection to a named shell's holder, kept from one call to its next when the
    holder keeps it (see `callers`): a new connection for every call made a warm call about 8%
    slower. Calls from several threads each take it in turn, or connect anew; a forked child
    never uses its parent's (the two would read each other's answers)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: socket.socket | None = None
        self._session: Session | None = None
        self._until = 0.0
        self._pid = 0

    def take(self, session: Session) -> socket.socket | None:
        """The kept connection to `session`'s holder, while it may carry a request; else None."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is None:
            return None
        if (self._pid != os.getpid() or self._session != session or time.monotonic() >= self._until
                or polling.readable([conn.fileno()], 0)):
            conn.close()  # a parent's, another holder's, kept too long, or closed by its holder since
            return None
        return conn

    def keep(self, session: Session, conn: socket.socket) -> None:
        with self._lock:
            other, self._conn = self._conn, conn
            self._session, self._until, self._pid = session, time.monotonic() + REUSE_S, os.getpid()
        if other is not None:
            other.close()

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def gone_first(answer: Result) -> bool:
    """Whether a shell's holder answered a command with the shell's end: the shell went (its
    `exit`, its idle limit, a close) after the caller found it and before the command was typed,
    so the command never ran and the next shell of the name is the one to run it."""
    return answer.status is Status.CLOSED


def close_shell(name: str, report: Report | None = None) -> Result:
    """End the persistent shell `name` and everything it started; its last result, with what was ended."""
    check_name(name)
    store = SessionStore.open(report=report)
    with store.naming():
        session = store.named(name)
        if session is None or not _live(session):
            raise SessionError(f"no shell named {name!r} is running (it was never started, or it ended)")
        result = _request(session, wire.Close())
        store.forget_name(name, session)
    return result


def check_name(name: str) -> None:
    if not SHELL_NAME.match(name):
        raise SessionError(
            f"{name!r} is not a shell name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or a digit",
            ExitStatus.USAGE,
        )


def _live(session: Session) -> bool:
    return session.load_result() is None and session.holder_listens()


def _fresh_note(name: str, earlier: Session | None) -> str | None:
    """Why a name that had a shell gets a new one: its state (directory, variables, jobs) is gone."""
    if earlier is None:
        return None
    why = earlier.meta().get("ended") or "ended"
    return f"a new shell was started for {name!r}: the one before {why}, and its directory, variables and jobs are gone"


def follow(session_id: str, wait: float, wakeup: Wakeup | None = None, person: bool = False) -> Result:
    """The session's next answer (new output, or its end) within `wait` seconds; a stop request on
    `wakeup` meanwhile stops its command (`person`: their Ctrl-C is the command's). Asked several
    times a second while a person watches, so the store is not swept each time (the call that
    started the session did)."""
    session = SessionStore.open(sweep=False).get(session_id)
    kept, request = _addressed(session, wire.Poll(wait=wait))
    return kept if kept is not None else _ask_interruptibly(session, request, wakeup, person)


def ask(session_id: str, request: wire.Request, report: Report | None = None) -> Result:
    """One request to a session's holder, or the result it left once its command ended."""
    session = SessionStore.open(report=report).get(session_id)
    kept, request = _addressed(session, request)
    return kept if kept is not None else _request(session, request)


def _addressed(session: Session, request: wire.Request) -> tuple[Result | None, wire.Request]:
    """A request as its session's holder takes it. For one command of a named shell: that command's
    kept result once it has one (the shell and whatever it runs now are never touched), else the
    request marked as about that command."""
    if session.shell_id is None or isinstance(request, (wire.Close, wire.Run, wire.Attach)):
        return None, request
    kept = session.load_result()
    if kept is not None:
        return (with_note(kept, NOT_TYPED) if isinstance(request, wire.Send) else kept), request
    return None, replace(request, about=session.id)


def _request(session: Session, request: wire.Request) -> Result:
    return answered(session, request, _exchange(session, request))


def _exchange(session: Session, request: wire.Request) -> dict[str, object] | None:
    """The holder's answer as it came, or None when no holder answered (it has gone away)."""
    deadline = _deadline(request)
    conn = _send(session, request, deadline)
    if conn is None:
        return None
    with conn:
        try:
            return wire.receive(conn, deadline)
        except TimeoutError:
            raise unresponsive(session, request) from None


def answer_bound(request: wire.Request) -> float:
    """How long one call may take in all: the wait it asks for and the margin."""
    return wire.wait_of(request) + ANSWER_MARGIN_S


def _deadline(request: wire.Request) -> float:
    return time.monotonic() + answer_bound(request)


def _send(session: Session, request: wire.Request, deadline: float) -> socket.socket | None:
    """A connection that carries the request, or None when no holder takes it any more."""
    try:
        conn = session.connect(max(0.001, deadline - time.monotonic()))
    except TimeoutError:
        raise unresponsive(session, request) from None
    return None if conn is None else _sent_on(conn, session, request, deadline)


def _sent_on(conn: socket.socket, session: Session, request: wire.Request, deadline: float) -> socket.socket | None:
    """`conn` (new, or kept from the last call) with the request sent on it; None when its holder
    closed it: the request did not go (a closing holder left what says how the command ended; a
    kept connection's caller connects anew)."""
    try:
        conn.settimeout(max(0.001, deadline - time.monotonic()))
        conn.sendall(wire.encode_request(request))
    except TimeoutError:
        conn.close()
        raise unresponsive(session, request) from None
    except OSError:
        conn.close()
        return None
    return conn


def answered(session: Session, request: wire.Request, answer: dict[str, object] | None) -> Result:
    """The holder's answer as a result; with none (it hung up first), what it left."""
    return Result.from_dict(answer) if answer is not None else _unanswered(session, request)


def _unanswered(session: Session, request: wire.Request) -> Result:
    """The holder went away without answering: the result it left, and typed text never arrived."""
    result = _left_result(session)
    return with_note(result, NOT_TYPED) if isinstance(request, wire.Send) else result


def _left_result(session: Session) -> Result:
    """The result a finished holder saved; a holder gone without one died, and that is recorded."""
    result = session.load_result()
    if result is not None:
        return result
    if "holder_pid" not in session.meta():
        raise SessionError(f"session {session.id} is still starting; ask again in a moment", ExitStatus.FAILURE)
    if session.holder_listens():
        raise SessionError(
            f"session {session.id}: its holder hung up without answering (too many callers at once?); ask again",
            ExitStatus.UNRESPONSIVE,
        )
    result = session.load_result() or session.bury()
    if result is None:
        raise SessionError(f"no session {session.id}: it ended and was removed")
    return result


def unresponsive(session: Session, request: wire.Request) -> SessionError:
    return SessionError(_unresponsive_message(session, answer_bound(request)), ExitStatus.UNRESPONSIVE)


def _unresponsive_message(session: Session, bound: float) -> str:
    pid, state = session.holder_state()
    prefix = f"session {session.id} did not answer within {bound:g} s"
    if pid is None:
        return f"{prefix}; nothing was done"
    if state == "T":
        return f"{prefix}: its holder process {pid} is stopped (SIGSTOP?); `kill -CONT {pid}` resumes it"
    return f"{prefix}: its holder process {pid} is busy or stuck; ask again, or end it with `kill {pid}`"


def _ask_interruptibly(
    session: Session, request: wire.Request, wakeup: Wakeup | None, person: bool = False,
) -> Result:
    """Ask and wait for the answer; a stop request on `wakeup` meanwhile stops the command."""
    answer = _ask_held(session, request, wakeup, person=person)
    return _unanswered(session, request) if answer is None else answer


def _ask_held(
    session: Session, request: wire.Request, wakeup: Wakeup | None, line: Line | None = None, person: bool = False,
) -> Result | None:
    """As `_ask_interruptibly`, but None when no holder takes the request any more; `line`: see
    `ask_warm`, and where the connection is kept if its holder keeps it. A person's Ctrl-C
    (`person`) goes to the command as its interrupt character, and the answer is still awaited
    here: the command ends as it chooses (a clean-up, its own exit status), or goes on (a REPL)."""
    sent_by = _deadline(request)
    reused = line.take(session) if line is not None else None
    conn = _sent_on(reused, session, request, sent_by) if reused is not None else None
    if conn is None:
        conn = _send(session, request, sent_by)
    if conn is None:
        return None
    # The holder's time counts from the request's sending, and an answer that came is taken however
    # late: this caller may have been stopped (Ctrl-Z) for longer than the holder may take.
    deadline = _deadline(request)
    watched = [conn.fileno()] if wakeup is None else [conn.fileno(), wakeup.fd]
    kept = False
    try:
        while True:
            ready = polling.readable(watched, max(0.0, deadline - time.monotonic()))
            if not ready and time.monotonic() >= deadline:
                ready = polling.readable(watched, 0)  # a wait a signal cut short past its time looked at nothing
                if not ready:
                    raise unresponsive(session, request)
            if conn.fileno() in ready:
                try:
                    answer = wire.receive(conn, max(deadline, time.monotonic() + ANSWER_MARGIN_S))
                except TimeoutError:
                    raise unresponsive(session, request) from None
                kept = line is not None and answer is not None and answer.pop(wire.KEPT, None) is True
                return answered(session, request, answer)
            stopped = None if wakeup is None else _woken(session, request, wakeup, person)
            if stopped is not None:
                return stopped
    finally:
        if kept and line is not None:
            line.keep(session, conn)
        else:
            conn.close()


def _woken(session: Session, request: wire.Request, wakeup: Wakeup, person: bool) -> Result | None:
    """What woke a caller waiting for its answer: the command's result once a stop request stopped
    it; None when the wait goes on (nothing, or a person's Ctrl-C, which went to the command)."""
    if wakeup.released:
        raise SessionError(f"the caller stopped waiting; session {session.id} goes on")
    if wakeup.pending:
        signum, about = wakeup.pending[0], getattr(request, "about", None)
        if not (person and signum in KEYS):
            return interrupt(session, signal.Signals(signum).name, about)
        wakeup.pass_on()
        _request(session, wire.Interrupt(signal=signal.Signals(signum).name, about=about, typed=True))
    wakeup.drain()
    return None


def interrupt(session: Session, signal_name: str = "SIGINT", about: str | None = None) -> Result:
    """Stop the command as `signal_name` to its caller would (Ctrl-C); its result after that."""
    return _request(session, wire.Interrupt(signal=signal_name, about=about))


def listing(now: float, report: Report | None = None) -> list[dict[str, object]]:
    """Every session of this user: id, command, status (asked of live holders at once), exit code, age.

    A holder that does not answer in time is listed as unresponsive; one that died, as an error.
    """
    from concurrent.futures import ThreadPoolExecutor  # only listing needs threads: not on a run's start

    store = SessionStore.open(report=report, sweep=False)
    store.sweep()  # a listing shows no session that a sweep would have ended
    sessions = store.all()
    with ThreadPoolExecutor(max_workers=LISTING_PARALLEL) as pool:
        statuses = list(pool.map(_status, sessions))
    rows = []
    for session, status in zip(sessions, statuses):
        if status is None:
            continue
        started = session.started
        meta = session.meta()
        row: dict[str, object] = {
            "session_id": session.id,
            "command": meta.get("command", ""),
            "status": status if isinstance(status, str) else status.result.status.value,
            "exit_code": None if isinstance(status, str) else status.result.exit_code,
            "age_s": round(now - started, 1) if started else None,
            "shell_name": None,
            "shell_id": None,
            "shell": None,
            "cwd": None,
            "idle_s": None,
            "expires_in_s": None,
            "recording": _recording_of(session),
            "attached": 0,
        }
        if isinstance(status, Standing):
            row["idle_s"], row["expires_in_s"], row["attached"] = status.idle_s, status.expires_in_s, status.attached
        if isinstance(meta.get("shell_name"), str):
            row.update(_shell_row(session, meta, status))
        rows.append(row)
    return rows


def _recording_of(session: Session) -> str | None:
    """The asciicast recording of the session's terminal (a named shell's command: its shell's)."""
    holder = session.path if session.shell_id is None else session.path.parent / session.shell_id
    path = holder / RECORDING_FILE
    return str(path) if path.exists() else None


def _shell_row(session: Session, meta: dict[str, object], status: Standing | str) -> dict[str, object]:
    """A persistent shell: its name, program, directory, and idle (waiting for a command) or closed;
    or one command of it, with the shell's name and id and its own status."""
    if session.shell_id is not None:
        return {"shell_name": meta["shell_name"], "shell_id": session.shell_id}
    ended = session.result_path.exists()
    row: dict[str, object] = {"shell_name": meta["shell_name"], "shell": meta.get("shell"), "cwd": meta.get("cwd")}
    if isinstance(status, Standing):
        row["command"] = status.result.command or row.get("command", "")
        if ended:
            row["status"] = "closed"
        elif status.result.session_id is None:
            row["status"] = "idle"
    return row


@dataclass(frozen=True)
class Standing:
    """Where a session stands, and, while its holder lives, how long nobody has asked about it and
    when it ends for that (an input wait stopped, an idle shell closed; None: never)."""

    result: Result
    idle_s: float | None = None
    expires_in_s: float | None = None
    attached: int = 0  # people attached to its terminal (`attach`, `watch`)


def _status(session: Session) -> Standing | str | None:
    """Where a session stands; None for one that went away while it was asked."""
    result = session.load_result()
    if result is not None:
        return Standing(result)
    request: wire.Request = wire.Status(about=session.id if session.shell_id is not None else None)
    try:
        answer = _exchange(session, request)
        if answer is None:
            return Standing(_unanswered(session, request))
    except SessionError as exc:
        if exc.status == ExitStatus.UNRESPONSIVE:
            return UNRESPONSIVE
        return None
    attached = answer.get("attached")
    return Standing(
        Result.from_dict(answer), _seconds(answer.get("idle_s")), _seconds(answer.get("expires_in_s")),
        attached if isinstance(attached, int) and not isinstance(attached, bool) else 0,
    )


def _seconds(value: object) -> float | None:
    return round(float(value), 1) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

"""Where sessions live: one private directory per user, one sub-directory per session.

A session directory holds `meta.json` (what runs, since when), `socket` (the holder's, while the
command runs) and `result.json` (once it ended). A named shell's directory also holds its journal
(`commands`): the commands that ended before anyone was told their ids, a line each, given a
directory of their own only when one is asked for by id. Nothing else is trusted to say whether
a holder is alive: a socket that refuses connections belongs to a holder that died. Such a session gets an
`error` result saying so, kept as long as any other result, and what its command left running is
ended. A session whose `meta.json` is not one of ours is skipped, and said so once.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .. import places
from ..core.result import ExitStatus, Killed, Result, error_result
from . import SessionError

SESSION_ID = re.compile(r"[0-9a-f]{24}\Z")
# Ends the name of a session put out of sight by its holder (`Session.put_away`), which removes it next.
PUT_AWAY = ".gone"
# A persistent shell's name: a file name anywhere, and a word in a shell.
SHELL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
NAMES_DIR = "names"
# How long a finished session keeps its result for `poll`, counted from the end of the command.
RETENTION_S = 600.0
# A session younger than this may still be setting up: never taken for a crashed one.
SETUP_GRACE_S = 30.0
# sockaddr_un holds 108 bytes; longer paths are reached through /proc/self/fd.
SOCKET_PATH_MAX = 100
# Callers that open the store within this long of the last sweep skip theirs: a sweep reads every
# session's record, and many callers at once (fifty agents starting their shells) would each
# read all of them. A dead holder's session is buried when anyone asks about it, sweep or not.
SWEEP_EVERY_S = 1.0
# The store's sweep lock, and the clock reading of the last sweep.
SWEEP_LOCK = ".sweep"
# Left in a session directory whose record was reported as malformed, so that it is said once.
SKIPPED_MARK = ".skipped"
# Where a holder's own errors go, in its session's directory.
HOLDER_LOG = "holder.log"
# A named shell's journal of its commands (see `SessionStore.journal`).
JOURNAL = "commands"
# Past this size a journal is written anew without the commands kept longer than RETENTION_S, at
# most once in JOURNAL_PAUSE_S.
JOURNAL_MAX = 4 << 20
JOURNAL_PAUSE_S = 60.0
# How long a caller that asks for a journaled command waits for another caller giving it its
# directory; one that has not by then has died while making it.
GIVING_WAIT_S = 1.0
# A session directory is made under a name of its own, ".ID.new", and renamed (see `make`). One
# older than SETUP_GRACE_S was left by a process that died while making it.
STAGING = re.compile(r"\.[0-9a-f]{24}\.new\Z")
# What a dead holder's session keeps: its record, its result, and the holder's own error log.
KEPT_FILES = frozenset({"meta.json", "result.json", HOLDER_LOG, "recording.cast", JOURNAL})


def sessions_root(env: Mapping[str, str]) -> Path:
    """Where this user's sessions are looked for (see `places.sessions_root`); nothing is made."""
    return Path(places.sessions_root(env))


def private_directory(path: Path) -> Path:
    """Create `path` for this user alone, or refuse one that someone else could read or own."""
    try:
        places.private_directory(str(path))
    except OSError as exc:
        raise _unusable(exc, str(path)) from None
    return path


def _unusable(exc: OSError, path: str) -> SessionError:
    """Why sessions cannot be kept at `path`, in one line."""
    if isinstance(exc, places.NotPrivate):
        return SessionError(
            f"{path} is not a private directory of this user (mode 0700); refusing to keep sessions there",
            ExitStatus.FAILURE,
        )
    if isinstance(exc, places.NoEntry):
        return SessionError(
            f"XDG_RUNTIME_DIR is {path}, a directory this user cannot enter or write in, so no session can be "
            "kept there; unset it, or set it to this user's own runtime directory", ExitStatus.FAILURE,
        )
    return SessionError(f"cannot create the session directory {path}: {exc.strerror or exc}", ExitStatus.FAILURE)


@dataclass(frozen=True)
class Session:
    id: str
    path: Path

    @property
    def socket_path(self) -> Path:
        return self.path / "socket"

    @property
    def result_path(self) -> Path:
        return self.path / "result.json"

    @property
    def meta_path(self) -> Path:
        return self.path / "meta.json"

    def write_meta(self, **fields: object) -> None:
        """Add to what the session says of itself (command, start time, holder pid)."""
        _write_atomically(self.meta_path, json.dumps({**self.meta(), **fields}))

    def meta(self) -> dict[str, object]:
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) else {}

    def problem(self) -> str | None:
        """Why the session's record cannot be one safe-run wrote, or None when it can."""
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None  # being created, or its holder died before writing it: the sweep decides
        except (OSError, ValueError) as exc:
            return f"its record {self.meta_path} cannot be read ({_reason(exc)})"
        started = meta.get("started") if isinstance(meta, dict) else None
        if isinstance(started, bool) or not isinstance(started, (int, float)):
            return f"its record {self.meta_path} is not a JSON object with a start time"
        if not isinstance(meta.get("command", ""), str):
            return f"its record {self.meta_path} has no command text"
        return None

    @property
    def shell_id(self) -> str | None:
        """For one command of a named shell: the shell's own session id."""
        shell = self.meta().get("shell_id")
        return shell if isinstance(shell, str) and SESSION_ID.match(shell) else None

    @property
    def started(self) -> float:
        started = self.meta().get("started")
        return float(started) if isinstance(started, (int, float)) else 0.0

    def save_result(self, result: Result) -> None:
        _write_atomically(self.result_path, result.to_json())

    def load_result(self) -> Result | None:
        try:
            return Result.from_dict(json.loads(self.result_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def connect(self, timeout: float) -> socket.socket | None:
        """A connection to the holder, or None when no holder listens any more.

        Raises TimeoutError when a holder is there but takes no new caller within `timeout`
        (stopped, or stuck with its queue of callers full).
        """
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(timeout)
        try:
            with _short_socket_path(self.socket_path) as address:
                conn.connect(address)
        except TimeoutError:
            conn.close()
            raise
        except OSError:
            conn.close()
            return None
        return conn

    def holder_listens(self, timeout: float = 0.1) -> bool:
        """Whether a holder still has the socket open.

        A dead holder's socket refuses at once; one that cannot take a caller in time (its queue is
        full: it is stopped or stuck) is there.
        """
        try:
            conn = self.connect(timeout)
        except TimeoutError:
            return True
        if conn is None:
            return False
        conn.close()
        return True

    def holder_state(self) -> tuple[int | None, str | None]:
        """The holder's pid and its process state (R, S, T when stopped...), as far as /proc says."""
        pid = self.meta().get("holder_pid")
        if not isinstance(pid, int):
            return None, None
        from ..engine.kernel import read_stat

        info = read_stat(pid)
        return pid, None if info is None else info.state

    def bury(self) -> Result | None:
        """Record that the holder died without a result, end what its command left, and say so;
        None when the session is gone meanwhile (its own holder, or another sweep, removed it).

        The record stays as long as any result does, so every later call gets the same answer.
        Callers of many processes may find the same dead holder at once: one buries it, under a
        lock on the directory, and the others read what it recorded.
        """
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return self.load_result() or self._bury_here()
        except FileNotFoundError:
            return None
        finally:
            os.close(fd)

    def _bury_here(self) -> Result:
        meta = self.meta()
        killed = self._end_left_behind()
        for entry in self.path.iterdir():
            if entry.name not in KEPT_FILES:
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
        pid = meta.get("holder_pid")
        process = f"process {pid}, " if isinstance(pid, int) else ""
        message = f"session {self.id} ended without a result: its holder died ({process}killed or crashed) while the command ran"
        if killed:
            message += "; ended what the command left running: " + ", ".join(f"{k.command} ({k.pid})" for k in killed)
        log = self.path / HOLDER_LOG
        if log.exists() and log.stat().st_size > 0:
            message += f"; the holder's own errors are in {log}"
        result = replace(error_result(str(meta.get("command", "")), message), killed=tuple(killed))
        self.save_result(result)
        return result

    def write_shell(self, pid: int, start: int) -> None:
        """The holder's shell, which leads the session of all the command starts (a file of its own:
        the caller may still be writing `meta.json`)."""
        _write_atomically(self.path / "shell.json", json.dumps({"pid": pid, "start": start}))

    def _end_left_behind(self) -> list[Killed]:
        try:
            shell = json.loads((self.path / "shell.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        pid, start = (shell.get("pid"), shell.get("start")) if isinstance(shell, dict) else (None, None)
        if not isinstance(pid, int) or not isinstance(start, int):
            return []
        from .orphans import end_left_behind

        return end_left_behind(pid, start)

    def identity(self) -> tuple[int, int] | None:
        """The directory's (device, inode): another directory of the same name is another session."""
        try:
            info = os.stat(self.path)
        except OSError:
            return None
        return info.st_dev, info.st_ino

    def reachable(self, identity: tuple[int, int] | None) -> bool:
        """Whether a caller can still find the holder: its directory is the one it started in (not
        removed with a temporary HOME, not replaced) and its socket is there."""
        return identity is not None and self.identity() == identity and os.path.lexists(self.socket_path)

    def listen(self) -> socket.socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with _short_socket_path(self.socket_path) as address:
            listener.bind(address)
        listener.listen(16)
        return listener

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def put_away(self) -> Session:
        """The session out of every caller's sight at once, under a name that no lookup takes, for
        its holder to `remove` once its answer is out: the rename is one system call where removing
        the files took a millisecond before the answer. A store's sweep removes what a holder
        killed meanwhile left there."""
        if self.path.name.endswith(PUT_AWAY):
            return self
        away = self.path.with_name(self.id + PUT_AWAY)
        try:
            os.rename(self.path, away)
        except OSError:
            self.remove()
            return self
        return Session(self.id, away)


@dataclass(frozen=True)
class Journaled(Session):
    """A named shell's command kept in its journal, as `SessionStore.all` lists it: its record
    (`fields`) and result (`kept`) as the journal holds them, since `kept_at`; its directory does
    not exist."""

    fields: dict[str, object]
    kept: dict[str, object]
    kept_at: float

    def meta(self) -> dict[str, object]:
        return dict(self.fields)

    def problem(self) -> str | None:
        return None

    def load_result(self) -> Result | None:
        try:
            return Result.from_dict(self.kept)
        except (ValueError, KeyError, TypeError):
            return None


class SessionStore:
    """All of one user's sessions; every use first clears what has expired or crashed."""

    def __init__(
        self, root: Path, clock: Callable[[], float] = time.time, report: Callable[[str], None] | None = None,
        sweep: bool = True,
    ) -> None:
        self.root = private_directory(root)
        self._clock = clock
        self._compact_at: dict[Path, float] = {}  # when each journal this store writes may be compacted next
        self._report = report or _to_stderr
        if sweep:
            self.sweep(when_due=True)

    @classmethod
    def open(
        cls, env: Mapping[str, str] | None = None, report: Callable[[str], None] | None = None, sweep: bool = True
    ) -> SessionStore:
        """This user's store, made on first use; `sweep=False` for a call that only reaches a live
        holder it names."""
        environ = os.environ if env is None else env
        try:
            root, instead = places.make_sessions_root(environ)
        except OSError as exc:
            raise _unusable(exc, str(exc.filename)) from None
        store = cls(Path(root), report=report, sweep=sweep)
        if instead:
            store._say_where()
        return store

    def create(self, command: str, of_shell: Session | None = None, **meta: object) -> Session:
        """A new session; `of_shell`: one command of that named shell, reached through its holder
        (its socket is a link to the shell's), and kept with its own result after it ended."""
        return self.make(self.reserve(), command, of_shell, meta)

    def now(self) -> float:
        """The store's clock, by which records are dated: for a holder that dates a command as it
        starts and writes its record later."""
        return self._clock()

    def reserve(self) -> Session:
        """A new session's id and place, for `make` to make (a named shell's holder names each
        command at once and makes its session when it is idle)."""
        session_id = os.urandom(12).hex()
        return Session(session_id, self.root / session_id)

    def make(
        self, session: Session, command: str, of_shell: Session | None, meta: Mapping[str, object],
        result: Result | None = None, started: float | None = None,
    ) -> Session:
        """Make the reserved session's directory and record (see `create`), with its `result`
        and `started` time when the command has already ended (one kept in its shell's journal,
        given its directory when its id is asked for)."""
        # Made under another name and renamed: a sweep (another caller, another thread) never
        # sees a session without its record, which it would take for one whose holder died. Out
        # of sight until then, its files are written in place.
        staging = _staging(session)
        staging.path.mkdir(mode=0o700)
        try:
            if of_shell is not None:
                meta = {**meta, "shell_id": of_shell.id}
                os.symlink(os.path.join("..", of_shell.id, "socket"), staging.socket_path)
            started = self._clock() if started is None else started
            _write_new(staging.meta_path, json.dumps({"command": command, "started": started, **meta}))
            if result is not None:
                _write_new(staging.result_path, result.to_json())
            os.rename(staging.path, session.path)
        except BaseException:
            shutil.rmtree(staging.path, ignore_errors=True)
            raise
        return session

    @contextmanager
    def naming(self) -> Iterator[None]:
        """Hold the names while one is looked up and given, so two first calls start one shell."""
        names = private_directory(self.root / NAMES_DIR)
        fd = os.open(names / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def named(self, name: str) -> Session | None:
        """The session that the persistent shell `name` was last given, if it is still kept."""
        try:
            session_id = (self.root / NAMES_DIR / name).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        if not SESSION_ID.match(session_id) or not (self.root / session_id).is_dir():
            return None
        return Session(session_id, self.root / session_id)

    def give_name(self, name: str, session: Session) -> None:
        _write_atomically(self.root / NAMES_DIR / name, session.id)

    def forget_name(self, name: str, session: Session) -> None:
        """Take a name back from a shell that ended, unless it already names another."""
        current = self.named(name)
        if current is not None and current.id == session.id:
            (self.root / NAMES_DIR / name).unlink(missing_ok=True)

    def get(self, session_id: str) -> Session:
        if not SESSION_ID.match(session_id):
            raise SessionError(f"{session_id!r} is not a session id (24 hexadecimal digits, as --yield-after printed)")
        session = Session(session_id, self.root / session_id)
        if not session.path.is_dir() and not self._from_journal(session):
            raise SessionError(
                f"no session {session_id}: it never existed, or it ended more than {RETENTION_S / 60:g} minutes ago"
            )
        problem = session.problem()
        if problem is not None:
            raise SessionError(f"session {session_id} cannot be used: {problem}", ExitStatus.FAILURE)
        return session

    def all(self) -> list[Session]:
        """Every session with a sound record, oldest first; one that has none is skipped. A named
        shell's commands in its journal are listed as they are kept there (`Journaled`)."""
        found = [Session(p.name, p) for p in self.root.iterdir() if SESSION_ID.match(p.name) and p.is_dir()]
        sound = [s for s in found if self._sound(s)]
        present = {s.id for s in sound}
        journaled = [j for shell in sound for j in self._journaled(shell) if j.id not in present]
        return sorted([*sound, *journaled], key=lambda s: s.started)

    def journal(
        self, shell: Session, session: Session, command: str, meta: Mapping[str, object], result: Result,
        started: float,
    ) -> None:
        """Keep an ended command of the named shell `shell` as a line of its journal: one append,
        where a directory of its own (`make`) cost four files made and renamed in, over a
        millisecond on a busy disk, for a command whose id nobody was told. `get` gives it its
        directory once its id is asked for. `started`: the store's time (`now`) as the command
        started; the line is written later, when its holder is idle, and dated by the command."""
        now = self._clock()
        record = {"command": command, "started": started, **meta, "shell_id": shell.id}
        entry = {"id": session.id, "kept": started + (result.duration_s or 0.0), "meta": record,
                 "result": result.to_dict()}
        path = shell.path / JOURNAL
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, json.dumps(entry).encode("utf-8") + b"\n")
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > JOURNAL_MAX and now >= self._compact_at.get(path, 0.0):
            self._compact(shell, now)

    def _compact(self, shell: Session, now: float) -> None:
        """The journal written anew without the commands kept longer than RETENTION_S; the next
        time is once its oldest command has expired too, and no sooner than JOURNAL_PAUSE_S, so
        that a journal of many large results is not read again at every append."""
        path = shell.path / JOURNAL
        kept = self._journal_lines(shell, now)
        _write_atomically(path, "".join(json.dumps(line) + "\n" for line in kept))
        oldest = min((float(line["kept"]) for line in kept), default=now)
        self._compact_at[path] = max(oldest + RETENTION_S, now + JOURNAL_PAUSE_S)

    def _journaled(self, shell: Session) -> list[Journaled]:
        return [Journaled(line["id"], self.root / line["id"], line["meta"], line["result"], float(line["kept"]))
                for line in self._journal_lines(shell, self._clock())]

    def _journal_lines(self, shell: Session, now: float) -> list[dict[str, Any]]:
        """The journal's entries kept no longer than RETENTION_S at `now` (none for a session that
        has no journal); one that is not a whole line of ours is passed over."""
        try:
            text = (shell.path / JOURNAL).read_bytes()
        except OSError:
            return []
        lines = []
        for raw in text.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if (isinstance(line, dict) and isinstance(line.get("id"), str) and SESSION_ID.match(line["id"])
                    and isinstance(line.get("kept"), (int, float)) and isinstance(line.get("meta"), dict)
                    and isinstance(line.get("result"), dict) and now - line["kept"] <= RETENTION_S):
                lines.append(line)
        return lines

    def _from_journal(self, session: Session) -> bool:
        """Give a command kept in a shell's journal the directory of its own that its id names, as
        `make` would have; False when no journal keeps it."""
        try:
            shells = [p for p in self.root.iterdir() if SESSION_ID.match(p.name) and (p / JOURNAL).exists()]
        except OSError:
            return False
        for path in shells:
            for entry in self._journaled(Session(path.name, path)):
                if entry.id == session.id:
                    return self._give_directory(entry)
        return False

    def _give_directory(self, entry: Journaled) -> bool:
        """Make a journaled command's directory; True once it is there, by this caller or another.
        Another caller may be making it right now (its staging directory is there): it is waited
        for; a staging directory older than GIVING_WAIT_S is a dead caller's, and this caller makes
        the directory itself. Bounded: a live caller's wait, then a dead one's take-over."""
        deadline = time.monotonic() + 2 * GIVING_WAIT_S
        while time.monotonic() < deadline:
            try:
                self._make_journaled(entry)
                return True
            except FileExistsError:
                pass
            except (OSError, ValueError, KeyError, TypeError):
                break  # made by another caller meanwhile, or not to be made
            if entry.path.is_dir():
                break
            staging = _staging(entry).path
            begun = _mtime(staging)
            if begun is not None and self._clock() - begun > GIVING_WAIT_S:
                shutil.rmtree(staging, ignore_errors=True)
            else:
                time.sleep(0.01)
        return entry.path.is_dir()

    def _make_journaled(self, entry: Journaled) -> None:
        shell = Session(str(entry.fields["shell_id"]), self.root / str(entry.fields["shell_id"]))
        result = Result.from_dict(entry.kept)
        meta = {k: v for k, v in entry.fields.items() if k not in ("command", "started", "shell_id")}
        made = self.make(Session(entry.id, entry.path), str(entry.fields.get("command", "")), shell, meta, result,
                         started=entry.started)
        os.utime(made.result_path, (entry.kept_at, entry.kept_at))  # kept as long as from the journal

    def _say_where(self) -> None:
        """Made in TMPDIR under a name of its own: said once, when made, since the user looks for
        safe-run-UID and someone else has it."""
        taken = self.root.parent / f"safe-run-{os.geteuid()}"
        self._report(f"{taken} belongs to another user; this user's sessions are kept in {self.root} instead")

    def sweep(self, when_due: bool = False) -> None:
        """Remove results kept long enough; give sessions whose holder died a result saying so.

        `when_due`: only if no caller swept in the last SWEEP_EVERY_S, and none is sweeping now.
        """
        fd = os.open(self.root / SWEEP_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if when_due else 0))
            except BlockingIOError:
                return  # another caller is sweeping right now
            now = self._clock()
            if when_due and abs(now - _last_sweep(fd)) < SWEEP_EVERY_S:
                return
            os.pwrite(fd, f"{now:<32.6f}".encode("ascii"), 0)
            self._sweep(now)
        finally:
            os.close(fd)

    def _sweep(self, now: float) -> None:
        """One look at each session, and its record read only for one still without a result (a
        live one, or one whose holder died): an agent's store holds hundreds of ended sessions, and
        reading each record cost 0.13 ms apiece here, on the path of a call."""
        try:
            with os.scandir(self.root) as entries:
                names = [entry.name for entry in entries
                         if SESSION_ID.match(entry.name.removesuffix(PUT_AWAY)) or STAGING.match(entry.name)]
        except OSError:
            return
        for name in names:
            if STAGING.match(name):
                made = _mtime(self.root / name)
                if made is not None and now - made > SETUP_GRACE_S:  # its maker died before renaming it
                    shutil.rmtree(self.root / name, ignore_errors=True)
                continue
            if name.endswith(PUT_AWAY):
                shutil.rmtree(self.root / name, ignore_errors=True)
                continue
            session = Session(name, self.root / name)
            kept = _mtime(session.result_path)
            if kept is not None:
                if now - kept > RETENTION_S:
                    session.remove()
                continue
            skipped = _mtime(session.path / SKIPPED_MARK)
            if skipped is not None:
                if now - skipped > RETENTION_S:
                    session.remove()
            elif self._sound(session) and _crashed(session, now):
                session.bury()

    def _sound(self, session: Session) -> bool:
        """Whether a session's record can be trusted; a bad one is reported the first time it is seen."""
        problem = session.problem()
        if problem is None:
            return True
        mark = session.path / SKIPPED_MARK
        if not mark.exists():
            self._report(f"skipped session {session.id}: {problem}; it is removed after {RETENTION_S / 60:g} minutes")
            try:
                mark.touch()
            except OSError:
                pass
        return False


def _staging(session: Session) -> Session:
    """Where `make` writes a session's directory before renaming it into place."""
    return Session(session.id, session.path.with_name(f".{session.id}.new"))


def _last_sweep(fd: int) -> float:
    try:
        return float(os.pread(fd, 64, 0) or b"-inf")
    except ValueError:
        return float("-inf")


def _crashed(session: Session, now: float) -> bool:
    """Whether its holder died without a result: none listens on a session old enough to have one.
    A session whose record cannot be read counts from its directory's age (a holder that died
    before writing it), and one that vanished while looked at is no one's to bury."""
    started = session.started or _mtime(session.path)
    if started is None or now - started < SETUP_GRACE_S or session.result_path.exists():
        return False
    return not session.holder_listens()


def _mtime(path: Path) -> float | None:
    """When the file at `path` was last written; None when there is none (or no such directory)."""
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else "not JSON"


def _to_stderr(message: str) -> None:
    print(f"safe-run: {message}", file=sys.stderr)


def _write_new(path: Path, text: str) -> None:
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as handle:
        handle.write(text)


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, path)


@contextmanager
def _short_socket_path(path: Path) -> Iterator[str]:
    """A socket address short enough for sockaddr_un, through /proc/self/fd when the path is long."""
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        yield str(path)
        return
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)

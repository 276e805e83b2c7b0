"""Where sessions live: one private directory per user, one sub-directory per session.

A session directory holds `meta.json` (what runs, since when), `socket` (the holder's, while the
command runs) and `result.json` (once it ended). Nothing else is trusted to say whether a holder is
alive: a socket that refuses connections belongs to a holder that died.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..result import ExitStatus, Result
from . import SessionError

SESSION_ID = re.compile(r"[0-9a-f]{24}\Z")
# How long a finished session keeps its result for `poll`, counted from the end of the command.
RETENTION_S = 600.0
# A session younger than this may still be setting up: never taken for a crashed one.
SETUP_GRACE_S = 30.0
# sockaddr_un holds 108 bytes; longer paths are reached through /proc/self/fd.
SOCKET_PATH_MAX = 100


def sessions_root(env: Mapping[str, str]) -> Path:
    """$XDG_RUNTIME_DIR/safe-run (private, gone at logout), else $XDG_STATE_HOME/safe-run/sessions."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return Path(runtime) / "safe-run"
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "safe-run" / "sessions"


def private_directory(path: Path) -> Path:
    """Create `path` for this user alone, or refuse one that someone else could read or own."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise SessionError(f"cannot create the session directory {path}: {exc.strerror}", ExitStatus.FAILURE) from exc
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise SessionError(
            f"{path} is not a private directory of this user (mode 0700); refusing to keep sessions there",
            ExitStatus.FAILURE,
        )
    return path


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
            return json.loads(self.meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def save_result(self, result: Result) -> None:
        _write_atomically(self.result_path, result.to_json())

    def load_result(self) -> Result | None:
        try:
            return Result.from_dict(json.loads(self.result_path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def connect(self) -> socket.socket | None:
        """A connection to the holder, or None when no holder listens any more."""
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with _short_socket_path(self.socket_path) as address:
                conn.connect(address)
        except OSError:
            conn.close()
            return None
        return conn

    def listen(self) -> socket.socket:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with _short_socket_path(self.socket_path) as address:
            listener.bind(address)
        listener.listen(16)
        return listener

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class SessionStore:
    """All of one user's sessions; every use first clears what has expired or crashed."""

    def __init__(self, root: Path, clock: Callable[[], float] = time.time) -> None:
        self.root = private_directory(root)
        self._clock = clock
        self.sweep()

    @classmethod
    def open(cls, env: Mapping[str, str] | None = None) -> SessionStore:
        return cls(sessions_root(os.environ if env is None else env))

    def create(self, command: str) -> Session:
        session_id = secrets.token_hex(12)
        session = Session(session_id, self.root / session_id)
        session.path.mkdir(mode=0o700)
        session.write_meta(command=command, started=self._clock())
        return session

    def get(self, session_id: str) -> Session:
        if not SESSION_ID.match(session_id):
            raise SessionError(f"{session_id!r} is not a session id (24 hexadecimal digits, as --yield-after printed)")
        session = Session(session_id, self.root / session_id)
        if not session.path.is_dir():
            raise SessionError(
                f"no session {session_id}: it never existed, or it ended more than {RETENTION_S / 60:g} minutes ago"
            )
        return session

    def all(self) -> list[Session]:
        found = [Session(p.name, p) for p in self.root.iterdir() if SESSION_ID.match(p.name) and p.is_dir()]
        return sorted(found, key=lambda s: float(s.meta().get("started", 0.0)))  # type: ignore[arg-type]

    def sweep(self) -> None:
        """Remove results kept long enough, and sessions whose holder died without one."""
        now = self._clock()
        for session in self.all():
            if _expired(session, now) or _crashed(session, now):
                session.remove()


def _expired(session: Session, now: float) -> bool:
    try:
        return now - session.result_path.stat().st_mtime > RETENTION_S
    except FileNotFoundError:
        return False


def _crashed(session: Session, now: float) -> bool:
    started = session.meta().get("started")
    if not isinstance(started, (int, float)):
        try:
            started = session.path.stat().st_mtime
        except FileNotFoundError:
            return False
    if now - started < SETUP_GRACE_S or session.result_path.exists():
        return False
    conn = session.connect()
    if conn is None:
        return True
    conn.close()
    return False


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
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

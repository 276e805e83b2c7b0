"""Where safe-run keeps what outlives one call: sessions, and the warm process (`warm/`).

Kept apart from `session.store` and free of imports beyond `os` and what is built into Python,
because the command line's fastest path (handing the call to a warm process) needs the place
before it loads anything else.
"""

from __future__ import annotations

import errno
import os
import stat

from . import TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Mapping


# Where a login session's runtime directory is, named by uid, when XDG_RUNTIME_DIR is not passed on.
LOGIN_RUNTIME = "/run/user"


def sessions_root(env: Mapping[str, str], login_runtime: str = LOGIN_RUNTIME) -> str:
    """One place for a user's sessions and shells, however the caller was started; only looked
    for, never made (see `make_sessions_root`), so that a call that keeps no session needs none.

    $XDG_RUNTIME_DIR/safe-run (private, gone at logout); else the login session's own runtime
    directory, /run/user/UID, when it is this user's alone: MCP hosts start servers with a minimal
    environment that leaves XDG_RUNTIME_DIR out, and the person's terminal, which has it, must find
    the same shells. Else $XDG_STATE_HOME/safe-run/sessions (~/.local/state/...) where it can be
    made; else, for a user whose HOME cannot be written (a random uid with HOME=/ in a container),
    a directory in TMPDIR or /tmp (`temporary_root`).

    Raises NoEntry when XDG_RUNTIME_DIR names a directory this user cannot use, and NotPrivate when
    the place is there but not this user's alone (safe-run-UID made first by another user in a
    shared TMPDIR): what listens or lies there is not this user's to find.
    """
    settled = _settled_root(env, login_runtime)
    root = temporary_root(_temporary_directory(env), os.geteuid()) if settled is None else settled
    if os.path.lexists(root) and not _ours_alone(root):
        raise NotPrivate(errno.EACCES, "not this user's alone (mode 0700)", root)
    return root


def make_sessions_root(env: Mapping[str, str], login_runtime: str = LOGIN_RUNTIME) -> tuple[str, bool]:
    """`sessions_root`, made private for this user if it is not yet; and whether it had to be made
    under a name of its own because another user holds safe-run-UID in TMPDIR.

    /tmp is everyone's to write in: whatever name a user's sessions would take there, another user
    can make first. A name nobody can guess is then made, as ssh-agent makes its socket's directory,
    and every later call finds it (`temporary_root`). Only a call that keeps a session comes here.
    """
    settled = _settled_root(env, login_runtime)
    if settled is not None:
        private_directory(settled)
        return settled, False
    temporary, uid = _temporary_directory(env), os.geteuid()
    root = temporary_root(temporary, uid)
    try:
        private_directory(root)
    except NotPrivate:
        return _make_instead(temporary, uid), True
    return root, False


def _settled_root(env: Mapping[str, str], login_runtime: str) -> str | None:
    """The place for sessions when it is not in TMPDIR; None when it must be (see `sessions_root`)."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        if not os.access(runtime, os.W_OK | os.X_OK):
            raise NoEntry(errno.EACCES, "this user cannot enter or write in it", runtime)
        return os.path.join(runtime, "safe-run")
    login = os.path.join(login_runtime, str(os.geteuid()))
    if _ours_alone(login):
        return os.path.join(login, "safe-run")
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    sessions = os.path.join(state, "safe-run", "sessions")
    return sessions if _can_make(sessions) else None


def _temporary_directory(env: Mapping[str, str]) -> str:
    temporary = env.get("TMPDIR", "")
    return temporary if os.path.isabs(temporary) and os.path.isdir(temporary) else "/tmp"


def temporary_root(temporary: str, uid: int) -> str:
    """safe-run-UID in `temporary` when it is this user's alone; else the first by name of the
    safe-run-UID.* directories that are (made by `_make_instead`, or left by an older safe-run as
    .1, .2 ...); else safe-run-UID, free to make, or another user's, which `make_sessions_root`
    then passes over. Every call picks the same one while nobody removes ours: ours come before a
    free name, so that a squatter who takes its name back cannot part the user from their sessions.
    """
    first = os.path.join(temporary, f"safe-run-{uid}")
    if _ours_alone(first):
        return first
    return _ours_instead(temporary, uid) or first


def _ours_instead(temporary: str, uid: int) -> str | None:
    prefix = f"safe-run-{uid}."
    try:
        names = sorted(name for name in os.listdir(temporary) if name.startswith(prefix))
    except OSError:
        return None
    return next((path for path in (os.path.join(temporary, name) for name in names) if _ours_alone(path)), None)


# How long a first session call waits for another process's lock on TMPDIR before it goes on
# without it (anyone may lock /tmp; the lock only keeps two first calls from making two places).
TEMPORARY_LOCK_S = 1.0


def _make_instead(temporary: str, uid: int) -> str:
    """A directory of this user's alone in `temporary` under a name nobody can guess, or the one
    another call of this user made meanwhile: looked for and made under a lock on `temporary`,
    so that two first calls at once settle on one, which every later call finds."""
    fd = os.open(temporary, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _lock_briefly(fd)
        found = _ours_instead(temporary, uid)
        if found is not None:
            return found
        path = os.path.join(temporary, f"safe-run-{uid}.{os.urandom(8).hex()}")
        os.mkdir(path, 0o700)
        return path
    finally:
        os.close(fd)  # and with it the lock


def _lock_briefly(fd: int) -> None:
    """Lock `fd`, or give up after TEMPORARY_LOCK_S (imported here: only a first session call locks)."""
    import fcntl
    import time

    deadline = time.monotonic() + TEMPORARY_LOCK_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)


def _ours_alone(path: str) -> bool:
    """A directory of this user's that nobody else may enter (0700, as login sessions make it)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077


def _can_make(path: str) -> bool:
    """Whether `path` is a directory already, or the nearest one above it that exists is ours to write in."""
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def warm_directory(env: Mapping[str, str]) -> str:
    """Where warm processes listen, beside the sessions (a name no session id can take)."""
    return os.path.join(sessions_root(env), "warm")


class NotPrivate(OSError):
    """A directory is there, but it is not this user's alone (mode 0700)."""


class NoEntry(OSError):
    """XDG_RUNTIME_DIR names a directory this user cannot enter or write in (one of another user's,
    passed on by su or sudo): nothing of this user's can be kept there."""


def private_directory(path: str) -> None:
    """Create `path` for this user alone, or refuse one that someone else could read or own.

    Used for the sessions and for the warm processes' sockets: what lives there runs commands
    for whoever can reach it.
    """
    try:
        info = os.lstat(path)  # there already, as on every call but the first: one look
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            if not os.path.isdir(path):
                raise
        info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise NotPrivate(errno.EACCES, "not this user's alone (mode 0700)", path)

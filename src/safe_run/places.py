"""Where safe-run keeps what outlives one call: sessions, and the warm process (`warm/`).

Kept apart from `session.store` and free of imports beyond `os`, because the command line's
fastest path (handing the call to a warm process) needs the place before it loads anything else.
"""

from __future__ import annotations

import os
import stat

from . import TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Mapping


# Where a login session's runtime directory is, named by uid, when XDG_RUNTIME_DIR is not passed on.
LOGIN_RUNTIME = "/run/user"


def sessions_root(env: Mapping[str, str], login_runtime: str = LOGIN_RUNTIME) -> str:
    """One place for a user's sessions and shells, however the caller was started.

    $XDG_RUNTIME_DIR/safe-run (private, gone at logout); else the login session's own runtime
    directory, /run/user/UID, when it is this user's alone: MCP hosts start servers with a minimal
    environment that leaves XDG_RUNTIME_DIR out, and the person's terminal, which has it, must find
    the same shells. Else $XDG_STATE_HOME/safe-run/sessions (~/.local/state/...) where it can be
    made; else, for a user whose HOME cannot be written (a random uid with HOME=/ in a container),
    safe-run-UID in TMPDIR or /tmp, made private as tmux does.
    """
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "safe-run")
    uid = os.geteuid()
    login = os.path.join(login_runtime, str(uid))
    if _ours_alone(login):
        return os.path.join(login, "safe-run")
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    sessions = os.path.join(state, "safe-run", "sessions")
    if _can_make(sessions):
        return sessions
    temporary = env.get("TMPDIR", "")
    if not (os.path.isabs(temporary) and os.path.isdir(temporary)):
        temporary = "/tmp"
    return _unsquatted(temporary_places(temporary, uid))


# How many names in TMPDIR a user's sessions may take when others made the first ones already.
TEMPORARY_NAMES = 10


def temporary_places(temporary: str, uid: int) -> list[str]:
    """safe-run-UID in TMPDIR, then safe-run-UID.1, .2 ... for when another user made it first."""
    first = os.path.join(temporary, f"safe-run-{uid}")
    return [first] + [f"{first}.{n}" for n in range(1, TEMPORARY_NAMES)]


def _unsquatted(places: list[str]) -> str:
    """The first of `places` that is this user's alone, else the first free one: a directory that
    everyone can write in (/tmp) lets another user make our name first, which must not leave us
    without sessions. Every call picks the same one while nobody removes ours. When all are taken,
    the first: it is refused, with its name, where it is opened."""
    for path in places:
        if _ours_alone(path):
            return path
    return next((path for path in places if not os.path.lexists(path)), places[0])


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
        raise NotPrivate(path)

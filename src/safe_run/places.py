"""Where safe-run keeps what outlives one call: sessions, and the warm process (`warm/`).

Kept apart from `session.store` and free of imports beyond `os`, because the command line's
fastest path (handing the call to a warm process) needs the place before it loads anything else.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # not from typing, whose import would cost more than this module's whole job
if TYPE_CHECKING:
    from collections.abc import Mapping


def sessions_root(env: Mapping[str, str]) -> str:
    """$XDG_RUNTIME_DIR/safe-run (private, gone at logout), else $XDG_STATE_HOME/safe-run/sessions."""
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and os.path.isdir(runtime):
        return os.path.join(runtime, "safe-run")
    state = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "safe-run", "sessions")


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
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise NotPrivate(path)

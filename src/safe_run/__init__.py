"""safe-run: run one command through the user's real shell and report honestly how it ended.

The library (`safe_run.run`, `Shell`, `Session`, ...) is in `safe_run.library.api`, loaded on first use
so that `import safe_run` (and the command line's start) stays cheap; `Remote` (the same calls
through a command prefix such as `docker exec -i C`) is in `safe_run.library.remote`, loaded likewise.
"""

from __future__ import annotations

__version__ = "0.1.0"

# What the modules on a call's start-up path check for names only type checkers need, in place of
# typing.TYPE_CHECKING: importing typing alone costs a warm call a third of its start-up, and
# type checkers know the name wherever it comes from.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .library.api import AsyncShell, Result, Session, SessionError, Shell, arun, run
    from .library.remote import Remote, RemoteError

__all__ = ["AsyncShell", "Remote", "RemoteError", "Result", "Session", "SessionError", "Shell", "arun", "run"]
REMOTE_NAMES = ("Remote", "RemoteError")


def __getattr__(name: str) -> object:
    if name in REMOTE_NAMES:
        from .library import remote

        return getattr(remote, name)
    if name in __all__:
        from .library import api

        return getattr(api, name)
    raise AttributeError(f"module 'safe_run' has no attribute {name!r}")

"""safe-run's own process title: its name, never the command it runs.

The command text is in safe-run's argv, so `pkill -f "http.server 18935"` or `pgrep -f` run by the
command itself would match safe-run, and every local user could read the command in `ps` for as
long as a session lasts. Python cannot change what /proc/PID/cmdline shows; setproctitle rewrites
the argv memory the kernel reads it from.

setproctitle's package imports `logging` only to log that its C module is missing, which costs as
much as the rest of a warm call; the C module is loaded directly when it is where the package
keeps it, and through the package otherwise.
"""

from __future__ import annotations

import _imp
import os
import sys

from . import TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Callable

NAME = "safe-run"
PACKAGE = "setproctitle"
EXTENSION = "setproctitle._setproctitle"


def hide_command() -> None:
    """Show only safe-run's name for the foreground process (and anything it forks)."""
    _setter()(NAME)


def name_holder(session_id: str) -> None:
    """A session holder says what it is, so `ps` tells it from the call that started it."""
    _setter()(f"{NAME} holder {session_id}")


def name_worker(session_id: str) -> None:
    """A named shell's holder keeps its shell, and its worker serves it (`processes.keeper`)."""
    _setter()(f"{NAME} worker {session_id}")


def name_fork_server() -> None:
    """The process the MCP server forks its holders from."""
    _setter()(f"{NAME} fork server")


def name_warm() -> None:
    """A warm process says what it is; each call it forks then hides its own command line."""
    _setter()(f"{NAME} warm")


def _setter() -> Callable[[str], None]:
    if EXTENSION in sys.modules:
        return sys.modules[EXTENSION].setproctitle  # type: ignore[no-any-return]
    for entry in filter(os.path.isabs, sys.path):
        for suffix in _imp.extension_suffixes():
            path = os.path.join(entry, PACKAGE, "_setproctitle" + suffix)
            if os.path.isfile(path):
                module = _imp.create_dynamic(_Spec(EXTENSION, path))  # type: ignore[arg-type]
                _imp.exec_dynamic(module)
                sys.modules[EXTENSION] = module
                return module.setproctitle  # type: ignore[no-any-return]
    from setproctitle import setproctitle

    return setproctitle


class _Spec:
    """What loading a C module needs to know of it: what importlib's spec would say, without
    importing importlib, which costs the caller of a warm call 1.7 ms."""

    def __init__(self, name: str, origin: str) -> None:
        self.name = name
        self.origin = origin

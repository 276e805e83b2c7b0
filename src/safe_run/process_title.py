"""safe-run's own process title: its name, never the command it runs.

The command text is in safe-run's argv, so `pkill -f "http.server 18935"` or `pgrep -f` run by the
command itself would match safe-run, and every local user could read the command in `ps` for as
long as a session lasts. Python cannot change what /proc/PID/cmdline shows; setproctitle rewrites
the argv memory the kernel reads it from.
"""

from __future__ import annotations

from setproctitle import setproctitle

NAME = "safe-run"


def hide_command() -> None:
    """Show only safe-run's name for the foreground process (and anything it forks)."""
    setproctitle(NAME)


def name_holder(session_id: str) -> None:
    """A session holder says what it is, so `ps` tells it from the call that started it."""
    setproctitle(f"{NAME} holder {session_id}")

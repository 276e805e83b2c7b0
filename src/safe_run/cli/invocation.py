"""What the process running the command line hands its verbs besides their arguments.

The command line runs in a process of its own, in a warm call's child (`processes.warm_call`), or for
a caller of `cli.main`. Each hands its verbs the stop signals it installed and its one way of
starting a session's holder (`session.launch`), so that no verb reaches for a process-wide one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.interrupts import StopSignals

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from ..session.launch import Launcher


@dataclass(frozen=True)
class Invocation:
    signals: StopSignals
    # A warm process's child hands the holder it forked ahead (`session.launch.Fork`); None: a verb forks
    # its holder when it needs one (a fresh `session.launch.Fork`, imported only then).
    holders: Launcher | None = None

    def launcher(self) -> Launcher:
        from ..session.launch import Fork

        return self.holders or Fork()


def current() -> Invocation:
    """The running verb's invocation (a fresh, uninstalled one when a verb is called from elsewhere)."""
    import click  # here: `safe-run --version` reads this module and loads no click

    obj = click.get_current_context().obj
    return obj if isinstance(obj, Invocation) else Invocation(StopSignals())

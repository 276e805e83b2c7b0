"""`safe-run attach` and `safe-run watch`: a person's terminal joins a session or named shell."""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING

import click

from ...environment import Environment
from ...core.result import ExitStatus, Result, exit_status
from .sessions import _complete_ids

if TYPE_CHECKING:
    from ...session.store import Session

# How many of an ended command's last lines are shown below the person's screen.
LAST_LINES = 10


def _join(target: str, watch: bool) -> int:
    from ...session import SessionError
    from ...session.client import check_name
    from ...session.store import SESSION_ID, SessionStore

    if not (os.isatty(0) and os.isatty(1)):
        verb = "watch" if watch else "attach"
        raise click.UsageError(f"{verb} needs a terminal: run it in one (docker exec -it, ssh -t)")
    store = SessionStore.open(sweep=False)
    if SESSION_ID.match(target):
        session = store.get(target)
    else:
        check_name(target)
        found = store.named(target)
        if found is None:
            raise SessionError(f"no shell named {target!r} is running", ExitStatus.NO_SESSION)
        session = found
    # A named shell's command, named by its own id, ends the attach when it ends, as a session's
    # command does; the shell, named by its name, lasts until the person leaves.
    about = session.id if session.shell_id is not None else None
    outcome = joined(session, target, watch, about=about)
    return 0 if outcome is None else exit_status(outcome)


def joined(
    session: Session, target: str, watch: bool, about: str | None = None, screen: int = 1,
    shown: str | None = None, suspends: bool = False,
) -> Result | None:
    """This terminal joined to `session` until its command ends (its result, shown below the
    person's screen as it is again: the command's last lines, then its summary) or the person
    leaves it (None, said on stderr); `target`: how the person names it; `about`: a named
    shell's command whose end ends the attach; `screen`: the person's terminal when it is not
    stdout, which goes elsewhere (`| tee log`): the caller then writes the result there.
    `shown`: the output this terminal showed before it joined; the rest follows it then (but a
    full screen's), in place of the last lines. `suspends`: Ctrl-Z stops this process, and the
    terminal joins again once it is taken up (see `session.attach.join`)."""
    from ...core.render import print_summary
    from ...display.yielding import end_line, print_followed_summary, unshown
    from ...session.attach import Left, Suspended, join, last_lines

    outcome = join(session, watch, stdout=screen, about=about, suspends=suspends)
    while isinstance(outcome, Suspended):
        os.kill(os.getpid(), signal.SIGTSTP)
        if shown is not None and not shown.endswith("\n"):
            shown += "\n"  # the shell wrote below the prompt meanwhile: its line is written again, answered
        outcome = join(session, watch, stdout=screen, about=about, suspends=True)
    if isinstance(outcome, Left):
        if screen == 1 and shown is not None:
            end_line(shown, Environment.current())
        how = "stopped watching" if watch else "left"
        print(f"safe-run: {how} {target}; it goes on (`safe-run attach {target}` to come back)", file=sys.stderr)
        return None
    if screen != 1:
        return outcome
    if shown is None:
        sys.stdout.write(last_lines(outcome.output, LAST_LINES))
        sys.stdout.flush()
        print_summary(outcome, Environment.current())
    else:  # a full screen's text, drawn in the join already, would land as lines below the person's
        rest = "" if outcome.alternate_screen else unshown(outcome.output, shown)
        sys.stdout.write(rest)
        sys.stdout.flush()
        print_followed_summary(outcome, Environment.current(), shown + rest)
    return outcome


@click.command("attach", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target", metavar="ID|NAME", shell_complete=_complete_ids)
def attach_command(target: str) -> int:
    """Join session ID or the named shell NAME from this terminal: see its screen, type to its command.

    Ctrl-\\ then d leaves it running; its end ends the attach with its result.
    """
    return _join(target, watch=False)


@click.command("watch", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("target", metavar="ID|NAME", shell_complete=_complete_ids)
def watch_command(target: str) -> int:
    """Watch session ID or the named shell NAME from this terminal, without typing to it.

    Ctrl-\\ then d (or Ctrl-C) stops watching; the command goes on.
    """
    return _join(target, watch=True)

"""Whether what is typed goes to the command now: one rule for `send`, people attached, and a
person's own terminal.

Typed keys that the command does not read wait in its terminal; if it ends without reading them,
the shell reads them as its next command line (`touch x` runs; a password becomes a command and
an error message). So keys go only to a command that reads its terminal:
  - the kernel sees its foreground blocked reading the terminal, or listening to it among other
    things (an event loop takes keys at once); not blocked on the standard input the caller gave
    it alone (`--stdin`), which no key reaches. The shell itself reading counts only in an input
    wait the run holds (a builtin `read`): otherwise it is the shell at its prompt;
  - the kernel cannot see what the foreground waits on (a setuid program such as sudo, su or
    passwd, seen by its own user, who is not root) and the wait is known another way: the run
    holds an input wait (the screen showed the prompt of a quiet foreground), or the terminal
    reads a line without echo, which is how every password is asked for;
  - nothing was seen yet, or there is no kernel to ask: only in an input wait the run holds.
Before the command's start and after its end, nothing is the command's.

Pure: the caller brings the tracker's last look, so that every front end answers alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from .evidence import Observation


@dataclass(frozen=True)
class Reading:
    """What the command does with its terminal now, as far as typing goes."""

    reading: bool
    canonical: bool = True  # line mode; True when unknown, the stricter case
    command: str | None = None  # the program that reads, or works, when known
    secret: bool = False  # it reads a password: what is typed is never shown, nor quoted in a note


NOT_STARTED = Reading(False)


def reading(seen: Observation | None, input_wait: bool, running: bool = True, secret: bool = False) -> Reading:
    """The module's rule. `input_wait`: the run holds an input wait (or a keyboard listener);
    `running`: the command is between its start and its end; `secret`: the wait it holds is for a
    password."""
    if not running:
        return NOT_STARTED
    if seen is None:
        return Reading(input_wait, secret=secret)
    if seen.hidden:
        reads = input_wait or password_read(seen)
    elif (seen.waiting_for_terminal and not seen.keyless) or seen.listening:
        reads = not seen.shell_in_foreground or input_wait
    else:
        reads = False
    return Reading(reads, seen.canonical, seen.foreground_command, secret or password_read(seen))


def password_read(seen: Observation) -> bool:
    """A line read without echo: a password or a passphrase. Line editors turn echo off too, but
    read key by key."""
    return seen.canonical and not seen.echo

"""What a holder answers, shaped from what it knows: pure, as the tracker's decisions are.

The holder gathers the facts (the run's progress, the command's id, the output since the last
answer, the notes of what was typed, why a shell went) and these functions make the `Result`
a caller gets. So every answer's fields and words can be tested without a shell or a socket,
and the holder keeps only its life: the run, its callers, and its records.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, replace

from .result import Killed, Reason, Result, ShellInfo, Status
from .phrases import Phrases, next_steps

NOT_TYPED = "nothing was typed: the command had already ended"


def with_note(result: Result, note: str | None) -> Result:
    """The result with a sentence put before its message."""
    if note is None:
        return result
    return replace(result, message=f"{note}. {result.message}" if result.message else note)


# Why a holder nobody can reach any more ended its shell.
UNREACHABLE = "its session directory was removed, so no call could reach it any more"


@dataclass(frozen=True)
class NamedShell:
    """What names a persistent shell in its answers."""

    shell_id: str
    name: str
    fresh_note: str | None = None  # said in its first answer: why this is a new shell


def in_shell(result: Result, shell: NamedShell, cwd: str | None, fresh: bool) -> Result:
    """A persistent shell's answer names the shell, its directory, and whether it is new (and
    then why, once)."""
    named = replace(result, shell_id=shell.shell_id, shell_name=shell.name, cwd=cwd, fresh=fresh)
    return with_note(named, shell.fresh_note if fresh else None)


def progress(
    result: Result, command_id: str, say: Phrases, output: tuple[str, int] | None = None, notes: str | None = None,
) -> Result:
    """Where a command stands (`result`, from the run), with `output` since the last answer (its
    text and the bytes dropped), what to do next, and `notes` on what was typed."""
    if output is not None:
        text, dropped = output
        result = replace(result, output=text, output_truncated=dropped > 0, output_dropped_bytes=dropped)
    return with_note(replace(result, message=next_steps(result, command_id, say)), notes)


def busy(command: str, shell: ShellInfo, running: str, command_id: str, named: NamedShell, say: Phrases) -> Result:
    """A `run` for a shell that runs `running` (session `command_id`): nothing is typed."""
    return Result(
        status=Status.BUSY, exit_code=None, strategy=None, completion_reason=Reason.BUSY, command=command,
        shell=shell, session_id=command_id, shell_id=named.shell_id, shell_name=named.name,
        message=(
            f"nothing was run: the shell {named.name} is running {_first_line(running)!r} "
            f"(session {command_id}). Wait for it with {say.poll.format(id=command_id)}, "
            f"end it with {say.stop.format(id=command_id)}, or use another shell name"
        ),
    )


def not_a_command(named: NamedShell, current_id: str, say: Phrases) -> str:
    """Why a shell's own id is refused where a command's is asked for."""
    return (f"{named.shell_id} is the shell {named.name}'s own id, not one of its commands: poll, send "
            f"and stop take a command's session_id (the one running or last run is {current_id}); "
            f"{say.close.format(name=named.name)} ends the shell")


@dataclass(frozen=True)
class Going:
    """How a persistent shell came to an end, as its holder saw it."""

    unreachable: bool = False  # its session directory was removed
    closing: bool = False  # a `close` asked for it
    signals: tuple[int, ...] = ()  # stop signals to the holder
    shell_ended: bool = False  # a stop had to end the shell itself
    shell_alive: bool = True
    idle_limit: float | None = None


def why_it_went(going: Going) -> str:
    if going.unreachable:
        return f"was closed: {UNREACHABLE}"
    if going.closing:
        return "was closed"
    if going.signals:
        return f"was ended by {signal.Signals(going.signals[0]).name} to its holder"
    if going.shell_ended:
        return ("was ended with its command: the shell itself was reading its terminal (fish's read, zsh's "
                "read or vared), and only ending the shell stops a command there")
    if not going.shell_alive:
        return "exited"
    return f"was idle for {going.idle_limit:g} s and closed itself"


def gone_note(named: NamedShell, why: str, say: Phrases) -> str:
    """What every later answer about the shell says of its end."""
    return f"the shell {named.name} {why}; the next {say.run_in.format(name=named.name)} starts a new shell"


def closed(last: Result, named: NamedShell, note: str, stopped: tuple[Killed, ...] = ()) -> Result:
    """The shell's own result once it went, after `last`, the last thing it answered; `stopped`:
    what ending a command that still ran ended."""
    return Result(
        status=Status.CLOSED, exit_code=None, strategy=None, completion_reason=Reason.CLOSED, command=None,
        shell=last.shell, message=note, killed=stopped, shell_id=named.shell_id, shell_name=named.name,
        cwd=last.cwd, fresh=False,
    )


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0][:80] if lines else ""

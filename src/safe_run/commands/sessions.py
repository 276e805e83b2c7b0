"""The session verbs: poll, send, stop and sessions, for commands started with --yield-after."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click
from click.shell_completion import CompletionItem

from ..report import emit, format_option, wants_json
from ..result import SCHEMA_VERSION, exit_status
from ..session.keys import NAMED, key_text
from ..session import SessionError

if TYPE_CHECKING:
    from ..session.store import Session


def _complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """Tab completion offers this user's session ids, each described by the first line of its command."""
    from ..session.store import SessionStore

    try:
        sessions = [session for session in SessionStore.open().all() if session.id.startswith(incomplete)]
    except SessionError:
        return []
    return [CompletionItem(session.id, help=_first_line(session)) for session in sessions]


def _first_line(session: Session) -> str | None:
    lines = str(session.meta().get("command", "")).strip().splitlines()
    return lines[0] if lines else None


def _complete_keys(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The key names `--key` takes: the named keys and ctrl-<letter>."""
    names = sorted(NAMED) + [f"ctrl-{letter}" for letter in "abcdefghijklmnopqrstuvwxyz"]
    return [name for name in names if name.startswith(incomplete.lower())]


def _wait_option(default: float | None, help_text: str) -> Callable[[click.decorators.FC], click.decorators.FC]:
    return click.option(
        "--wait", type=click.FloatRange(min=0), default=default, metavar="SECONDS", show_default=default is not None,
        help=help_text,
    )


@click.command("poll", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session_id", metavar="ID", shell_complete=_complete_ids)
@_wait_option(None, "Wait up to this long for the command to end or ask for input (returns at once when it does).")
@format_option
def poll_command(session_id: str, wait: float | None, output_format: str) -> int:
    """The new output of session ID and where its command stands; its final result once it ended."""
    from ..session.client import ask

    result = ask(session_id, {"op": "poll", "wait": wait or 0})
    emit(result, output_format)
    return exit_status(result)


def _keys(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> str:
    try:
        return "".join(key_text(value) for value in values)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc


@click.command("send", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session_id", metavar="ID", shell_complete=_complete_ids)
@click.argument("text", required=False)
@click.option("--no-enter", is_flag=True, help="Do not press Enter after TEXT.")
@click.option(
    "--key", "keys", multiple=True, callback=_keys, metavar="KEY", shell_complete=_complete_keys,
    help=f"Press a key after TEXT (repeatable): ctrl-<letter>, {', '.join(sorted(NAMED))}.",
)
@_wait_option(1.0, "Then wait up to this long for the command to end or ask for input again.")
@format_option
def send_command(
    session_id: str, text: str | None, no_enter: bool, keys: str, wait: float, output_format: str
) -> int:
    """Type TEXT (and Enter) into session ID's command, and answer like poll --wait."""
    if text is None and not keys:
        raise click.UsageError("nothing to send: give TEXT, --key, or both")
    from ..session.client import ask

    typed = (text or "") + ("" if no_enter or text is None else "\r") + keys
    result = ask(session_id, {"op": "send", "text": typed, "wait": wait})
    emit(result, output_format)
    return exit_status(result)


@click.command("stop", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session_id", metavar="ID", shell_complete=_complete_ids)
@format_option
def stop_command(session_id: str, output_format: str) -> int:
    """End session ID's command and everything it started; answer with its final result."""
    from ..session.client import ask

    result = ask(session_id, {"op": "stop"})
    emit(result, output_format)
    return exit_status(result)


@click.command("sessions", context_settings={"help_option_names": ["-h", "--help"]})
@format_option
def sessions_command(output_format: str) -> int:
    """List this user's sessions, running and finished: id, status, age, command."""
    from ..session.client import listing

    rows = listing(time.time())
    if wants_json(output_format):
        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "sessions": rows}, ensure_ascii=False))
    else:
        from ..render import render_sessions

        render_sessions(rows)
    return 0

"""The session verbs: poll, send, stop and sessions, for commands started with --yield-after."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click
from click.shell_completion import CompletionItem

from ...environment import Environment
from ..report import emit, format_option, write_json_line
from ...core.result import SCHEMA_VERSION, exit_status
from ...session.keys import NAMED, key_text
from .params import SECONDS, read_secret_text, refused_as_usage, stdin_is_open

if TYPE_CHECKING:
    from ...session.store import Session


def _complete_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """This user's session ids, each described by the first line of its command.

    Completion only looks: no sweep of the store and nothing printed in the middle of a line.
    """
    from ...session.store import SESSION_ID, Session, sessions_root

    try:
        root = sessions_root(os.environ)
        names = os.listdir(root)
    except OSError:
        return []
    found = sorted(name for name in names if SESSION_ID.match(name) and name.startswith(incomplete))
    return [CompletionItem(name, help=_first_line(Session(name, root / name))) for name in found]


def _first_line(session: Session) -> str | None:
    lines = str(session.meta().get("command", "")).strip().splitlines()
    return lines[0] if lines else None


def _complete_keys(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """The key names `--key` takes: the named keys and ctrl-<letter>."""
    names = sorted(NAMED) + [f"ctrl-{letter}" for letter in "abcdefghijklmnopqrstuvwxyz"]
    return [name for name in names if name.startswith(incomplete.lower())]


def _wait_option(default: float | None, help_text: str) -> Callable[[click.decorators.FC], click.decorators.FC]:
    return click.option(
        "--wait", type=SECONDS, default=default, metavar="SECONDS", show_default=default is not None,
        help=help_text,
    )


@click.command("poll", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session_id", metavar="ID", shell_complete=_complete_ids)
@_wait_option(None, "Wait up to this long for the command to end or ask for input (returns at once when it does).")
@format_option
def poll_command(session_id: str, wait: float | None, output_format: str) -> int:
    """The new output of session ID and where its command stands; its final result once it ended."""
    from ... import calls

    result = calls.poll(session_id, wait or 0.0)
    emit(result, output_format, Environment.current())
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
    "--queue", is_flag=True,
    help="If the command is not reading its terminal now, type TEXT when it next does (thrown away if it ends first).",
)
@click.option(
    "--key", "keys", multiple=True, callback=_keys, metavar="KEY", shell_complete=_complete_keys,
    help=f"Press a key after TEXT (repeatable): ctrl-<letter>, {', '.join(sorted(NAMED))}.",
)
@_wait_option(1.0, "Then wait up to this long for the command to end or ask for input again.")
@format_option
def send_command(
    session_id: str, text: str | None, no_enter: bool, queue: bool, keys: str, wait: float, output_format: str
) -> int:
    """Type TEXT (and Enter) into session ID's command, if it is reading its terminal; answer like poll --wait.

    Every user on the machine can see a command line's arguments (ps): give a secret as -, and
    TEXT is read from standard input instead (a pipe to its end, or one line typed unseen at a
    terminal). To type a lone '-', give it with its line break, $'-\\n'.
    """
    if text == "-":
        from ...session.typist import TYPE_AHEAD_MAX

        text = read_secret_text(stdin_is_open(), TYPE_AHEAD_MAX)
    from ... import calls

    with refused_as_usage():
        calls.keystrokes(text, keys)
    result = calls.send(session_id, text, keys, enter=not no_enter, queue=queue, wait_s=wait)
    emit(result, output_format, Environment.current())
    return exit_status(result)


@click.command("stop", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("session_id", metavar="ID", shell_complete=_complete_ids)
@format_option
def stop_command(session_id: str, output_format: str) -> int:
    """End session ID's command and everything it started; answer with its final result."""
    from ... import calls

    result = calls.stop(session_id)
    emit(result, output_format, Environment.current())
    return exit_status(result)


@click.command("close", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("name", metavar="NAME")
@format_option
def close_command(name: str, output_format: str) -> int:
    """End the persistent shell NAME (--in NAME) and everything it started; its last result, with what was ended."""
    from ... import calls

    result = calls.close_shell(name)
    emit(result, output_format, Environment.current())
    return 0


@click.command("sessions", context_settings={"help_option_names": ["-h", "--help"]})
@format_option
def sessions_command(output_format: str) -> int:
    """List this user's sessions, running and finished: id, status, age, command."""
    from ...session.client import listing

    rows = listing(time.time())
    env = Environment.current()
    if env.wants_json(output_format):
        write_json_line(json.dumps({"schema_version": SCHEMA_VERSION, "sessions": rows}, ensure_ascii=False), env.stdout)
    else:
        from ...core.render import render_sessions

        render_sessions(rows, env.stdout)
    return 0

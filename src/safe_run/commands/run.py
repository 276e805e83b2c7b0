"""The run verb: `safe-run [OPTIONS] [--] COMMAND...` runs one command and reports how it ended."""

from __future__ import annotations

import re
import sys

import click

from ..report import annotate, emit, resolve_format, run_format_option
from ..result import exit_status
from ..runner import RunRequest, execute
from ..tracker import Timers

EXIT_STATUS_HELP = (
    "Exit status: the command's own exit code when it completed; 2 usage or syntax error; "
    "75 still running in a session (--yield-after); 123 no such session (poll, send, stop); "
    "124 stopped before it finished (timeout, waiting for input); "
    "125 safe-run could not run the command; 129/130/143 safe-run was interrupted (SIGHUP/SIGINT/SIGTERM); "
    "141 the reader of stdout went away (SIGPIPE)."
)
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
STRATEGIES = ("auto", "rich", "basic", "none")
DEFAULT_TIMERS = Timers()


def _parse_env(values: tuple[str, ...]) -> dict[str, str]:
    env = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not ENV_NAME.match(name):
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")
        env[name] = value
    return env


def _read_command(words: tuple[str, ...], command_file: str | None) -> str:
    """The command text from the words or the file; refuse what cannot be run as given."""
    if words and command_file is not None:
        raise click.UsageError("give the command as arguments or with --command-file, not both")
    if command_file is not None:
        data = sys.stdin.buffer.read() if command_file == "-" else _read_file(command_file)
        try:
            command = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"the command file is not valid UTF-8 (byte {exc.start})") from exc
    else:
        command = " ".join(words)
    if "\0" in command:
        raise click.UsageError("the command contains a NUL byte, which no shell can run")
    if not command.strip():
        raise click.UsageError("no command given (an empty command runs nothing)")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise click.UsageError("the command is not valid UTF-8") from exc
    return command


def _read_file(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="--command-file") from exc


def _non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and value < 0:
        raise click.BadParameter("must not be negative")
    return value


@click.command(
    "run",
    context_settings={"allow_interspersed_args": False, "help_option_names": ["-h", "--help"]},
    epilog=EXIT_STATUS_HELP,
)
@click.argument("command", nargs=-1, metavar="[--] COMMAND...")
@click.option(
    "--command-file", type=click.Path(dir_okay=False, allow_dash=True), metavar="FILE",
    help="Read the command from FILE ('-' for stdin).",
)
@click.option("--shell", "shell", metavar="PATH", help="Shell to run in (default: $SHELL, then the passwd entry, then /bin/sh).")
@click.option("--no-rc", is_flag=True, help="Do not load the user's rc files.")
@click.option(
    "--cwd", type=click.Path(exists=True, file_okay=False), metavar="DIR", help="Directory to run the command in."
)
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="Set a variable for the command (repeatable).")
@run_format_option
@click.option(
    "--max-output", type=click.IntRange(min=1024), default=1024 * 1024, show_default=True, metavar="BYTES",
    help="Keep at most this many bytes of output: the first and last halves; the middle is dropped.",
)
@click.option(
    "--strategy", type=click.Choice(STRATEGIES), default="auto", show_default=True,
    help="What decides the end: rich (integration marks), basic (prompt marks), none (no integration); "
    "auto starts rich and steps down when integration fails.",
)
@click.option(
    "--timeout", type=float, default=None, callback=_non_negative, metavar="SECONDS",
    help="Stop the command after this long (exit status 124). Default: no limit.",
)
@click.option(
    "--idle", type=float, default=DEFAULT_TIMERS.idle, show_default=True, callback=_non_negative, metavar="SECONDS",
    help="Quiet time before a fallback (prompt back without marks, input wait) is decided.",
)
@click.option(
    "--activation-timeout", type=float, default=DEFAULT_TIMERS.activation, show_default=True,
    callback=_non_negative, metavar="SECONDS", help="How long the shell may take to become ready.",
)
@click.option(
    "--silence-timeout", type=float, default=DEFAULT_TIMERS.silence, show_default=True, callback=_non_negative,
    metavar="SECONDS", help="Where the kernel cannot tell whether a command runs: stop it after this much silence.",
)
@click.option(
    "--no-output-timeout", type=float, default=DEFAULT_TIMERS.no_output, show_default=True,
    callback=_non_negative, metavar="SECONDS",
    help="Where the kernel cannot tell whether a command runs: stop it when it printed nothing for this long.",
)
@click.option(
    "--yield-after", type=float, default=None, callback=_non_negative, metavar="SECONDS",
    help="Return after this long with status running and a session id while the command goes on "
    "(see poll, send, stop); an input wait then keeps the command alive. Default: wait for the end.",
)
@click.option("--keep-background", is_flag=True, help="Leave background jobs (cmd &) running when the run ends.")
@click.option(
    "--no-batch-env", is_flag=True,
    help="Keep the caller's PAGER, GIT_PAGER, GIT_EDITOR, ... instead of non-interactive defaults.",
)
@click.option("--log", type=click.File("wb"), metavar="FILE", help="Write the raw terminal transcript to FILE.")
def run_command(
    command: tuple[str, ...],
    command_file: str | None,
    shell: str | None,
    no_rc: bool,
    cwd: str | None,
    env: tuple[str, ...],
    output_format: str,
    max_output: int,
    strategy: str,
    timeout: float | None,
    idle: float,
    activation_timeout: float,
    silence_timeout: float,
    no_output_timeout: float,
    yield_after: float | None,
    keep_background: bool,
    no_batch_env: bool,
    log: click.utils.LazyFile | None,
) -> int:
    """Run COMMAND through your shell in a pseudo-terminal and report how it ended.

    Several words are joined with spaces; quote the command or put it after -- when it has options
    of its own. The result is JSON or a pretty summary; see `man safe-run` for every field.
    """
    text = _read_command(command, command_file)
    request = RunRequest(
        command=text,
        shell=shell,
        cwd=cwd,
        env=_parse_env(env),
        load_rc=not no_rc,
        strategy=strategy,
        timers=Timers(
            activation=activation_timeout,
            idle=idle,
            silence=silence_timeout,
            no_output=no_output_timeout,
            timeout=timeout,
        ),
        batch_env=not no_batch_env,
        keep_background=keep_background,
        max_output=max_output,
        log=log,  # type: ignore[arg-type]
    )
    if yield_after is not None:
        if output_format == "jsonl":
            raise click.UsageError("--format jsonl follows a run to its end; with --yield-after use json and poll")
        from ..live import waiting_line
        from ..session.client import start_session

        with waiting_line(resolve_format(output_format), yield_after):
            result = start_session(request, yield_after)
        emit(result, output_format)
    else:
        shown = resolve_format(output_format)
        display = None
        if shown != "json":
            from ..live import make_display

            display = make_display(shown, max_output)
        result = execute(request, display=display)
        if display is None:
            emit(result, shown)
        else:
            display.finished(result)
    annotate(result)
    return exit_status(result)

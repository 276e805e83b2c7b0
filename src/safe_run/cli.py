"""The command line: verbs, parsing, and the one way out.

`safe-run [OPTIONS] [--] COMMAND...` runs a command; a first word that names a verb (`poll`,
`send`, `stop`, `sessions`, `doctor`, `run`) runs that verb instead, so a program with such a name
runs as `safe-run -- poll`. This is the only module that exits: every way out goes through `main`,
which turns usage mistakes into one-line messages with status 2 and anything unexpected into
status 125, never a traceback.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from . import __version__
from .commands.doctor import doctor_command
from .commands.run import run_command
from .commands.sessions import poll_command, send_command, sessions_command, stop_command
from .report import FORMATS, SINGLE_ANSWER_FORMATS, json_line, wants_json
from .session import SessionError
from .result import ExitStatus, error_result

RUN = "run"
# Words that mean the group itself rather than a command to run.
GROUP_OPTIONS = ("-h", "--help", "--version")


class SafeRunGroup(click.Group):
    """The verbs; any other first word is the start of a command to run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self._starts_a_run(ctx, args):
            args = [RUN, *args]
        return super().parse_args(ctx, args)

    def _starts_a_run(self, ctx: click.Context, args: list[str]) -> bool:
        if not args:
            # Completing the first word offers the verbs; running nothing is the run verb's error.
            return not ctx.resilient_parsing
        return args[0] not in self.commands and args[0] not in GROUP_OPTIONS

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list:
        """An option as the first word is one of the run verb's options, or --version."""
        if incomplete.startswith("-"):
            own = [item for item in super().shell_complete(ctx, incomplete) if item.value == "--version"]
            return [*self.commands[RUN].shell_complete(ctx, incomplete), *own]
        return super().shell_complete(ctx, incomplete)

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The run verb's help (it is what people use most), then the other verbs."""
        run = self.commands[RUN]
        run_ctx = click.Context(run, info_name=ctx.info_name, **run.context_settings)
        run.format_usage(run_ctx, formatter)
        formatter.write_usage(ctx.command_path, "VERB [ARGS]...", prefix="       ")
        run.format_help_text(run_ctx, formatter)
        records = [param.get_help_record(run_ctx) for param in run.get_params(run_ctx) if isinstance(param, click.Option)]
        records += [param.get_help_record(ctx) for param in self.get_params(ctx) if "--version" in param.opts]
        with formatter.section("Options"):
            formatter.write_dl([record for record in records if record is not None])
        with formatter.section("Verbs (a program with one of these names runs as `safe-run -- NAME`)"):
            formatter.write_dl([(name, command.get_short_help_str(60)) for name, command in self.commands.items()])
        run.format_epilog(run_ctx, formatter)


@click.group(cls=SafeRunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="safe-run")
def cli() -> None:
    """Run a command through your shell in a pseudo-terminal and report how it ended."""


for _command in (run_command, poll_command, send_command, stop_command, sessions_command, doctor_command):
    cli.add_command(_command)


def _format_from_argv(argv: list[str]) -> str:
    """The --format a failed parse was asked for, so that a usage error still answers in kind."""
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word.startswith("--format="):
            return word.split("=", 1)[1]
        if word == "--format" and index + 1 < len(argv):
            return argv[index + 1]
    return "auto"


def _fail(message: str, argv: list[str], status: int) -> int:
    """One line on stderr, and the error as JSON on stdout when JSON was asked for."""
    hint = " (try 'safe-run --help')" if status == ExitStatus.USAGE else ""
    click.echo(f"safe-run: {message}{hint}", err=True)
    output_format = _format_from_argv(argv)
    # jsonl only means something to the run verb: the others answer a refused one like auto.
    accepted = SINGLE_ANSWER_FORMATS if argv and argv[0] in cli.commands and argv[0] != RUN else FORMATS
    output_format = output_format if output_format in accepted else "auto"
    if wants_json(output_format):
        sys.stdout.write(json_line(error_result("", message), output_format) + "\n")
    return status


def main(argv: list[str] | None = None) -> NoReturn:
    args = sys.argv[1:] if argv is None else argv
    try:
        code = cli.main(args, prog_name="safe-run", standalone_mode=False)
    except click.UsageError as exc:
        code = _fail(_one_line(exc.format_message()), args, ExitStatus.USAGE)
    except click.ClickException as exc:
        code = _fail(_one_line(exc.format_message()), args, ExitStatus.FAILURE)
    except SessionError as exc:
        code = _fail(str(exc), args, exc.status)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.Abort:
        code = ExitStatus.INTERRUPTED
    except KeyboardInterrupt:
        code = ExitStatus.INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, not a traceback
        if os.environ.get("SAFE_RUN_DEBUG"):
            raise
        code = _fail(_one_line(f"internal error: {type(exc).__name__}: {exc}"), args, ExitStatus.FAILURE)
    sys.exit(code if isinstance(code, int) else 0)


def _one_line(message: str) -> str:
    return " ".join(message.split())

"""The verbs of the command line put together: one module per verb, and the group that routes to them.

`safe-run [OPTIONS] [--] COMMAND...` runs a command; a first word that names a verb (`poll`,
`send`, `stop`, `sessions`, `attach`, `watch`, `doctor`, `run`, ...: `verbs.VERBS`) runs that verb
instead, so a program with such a name runs as `safe-run -- watch`.

A verb's module is imported when the verb is first looked up, so that a run does not pay for
the code of the doctor or of the session verbs.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module

import click

from ... import __version__

from ..verbs import GROUP_OPTIONS, RUN

from ... import TYPE_CHECKING
if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# Each verb's module and command object, in the order of verbs.VERBS (the order help lists them in).
VERB_COMMANDS = {
    RUN: ("run", "run_command"),
    "poll": ("sessions", "poll_command"),
    "send": ("sessions", "send_command"),
    "stop": ("sessions", "stop_command"),
    "close": ("sessions", "close_command"),
    "sessions": ("sessions", "sessions_command"),
    "attach": ("attach", "attach_command"),
    "watch": ("attach", "watch_command"),
    "doctor": ("doctor", "doctor_command"),
    "mcp": ("serve", "mcp_command"),
}


class Verbs(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported on first use.

    click's groups keep a mutable mapping, but the verbs are fixed: adding or removing one is refused.
    """

    def __init__(self) -> None:
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module, attribute = VERB_COMMANDS[name]
            command: click.Command = getattr(import_module(f".{module}", __package__), attribute)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        raise TypeError("the verbs are fixed")

    def __delitem__(self, name: str) -> None:
        raise TypeError("the verbs are fixed")

    def __iter__(self) -> Iterator[str]:
        return iter(VERB_COMMANDS)

    def __len__(self) -> int:
        return len(VERB_COMMANDS)


class SafeRunGroup(click.Group):
    """The verbs; any other first word is the start of a command to run."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self._starts_a_run(ctx, args):
            args = self._verb_after_options(args) or [RUN, *args]
        return super().parse_args(ctx, args)

    def _verb_after_options(self, args: list[str]) -> list[str] | None:
        """`safe-run --format json poll ID`, written as `git -C DIR status` is: the verb's own
        options go to it; an option it does not take is a usage error that says how to write the
        call, rather than `poll` run as a shell command that is not found. A program named like a
        verb runs after `--`. None: the words are a run."""
        verb_at = _first_word(args, _valued_options(self.commands[RUN]))
        if verb_at is None or args[verb_at] not in self.commands:
            return None
        verb, options = args[verb_at], args[:verb_at]
        command = self.commands[verb]
        known = {name for param in command.params if isinstance(param, click.Option) for name in param.opts}
        for word in options:
            name = word.split("=", 1)[0]
            if name.startswith("-") and name not in known:
                own = sorted(n for n in known if n.startswith("--") and n != "--help")
                takes = f" (it takes {', '.join(own)})" if own else ""
                raise click.UsageError(
                    f"{name} is not an option of `{verb}`{takes}: write `safe-run {verb} ...` with its own options "
                    f"(`safe-run {verb} --help`), or put `--` before {verb} to run a program of that name"
                )
        return [verb, *options, *args[verb_at + 1:]]

    def _starts_a_run(self, ctx: click.Context, args: list[str]) -> bool:
        if not args:
            # Completing the first word offers the verbs; running nothing is the run verb's error.
            return not ctx.resilient_parsing
        return args[0] not in self.commands and args[0] not in GROUP_OPTIONS

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
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


def _valued_options(command: click.Command) -> set[str]:
    """The option names of `command` that take the next word as their value."""
    return {name for param in command.params if isinstance(param, click.Option) and not param.is_flag
            and not param.count for name in param.opts}


def _first_word(args: list[str], valued: set[str]) -> int | None:
    """Where the first word that is neither an option nor an option's value is; None when `--`
    comes first or there is none."""
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            return None
        if not word.startswith("-") or word == "-":
            return index
        index += 2 if word in valued else 1
    return None


@click.group(cls=SafeRunGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="safe-run")
def cli() -> None:
    """Run a command through your shell in a pseudo-terminal and report how it ended."""


cli.commands = Verbs()

"""fish: `--init-command` sources the integration after the user's config has loaded."""

from __future__ import annotations

import os
from collections.abc import Mapping
from glob import escape, glob

from ..core.tracker import Lines
from . import Launch, RunSetup, integration_script
from .kind import DoctorFacts, ShellKind, SyntaxFacts
from .posix import TO_TERMINAL, status_file

# C, the command, and the line's own end (`__sr_line_end` of integration.fish, as `posix.LINE_END`
# is bash's and zsh's).
RUN_LINE = b" __sr_start; eval $__sr_text; __sr_line_end\r"


def quote(value: str) -> str:
    """fish single quotes: only backslash and the quote itself are special inside."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def header(setup: RunSetup) -> str:
    exports = "".join(f"    set -gx {name} {quote(value)}\n" for name, value in setup.env.items())
    return (
        f"set -g __sr_nonce {quote(setup.nonce)}\n"
        f"set -g __sr_cmd {quote(str(setup.command_file))}\n"
        f"set -g __sr_status_file {quote(str(status_file(setup)))}\n"
        f"set -g __sr_cwd {quote(setup.cwd)}\n"
        f"function __sr_apply_env\n{exports}end\n"
    )


def lines(setup: RunSetup, integrated: bytes, heal: bytes = b"") -> Lines:
    """fish spells the exit status `$status`; otherwise as for the POSIX shells (see `posix.lines`)."""
    nonce = setup.nonce
    query = f" printf '\\e]633;D;%s;%s\\a' $status {nonce} {TO_TERMINAL}\r"
    fallback = (
        f" printf '\\e]633;C;%s\\a' {nonce}; eval (string collect < {quote(str(setup.command_file))});"
        f" set -g __sr_status $status; echo $__sr_status >>{quote(str(status_file(setup)))};"
        f" printf '\\e]633;D;%s;%s\\a' $__sr_status {nonce} {TO_TERMINAL}\r"
    )
    return Lines(integrated, fallback.encode(), query.encode(), heal)


def scoped(command: str, cwd: str | None, env: Mapping[str, str]) -> str:
    """fish has no subshell: a block with local exported variables, and the directory put back."""
    if cwd is None and not env:
        return command
    lines = ["begin", "set -l __sr_back $PWD"]
    lines += [f"set -lx {name} {quote(value)}" for name, value in env.items()]
    lines += [f"builtin cd {quote(cwd)}" if cwd is not None else "true", "and begin", command, "end"]
    lines += ["set -l __sr_s $status", "builtin cd $__sr_back", "__sr_return $__sr_s", "end"]
    return "\n".join(lines)


def with_stdin(command: str, fd: int) -> str:
    """Piped into the block by cat: fish gives a block's `<&N` to the programs it runs, but its
    builtins (`read`) read the shell's own standard input (the terminal) instead."""
    return f"command cat <&{fd} {fd}<&- | begin; {command}\nend {fd}<&-"


def _argv(setup: RunSetup) -> list[str]:
    argv = [setup.shell_path, "--private", "--interactive"]
    return argv if setup.load_rc else [*argv, "--no-config"]


# The caller's --env and --cwd, applied after the config files (which may have changed them).
ARRIVAL = "__sr_apply_env\nbuiltin cd -- $__sr_cwd; or exit 125\n"


def launch(setup: RunSetup) -> Launch:
    script = setup.workdir / "integration.fish"
    script.write_text(header(setup) + ARRIVAL + integration_script("integration.fish"), encoding="utf-8")
    argv = [*_argv(setup), "--init-command", f"source {quote(str(script))}"]
    return Launch(argv, {}, live_lines(setup), integrated=True)


def live_lines(setup: RunSetup) -> Lines:
    """What to type into this shell, healing included; also for a shell a command started by `exec`."""
    return lines(setup, RUN_LINE, heal_line(setup))


def heal_line(setup: RunSetup) -> bytes:
    """The run line that first loads the integration into the live shell again (see `Lines.heal`)."""
    script = setup.workdir / "reinject.fish"
    if not script.exists():
        script.write_text(header(setup) + integration_script("integration.fish") + "__sr_mark R\n", encoding="utf-8")
    return f" source {quote(str(script))};".encode() + RUN_LINE


def plain_launch(setup: RunSetup) -> Launch:
    return Launch(_argv(setup), {}, lines(setup, b""), integrated=False)


def rc_candidates(environ: Mapping[str, str], home: str, zdotdir: str | None) -> list[str]:
    config = os.path.join(environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config"), "fish")
    return [*sorted(glob("/etc/fish/conf.d/*.fish")), "/etc/fish/config.fish",
            *sorted(glob(os.path.join(escape(config), "conf.d", "*.fish"))), os.path.join(config, "config.fish")]


SHELL = ShellKind(
    name="fish",
    family="fish",
    plain_launch=plain_launch,
    scoped=scoped,
    with_stdin=with_stdin,
    launch=launch,
    live_lines=live_lines,
    # --no-config: the user's files are not even read.
    syntax=SyntaxFacts(("--no-config", "--no-execute"), grammar="fish"),
    doctor=DoctorFacts(
        rc_candidates=rc_candidates,
        exe_probe="command readlink /proc/$fish_pid/exe 2>/dev/null; true",
        names_probe="printf 'name:%s\\n' (functions -a -n) (set -xn); ",
        # Kept out of the user's history by --private.
        plain_options=("--private",),
    ),
)

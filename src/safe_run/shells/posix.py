"""POSIX-family shells (sh, dash, ksh, and bash or zsh without integration): quoting, the
integration header, and the lines typed when no integration can be relied on."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from ..core.tracker import Lines
from . import Launch, RunSetup, integration_script
from .kind import DoctorFacts, ShellKind, SyntaxFacts

# The only way to learn the exit code of a command whose end no integration reported: ask. The
# answer goes to the terminal itself, so a command that sent the shell's output elsewhere
# (`exec >build.log`) neither loses it nor finds it in its file.
TO_TERMINAL = "2>/dev/null >/dev/tty"
STATUS_QUERY = " {builtin} printf '\\033]633;D;%s;%s\\007' \"$?\" {nonce} " + TO_TERMINAL + "\r"
# The word that runs a shell's own printf and echo past a function or alias of that name. POSIX
# shells' `command` does; zsh's runs the program found on PATH instead: a process that holds the
# terminal as it prints the mark, and none at all once a command emptied PATH.
RUN_BUILTIN = "command"
# Prints the program running it (Linux /proc; nothing elsewhere): doctor names an rc file's `exec`.
EXE_PROBE = "command readlink /proc/$$/exe 2>/dev/null; true"
# The end of every command line typed into bash or zsh: `__sr_line_end` of their integration.
#
# The line's end is the command's: everything the shell does after it (its prompt hooks, what they
# print, what they start in the background) is the shell's. So the function records the command's
# exit status and the last process id the system gave out (what the shell starts from here on is
# its prompt's work, see `cleanup`) in the status file, then sends D itself, before any hook, and
# returns the status, so that `$?` stays the command's for the hooks and the user's prompt. The
# record comes first: an end mark counts only once the shell has recorded the line's status (see
# `tracker.EndCheck`). A shell that reads its terminal without that record is still inside the
# line (a `read`, `select` or `vared` of the command), and nothing is typed into it. Builtins only,
# and `>>`, which noclobber lets through: a command that changed PATH or the options still cannot
# stop it. A function, not a file sourced on every line: bash opened, read and parsed that file
# each time, about 30 us of the 0.25 ms bash spends on a command here. Called in an `&&` list,
# which neither `set -e` nor the ERR trap looks at: the status it returns is no failure of its own.
LINE_END = " __sr_line_end && builtin :"
# A POSIX shell's prompt takes the mark as it is (see `marked_prompt`).
PROMPT_MARK = ("", "")
# The shells whose `-n` is known to parse POSIX text; the text of any other is not checked.
POSIX_FAMILY = ("sh", "dash", "ash", "ksh", "mksh", "pdksh", "oksh", "loksh", "posh", "yash")


def quote(value: str) -> str:
    """Single-quote a value so the shell reads it back byte for byte."""
    return "'" + value.replace("'", "'\\''") + "'"


def header(setup: RunSetup) -> str:
    """Shell assignments that hand the per-run values to the static integration script."""
    exports = "".join(f"    builtin export {name}={quote(value)}\n" for name, value in setup.env.items())
    return (
        f"__sr_nonce={quote(setup.nonce)}\n"
        f"__sr_cmd={quote(str(setup.command_file))}\n"
        f"__sr_status_file={quote(str(status_file(setup)))}\n"
        f"__sr_cwd={quote(setup.cwd)}\n"
        f"__sr_load_rc={1 if setup.load_rc else 0}\n"
        f"__sr_apply_env() {{\n{exports}    builtin :\n}}\n"
    )


def lines(setup: RunSetup, integrated: bytes, heal: bytes = b"", prompt_mark: tuple[str, str] | None = None,
          run_builtin: str = RUN_BUILTIN) -> Lines:
    """The command bracketed by nonce-marked C and D that the typed line prints itself.

    Nothing may be typed after the command where a prompt cannot be told from a `read` (dash), so
    the line brackets it all by itself, with builtins only (no PATH lookup, so `PATH=/nonexistent`
    cannot break it): the file is sourced with `.`, and the exit status goes to the terminal as D
    and to a status file, which still tells the end where the terminal cannot be opened.
    `prompt_mark`: the line first puts a D in front of the shell's prompt, between these two
    (bash's `\\[` and `\\]`: no width on the screen), as `marked_prompt` says.
    `run_builtin`: see `RUN_BUILTIN`.
    """
    nonce, run = setup.nonce, run_builtin
    query = STATUS_QUERY.format(builtin=run, nonce=nonce)
    fallback = (
        (marked_prompt(nonce, *prompt_mark) if prompt_mark is not None else "") +
        f" {run} printf '\\033]633;C;%s\\007' {nonce};"
        f" . {quote(str(setup.command_file))};"
        f" __sr_status=$?; {run} echo \"$__sr_status\" >>{quote(str(status_file(setup)))};"
        f" {run} printf '\\033]633;D;%s;%s\\007' \"$__sr_status\" {nonce} {TO_TERMINAL}\r"
    )
    return Lines(integrated, fallback.encode(), query.encode(), heal)


def marked_prompt(nonce: str, before: str, after: str) -> str:
    """The start of a plain shell's line: its prompt (PS1, which a POSIX shell expands) begins
    with a nonce-marked D, once. A shell that abandons its line (Ctrl-C; dash also on `${VAR:?}`,
    a failed `.` or a special builtin's error) goes straight back to its prompt without the
    line's own D; that prompt then ends the command, with the status the line kept, else with
    `$?`, the abandoned line's. Without it, the shell reading its terminal there could not be
    told from the command's own `read`. The nonce is in a variable nobody exports, so a nested
    shell that inherits an exported PS1 draws an untrusted mark."""
    mark = "\\033]633;D;${__sr_status:-$?};prompt;$__sr_n\\007"
    return (f" __sr_n={nonce}; __sr_status=;"
            f" case $PS1 in *__sr_n*) ;; *) PS1=\"{before}$(command printf '{mark}'){after}$PS1\";; esac;")


def arrival() -> str:
    """The caller's --env and --cwd, applied after the rc files (which may have changed them)."""
    return '__sr_apply_env\nbuiltin cd -- "$__sr_cwd" || builtin exit 125\n'


def sourced_heal_line(setup: RunSetup, name: str, head: str, run_line: bytes) -> bytes:
    """bash's and zsh's heal line (see `Lines.heal`): source `integration.<name>` into the live
    shell again, after `head` and before the R mark, then run the command as `run_line` does."""
    script = setup.workdir / f"reinject.{name}"
    if not script.exists():
        text = header(setup) + head + integration_script(f"integration.{name}") + "__sr_mark R\n"
        script.write_text(text, encoding="utf-8")
    return f" builtin . {quote(str(script))};".encode() + run_line


def scoped(command: str, cwd: str | None, env: Mapping[str, str]) -> str:
    """The command in a subshell with a directory and variables of its own, when it has any, so
    that they and what the command changes end with it."""
    if cwd is None and not env:
        return command
    lines = [f"cd -- {quote(cwd)} || exit"] if cwd is not None else []
    lines += [f"export {name}={quote(value)}" for name, value in env.items()]
    return "(\n" + "\n".join(lines) + "\n" + command + "\n)"


def with_stdin(command: str, fd: int) -> str:
    """Any POSIX shell: one that takes only one digit before a redirection (dash) opens the
    descriptor again by its name, and leaves it to the command."""
    return f"{{ {command}\n}} </dev/fd/{fd}"


def bash_with_stdin(command: str, fd: int) -> str:
    return f"{{ {command}\n}} <&{fd} {fd}<&-"


def status_file(setup: RunSetup) -> Path:
    """Where the typed line leaves the command's exit status."""
    return setup.workdir / "status"


def plain_launch(setup: RunSetup) -> Launch:
    """sh, dash, ksh and the like: an interactive shell, no integration to inject."""
    env = {} if setup.load_rc else {"ENV": ""}
    return Launch([setup.shell_path, "-i"], env, lines(setup, b"", prompt_mark=PROMPT_MARK), integrated=False)


def rc_candidates(environ: Mapping[str, str], home: str, zdotdir: str | None) -> list[str]:
    """An interactive POSIX shell reads the file $ENV names, and that only."""
    env_file = environ.get("ENV")
    return [os.path.expanduser(os.path.expandvars(env_file))] if env_file else []


SHELL = ShellKind(
    name="sh",
    family="posix",
    plain_launch=plain_launch,
    scoped=scoped,
    with_stdin=with_stdin,
    syntax=SyntaxFacts(("-n",), accepts_open_heredoc=True),
    doctor=DoctorFacts(rc_candidates=rc_candidates, exe_probe=EXE_PROBE),
    prompt_mark=PROMPT_MARK,
)


def kind_named(name: str) -> ShellKind:
    """Any shell the registry does not know is started as a POSIX shell and shown by its own name;
    its command is checked only if it is known to parse POSIX text."""
    known = name in POSIX_FAMILY or name.startswith(("dash", "ksh", "mksh"))
    return replace(SHELL, name=name, syntax=SHELL.syntax if known else None)

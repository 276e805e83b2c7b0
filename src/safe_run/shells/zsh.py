"""zsh: a private ZDOTDIR whose start-up files chain to the user's and then hand ZDOTDIR back."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..core.tracker import Lines
from . import Launch, RunSetup, integration_script
from .kind import DoctorFacts, ShellKind, SyntaxFacts
from .posix import EXE_PROBE, LINE_END, arrival, header, lines, quote, scoped, sourced_heal_line

# An alias the integration's line-finish hook makes: C, the command, and the line's own end.
RUN = " __sr_c"
RUN_LINE = (RUN + "\r").encode()
# After the integration is loaded again, in the same line: the command through eval at the top
# level. The line-finish hook that makes `__sr_c` the command's own text is not there when the
# line is read (after `exec zsh`), and the function `__sr_c` would make its `typeset`s local.
HEAL_RUN = ' __sr_start && builtin :; builtin eval "$(<$__sr_cmd)";'
# Sourced into the live shell again: no history file written, and the prompt's options back.
REINJECT_HEAD = "builtin unset HISTFILE\n"


def launch(setup: RunSetup) -> Launch:
    rest = arrival().replace("builtin cd --", "builtin cd -q --") + integration_script("integration.zsh")
    zdotdir = _private_zdotdir(setup, header(setup), rest)
    launch_lines = live_lines(setup)
    return Launch([setup.shell_path, "-i"], {"ZDOTDIR": str(zdotdir)}, launch_lines, integrated=True)


def live_lines(setup: RunSetup) -> Lines:
    """What to type into this shell, healing included; also for a shell a command started by `exec`."""
    return lines(setup, RUN_LINE, heal_line(setup), run_builtin="builtin")


def heal_line(setup: RunSetup) -> bytes:
    """The run line that first loads the integration into the live shell again (see `Lines.heal`)."""
    return sourced_heal_line(setup, "zsh", REINJECT_HEAD, (HEAL_RUN + LINE_END + "\r").encode())


def plain_launch(setup: RunSetup) -> Launch:
    """zsh as `zsh -i` (or `zsh -f -i`) starts, with no integration, kept out of history."""
    preamble = f"__sr_load_rc={1 if setup.load_rc else 0}\n"
    zdotdir = _private_zdotdir(setup, preamble, "builtin unset -m '__sr_*'\n")
    return Launch([setup.shell_path, "-i"], {"ZDOTDIR": str(zdotdir)}, lines(setup, b"", run_builtin="builtin"),
                  integrated=False)


def _private_zdotdir(setup: RunSetup, preamble: str, rest_of_zshrc: str) -> Path:
    """.zshenv and .zshrc that load the user's own files as plain zsh would, then `rest_of_zshrc`."""
    zdotdir = setup.workdir / "zdotdir"
    zdotdir.mkdir(mode=0o700)
    user_zdotdir = os.environ.get("ZDOTDIR")
    zshenv = preamble + (
        f"__sr_user_zdotdir={quote(user_zdotdir or '')}\n"
        f"__sr_had_zdotdir={1 if user_zdotdir else 0}\n"
    )
    (zdotdir / ".zshenv").write_text(zshenv + integration_script("integration-env.zsh"), encoding="utf-8")
    (zdotdir / ".zshrc").write_text(integration_script("startup.zsh") + rest_of_zshrc, encoding="utf-8")
    return zdotdir


def rc_candidates(environ: Mapping[str, str], home: str, zdotdir: str | None) -> list[str]:
    """zsh reads .zshrc from the ZDOTDIR that .zshenv leaves (`zdotdir`, as a run reported it),
    not necessarily the one it started with."""
    first = environ.get("ZDOTDIR") or home
    return ["/etc/zsh/zshenv", "/etc/zshenv", os.path.join(first, ".zshenv"),
            "/etc/zsh/zshrc", "/etc/zshrc", os.path.join(zdotdir or first, ".zshrc")]


def with_stdin(command: str, fd: int) -> str:
    """zsh names a descriptor above 9 in a redirection only through a parameter."""
    return f"__sr_in={fd}; {{ builtin exec {{__sr_in}}<&-; {command}\n}} <&{fd}"


SHELL = ShellKind(
    name="zsh",
    family="zsh",
    plain_launch=plain_launch,
    scoped=scoped,
    with_stdin=with_stdin,
    launch=launch,
    live_lines=live_lines,
    # -f: the user's files are not even read (only /etc/zshenv is, whatever the options, and not run).
    syntax=SyntaxFacts(("-f", "-n"), accepts_open_heredoc=True, accepts_dangling_operator=True),
    doctor=DoctorFacts(
        rc_candidates=rc_candidates,
        exe_probe=EXE_PROBE,
        names_probe="builtin printf 'name:%s\\n' ${(k)functions} ${(k)aliases} ${(k)parameters[(R)*export*]}; "
                    "builtin printf 'zdotdir:%s\\n' \"${ZDOTDIR-}\"; ",
        history_off="builtin unset HISTFILE; ",
    ),
)

"""bash: `--init-file` loads the user's rc files as `bash -i` does, then the integration if any."""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..core.tracker import Lines
from . import Launch, RunSetup, integration_script
from .kind import DoctorFacts, ShellKind, SyntaxFacts
from .posix import EXE_PROBE, LINE_END, arrival, bash_with_stdin, header, lines, scoped, sourced_heal_line

# An alias of the integration's: C, the command, and the line's own end (see integration.bash).
RUN = " __sr_c"
RUN_LINE = (RUN + "\r").encode()
# After the integration is loaded again, in the same line: what the alias `__sr_c` stands for,
# spelled out, since the line was read before the alias existed (after `exec bash`, the function
# of the same name would run the command inside it, its `declare`s then local).
HEAL_RUN = ' __sr_start && builtin :; builtin eval -- "$__sr_text";'
# Sourced into the live shell again: kept out of its history, then the hooks, then R.
REINJECT_HEAD = "builtin set +o history\nbuiltin unset HISTFILE\n"
# Without integration bash's prompt takes the mark between \[ and \], which give it no width.
PROMPT_MARK = ("\\[", "\\]")
# An interactive bash prints this on stderr when the exit builtin runs (the terminal turns \n into \r\n).
EXIT_WORD = b"exit\r\n"


def launch(setup: RunSetup) -> Launch:
    script = setup.workdir / "integration.bash"
    text = header(setup) + integration_script("startup.bash") + arrival() + integration_script("integration.bash")
    script.write_text(text, encoding="utf-8")
    argv = [setup.shell_path, "--init-file", str(script), "-i"]
    return Launch(argv, {}, live_lines(setup), integrated=True, exit_word=EXIT_WORD)


def live_lines(setup: RunSetup) -> Lines:
    """What to type into this shell, healing included; also for a shell a command started by `exec`."""
    return lines(setup, RUN_LINE, heal_line(setup))


def heal_line(setup: RunSetup) -> bytes:
    """The run line that first loads the integration into the live shell again (see `Lines.heal`)."""
    return sourced_heal_line(setup, "bash", REINJECT_HEAD, (HEAL_RUN + LINE_END + "\r").encode())


def plain_launch(setup: RunSetup) -> Launch:
    """bash as `bash -i` (or `bash --norc -i`) starts, with no integration, kept out of history."""
    script = setup.workdir / "startup.bash"
    text = f"__sr_load_rc={1 if setup.load_rc else 0}\n" + integration_script("startup.bash") + "unset __sr_load_rc\n"
    script.write_text(text, encoding="utf-8")
    argv = [setup.shell_path, "--init-file", str(script), "-i"]
    return Launch(argv, {}, lines(setup, b"", prompt_mark=PROMPT_MARK), integrated=False)


def rc_candidates(environ: Mapping[str, str], home: str, zdotdir: str | None) -> list[str]:
    """What startup.bash loads, as `bash -i` would."""
    return ["/etc/bash.bashrc", os.path.join(home, ".bashrc")]


SHELL = ShellKind(
    name="bash",
    family="bash",
    plain_launch=plain_launch,
    scoped=scoped,
    with_stdin=bash_with_stdin,
    launch=launch,
    live_lines=live_lines,
    # extglob changes how `!(x)` parses and many interactive setups (the bash-completion package
    # among them) turn it on; the command's own `shopt` cannot help, as nothing runs under -n.
    syntax=SyntaxFacts(("-O", "extglob", "-n"), warns_open_heredoc=True),
    interrupt_ends_line=True,
    prompt_mark=PROMPT_MARK,
    doctor=DoctorFacts(
        rc_candidates=rc_candidates,
        exe_probe=EXE_PROBE,
        names_probe="builtin printf 'name:%s\\n' $(builtin compgen -A function -A alias -A export); ",
        history_off="builtin set +o history; builtin unset HISTFILE; ",
    ),
)

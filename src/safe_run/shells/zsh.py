"""zsh: a private ZDOTDIR whose start-up files chain to the user's and then hand ZDOTDIR back."""

from __future__ import annotations

import os

from . import Launch, RunSetup, integration_script
from .posix import header, lines, quote

RUN_LINE = b' __sr_start; builtin eval "$(<$__sr_command_file)"\r'


def launch(setup: RunSetup) -> Launch:
    zdotdir = setup.workdir / "zdotdir"
    zdotdir.mkdir(mode=0o700)
    user_zdotdir = os.environ.get("ZDOTDIR")
    preamble = header(setup) + (
        f"__sr_user_zdotdir={quote(user_zdotdir or '')}\n"
        f"__sr_had_zdotdir={1 if user_zdotdir else 0}\n"
    )
    (zdotdir / ".zshenv").write_text(preamble + integration_script("integration-env.zsh"), encoding="utf-8")
    (zdotdir / ".zshrc").write_text(integration_script("integration.zsh"), encoding="utf-8")
    return Launch([setup.shell_path, "-i"], {"ZDOTDIR": str(zdotdir)}, lines(setup, RUN_LINE), integrated=True)


def plain_launch(setup: RunSetup) -> Launch:
    argv = [setup.shell_path, "-i"] if setup.load_rc else [setup.shell_path, "-f", "-i"]
    return Launch(argv, {}, lines(setup, b""), integrated=False)

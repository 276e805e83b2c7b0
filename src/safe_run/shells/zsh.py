"""zsh: a private ZDOTDIR whose start-up files chain to the user's and then hand ZDOTDIR back."""

from __future__ import annotations

import os

from . import Launch, RunSetup, integration_script
from .posix_quote import header, quote

RUN_LINE = b' __sr_start; builtin eval "$(<$__sr_command_file)"\r'


def launch(setup: RunSetup) -> Launch:
    zdotdir = setup.workdir / "zdotdir"
    zdotdir.mkdir(mode=0o700)
    user_zdotdir = os.environ.get("ZDOTDIR")
    preamble = header(setup) + (
        f"__sr_user_zdotdir={quote(user_zdotdir or os.path.expanduser('~'))}\n"
        f"__sr_had_zdotdir={1 if user_zdotdir else 0}\n"
    )
    (zdotdir / ".zshenv").write_text(preamble + integration_script("integration-env.zsh"), encoding="utf-8")
    (zdotdir / ".zshrc").write_text(integration_script("integration.zsh"), encoding="utf-8")
    argv = [setup.shell_path, "-i"]
    return Launch(argv=argv, env={"ZDOTDIR": str(zdotdir)}, run_line=RUN_LINE)

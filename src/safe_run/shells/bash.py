"""bash: `--init-file` loads the integration, which then loads the user's rc files itself."""

from __future__ import annotations

from . import Launch, RunSetup, integration_script
from .posix import header, lines

RUN_LINE = b' __sr_start; builtin eval -- "$(< "$__sr_command_file")"\r'
# An interactive bash prints this on stderr when the exit builtin runs (the terminal turns \n into \r\n).
EXIT_WORD = b"exit\r\n"


def launch(setup: RunSetup) -> Launch:
    script = setup.workdir / "integration.bash"
    script.write_text(header(setup) + integration_script("integration.bash"), encoding="utf-8")
    argv = [setup.shell_path, "--init-file", str(script), "-i"]
    return Launch(argv, {}, lines(setup, RUN_LINE), integrated=True, exit_word=EXIT_WORD)


def plain_launch(setup: RunSetup) -> Launch:
    argv = [setup.shell_path, "-i"] if setup.load_rc else [setup.shell_path, "--norc", "-i"]
    return Launch(argv, {}, lines(setup, b""), integrated=False)

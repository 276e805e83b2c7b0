"""bash: `--init-file` loads the user's rc files as `bash -i` does, then the integration if any."""

from __future__ import annotations

from . import Launch, RunSetup, integration_script
from .posix import header, lines

RUN_LINE = b' __sr_start; builtin eval -- "$(< "$__sr_command_file")"\r'
# An interactive bash prints this on stderr when the exit builtin runs (the terminal turns \n into \r\n).
EXIT_WORD = b"exit\r\n"


def launch(setup: RunSetup) -> Launch:
    script = setup.workdir / "integration.bash"
    text = header(setup) + integration_script("startup.bash") + integration_script("integration.bash")
    script.write_text(text, encoding="utf-8")
    argv = [setup.shell_path, "--init-file", str(script), "-i"]
    return Launch(argv, {}, lines(setup, RUN_LINE), integrated=True, exit_word=EXIT_WORD)


def plain_launch(setup: RunSetup) -> Launch:
    """bash as `bash -i` (or `bash --norc -i`) starts, with no integration, kept out of history."""
    script = setup.workdir / "startup.bash"
    text = f"__sr_load_rc={1 if setup.load_rc else 0}\n" + integration_script("startup.bash") + "unset __sr_load_rc\n"
    script.write_text(text, encoding="utf-8")
    argv = [setup.shell_path, "--init-file", str(script), "-i"]
    return Launch(argv, {}, lines(setup, b""), integrated=False)

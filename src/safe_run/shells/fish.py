"""fish: `--init-command` sources the integration after the user's config has loaded."""

from __future__ import annotations

from . import Launch, RunSetup, integration_script

RUN_LINE = b" __sr_start; eval (string collect < $__sr_command_file)\r"


def quote(value: str) -> str:
    """fish single quotes: only backslash and the quote itself are special inside."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def header(setup: RunSetup) -> str:
    exports = "".join(f"    set -gx {name} {quote(value)}\n" for name, value in setup.env.items())
    return (
        f"set -g __sr_nonce {quote(setup.nonce)}\n"
        f"set -g __sr_command_file {quote(str(setup.command_file))}\n"
        f"set -g __sr_cwd {quote(setup.cwd)}\n"
        f"function __sr_apply_env\n{exports}end\n"
    )


def launch(setup: RunSetup) -> Launch:
    script = setup.workdir / "integration.fish"
    script.write_text(header(setup) + integration_script("integration.fish"), encoding="utf-8")
    argv = [setup.shell_path, "--private", "--interactive"]
    if not setup.load_rc:
        argv.append("--no-config")
    argv += ["--init-command", f"source {quote(str(script))}"]
    return Launch(argv=argv, env={}, run_line=RUN_LINE)

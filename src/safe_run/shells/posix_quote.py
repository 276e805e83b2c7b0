"""Quoting and header writing shared by the POSIX-family shells (bash and zsh)."""

from __future__ import annotations

from . import RunSetup


def quote(value: str) -> str:
    """Single-quote a value so the shell reads it back byte for byte."""
    return "'" + value.replace("'", "'\\''") + "'"


def header(setup: RunSetup) -> str:
    """Shell assignments that hand the per-run values to the static integration script."""
    exports = "".join(f"    builtin export {name}={quote(value)}\n" for name, value in setup.env.items())
    return (
        f"__sr_nonce={quote(setup.nonce)}\n"
        f"__sr_command_file={quote(str(setup.command_file))}\n"
        f"__sr_cwd={quote(setup.cwd)}\n"
        f"__sr_load_rc={1 if setup.load_rc else 0}\n"
        f"__sr_apply_env() {{\n{exports}    builtin :\n}}\n"
    )

"""POSIX-family shells (sh, dash, ksh, and bash or zsh without integration): quoting, the
integration header, and the lines typed when no integration can be relied on."""

from __future__ import annotations

from ..tracker import Lines
from . import Launch, RunSetup

# The only way to learn the exit code of a command whose end no integration reported: ask.
STATUS_QUERY = " command printf '\\033]633;D;%s;%s\\007' \"$?\" {nonce}\r"


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


def lines(setup: RunSetup, integrated: bytes) -> Lines:
    """The command bracketed by nonce-marked C and D that the typed line prints itself."""
    nonce = setup.nonce
    query = STATUS_QUERY.format(nonce=nonce)
    fallback = (
        f" command printf '\\033]633;C;%s\\007' {nonce};"
        f" eval \"$(command cat {quote(str(setup.command_file))})\";{query}"
    )
    return Lines(integrated, fallback.encode(), query.encode())


def plain_launch(setup: RunSetup) -> Launch:
    """sh, dash, ksh and the like: an interactive shell, no integration to inject."""
    env = {} if setup.load_rc else {"ENV": ""}
    return Launch([setup.shell_path, "-i"], env, lines(setup, b""), integrated=False)

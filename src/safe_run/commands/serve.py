"""The mcp verb: `safe-run mcp` serves the runs, sessions and persistent shells to an MCP client over stdio."""

from __future__ import annotations

import click

from ..result import ExitStatus
from .params import current_directory

INSTALL_HINT = "safe-run mcp needs the MCP SDK: pip install 'safe-run[mcp]'"


@click.command("mcp", context_settings={"help_option_names": ["-h", "--help"]})
def mcp_command() -> int:
    """Serve safe-run as an MCP server over stdio (tools: run, poll, send, stop, sessions)."""
    try:
        import mcp  # noqa: F401  (only to tell whether the extra is installed)
    except ImportError:
        click.echo(f"safe-run: {INSTALL_HINT}", err=True)
        return ExitStatus.FAILURE
    cwd = current_directory()
    from ..interrupts import StopSignals
    from ..mcp_server import serve

    signals = click.get_current_context().obj
    if not isinstance(signals, StopSignals):
        signals = StopSignals()
    # From here a stop signal ends the serving and the clean-up that follows it, in that order.
    arrived = signals.keep()
    serve(cwd, signals.wakeup)
    return 128 + arrived[0] if arrived else 0

"""The mcp verb: `safe-run mcp` serves the runs, sessions and persistent shells to an MCP client over
stdio, or with `--http HOST:PORT` to many clients over Streamable HTTP."""

from __future__ import annotations

import os
import socket
import stat

import click

from ...mcp.http_bounds import HEADER_S, MAX_CONNECTIONS, Bounds
from ...core.request import DEFAULT_CONNECTION_IDLE_S
from ...core.result import ExitStatus
from ... import calls
from .params import SECONDS, given, refused_as_usage

INSTALL_HINT = "safe-run mcp needs the MCP SDK: pip install 'safe-run[mcp]'"
# A token is a line: anything longer is not the file meant.
MAX_TOKEN_BYTES = 4096
# Shorter tokens can be guessed: 32 hexadecimal digits are 128 bits.
MIN_TOKEN_CHARS = 32


@click.command("mcp", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--http", "address", metavar="HOST:PORT",
    help="Serve over Streamable HTTP at http://HOST:PORT/mcp instead of stdio (needs a token).",
)
@click.option(
    "--token-file", "token_file", metavar="PATH", type=click.Path(dir_okay=False),
    help="With --http: the bearer token clients must send, read from PATH (else from $SAFE_RUN_MCP_TOKEN).",
)
@click.option(
    "--idle-expire", type=SECONDS, default=DEFAULT_CONNECTION_IDLE_S, show_default=True, metavar="SECONDS",
    help="A connection's own shell closes after this long without a command (0: never); named shells keep "
    "their own limit.",
)
@click.option(
    "--header-timeout", "header_s", type=SECONDS, default=HEADER_S, metavar="SECONDS",
    help=f"With --http: a connection has this long from its opening, or its last answer, to send its next "
    f"request, headers and body; then it is closed (408 if it began one).  [default: {HEADER_S:g}]",
)
@click.option(
    "--max-connections", "max_connections", type=click.IntRange(min=1), default=MAX_CONNECTIONS, metavar="N",
    help=f"With --http: at most N connections open at once; one more is answered 503 and closed at once.  "
    f"[default: {MAX_CONNECTIONS}]",
)
def mcp_command(
    address: str | None, token_file: str | None, idle_expire: float, header_s: float, max_connections: int,
) -> int:
    """Serve safe-run as an MCP server over stdio or HTTP (tools: run, poll, send, stop, close, sessions)."""
    try:
        import mcp  # noqa: F401  (only to tell whether the extra is installed)
    except ImportError:
        click.echo(f"safe-run: {INSTALL_HINT}", err=True)
        return ExitStatus.FAILURE
    for name, option in (("token_file", "--token-file"), ("header_s", "--header-timeout"),
                         ("max_connections", "--max-connections")):
        if address is None and given(name):
            raise click.UsageError(f"{option} goes with --http HOST:PORT")
    if header_s == 0:
        raise click.BadParameter("must be more than 0", param_hint="--header-timeout")
    with refused_as_usage():
        cwd = calls.current_directory("start the server in another directory")
    from ..invocation import current

    signals = current().signals
    if address is None:
        from ...mcp.server import serve

        # From here a stop signal ends the serving and the clean-up that follows it, in that order.
        signals.keep()
        serve(cwd, signals.wakeup, idle_expire or None)
    else:
        from ...mcp.http import serve_http

        bounds = Bounds(header_s, max_connections)
        token = _token(token_file)
        sock = _listen(address)
        signals.keep()
        with sock:
            serve_http(cwd, sock, token, signals.wakeup, idle_expire or None, bounds)
    stopped_by = signals.wakeup.pending
    return 128 + stopped_by[0] if stopped_by else 0


def _token(path: str | None) -> bytes:
    """The bearer token, from the file or the environment, never from the command line (which `ps`
    shows). It is taken out of the environment, so that no command run here inherits it."""
    from ...mcp.http import TOKEN_ENV

    from_env = os.environ.pop(TOKEN_ENV, None)
    if path is not None:
        token = _read_token(path)
    else:
        token = (from_env or "").encode()
    given = from_env is not None or path is not None
    token = token.strip()
    if not token:
        where = f"{path} holds" if path is not None else f"${TOKEN_ENV} is" if given else None
        missing = f"{where} blank" if where else f"${TOKEN_ENV} is not set"
        raise click.UsageError(f"safe-run mcp --http needs a token and {missing}: set {TOKEN_ENV} or give --token-file PATH")
    if any(byte <= 0x20 or byte >= 0x7F for byte in token):
        raise click.UsageError("the token must be one line of printable ASCII without spaces")
    if len(token) < MIN_TOKEN_CHARS:
        raise click.UsageError(
            f"the token has {len(token)} characters and must have at least {MIN_TOKEN_CHARS}, so that it cannot be "
            "guessed: make one with `python3 -c 'import secrets; print(secrets.token_hex(32))'`"
        )
    return token


def _read_token(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint="--token-file") from exc
    with os.fdopen(fd, "rb") as file:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise click.BadParameter(f"{path} is not a regular file", param_hint="--token-file")
        data = file.read(MAX_TOKEN_BYTES + 1)
    if len(data) > MAX_TOKEN_BYTES:
        raise click.BadParameter(f"{path} holds more than {MAX_TOKEN_BYTES} bytes", param_hint="--token-file")
    return data


def _listen(address: str) -> socket.socket:
    from ...mcp.http import listen, parse_address

    try:
        host, port = parse_address(address)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--http") from None
    try:
        return listen(host, port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {address}: {exc.strerror or exc}") from None

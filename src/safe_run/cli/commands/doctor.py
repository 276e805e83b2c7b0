"""The doctor verb: `safe-run doctor [--shell PATH|NAME]` checks how safe-run fares in each shell."""

from __future__ import annotations

import json
import os

import click

from ... import shells
from ...environment import Environment
from ..report import format_option
from ...core.result import exit_status
from ...engine.runner import execute

EXIT_STATUS_HELP = (
    "Exit status: 0 every checked shell gets its best strategy (rich for bash, zsh and fish; none for "
    "sh, dash and other shells, which have no integration); 1 some check found a problem (see its "
    "advice); 2 usage error (a --shell that is not an executable shell included); 125 internal error; "
    "129/130/143 doctor was interrupted (SIGHUP/SIGINT/SIGTERM)."
)


@click.command("doctor", context_settings={"help_option_names": ["-h", "--help"]}, epilog=EXIT_STATUS_HELP)
@click.option(
    "--shell", "shell", metavar="PATH|NAME",
    help="Check only this shell (default: bash, zsh, fish, dash and sh on PATH, and $SHELL).",
)
@format_option
def doctor_command(shell: str | None, output_format: str) -> int:
    """Check that integration works in your shells (and why not).

    Runs a trivial command in each shell twice, with and without your start-up files, through the
    same machinery as a run, and reports the strategy a run gets, how long start-up takes and, for
    each problem, the reason and what to do.
    """
    from ... import doctor  # only doctor needs it; a run should not pay for loading it

    environ = dict(os.environ)
    if shell is not None:
        try:
            path = shells.resolve_shell(shell, environ)
        except shells.ShellNotFound as exc:
            raise click.BadParameter(str(exc), param_hint="--shell") from exc
        targets = [doctor.named_target(path, environ, shells.passwd_shell())]
    else:
        targets = doctor.find_targets(environ, shells.passwd_shell())
    home = os.path.expanduser("~")
    reports = []
    for target in targets:
        report, interrupted = doctor.check(target, execute, environ, home)
        if interrupted is not None:
            click.echo(f"safe-run: doctor interrupted ({interrupted.signal})", err=True)
            return exit_status(interrupted)
        reports.append(report)
    if Environment.current().wants_json(output_format):
        click.echo(json.dumps(doctor.report_dict(reports), ensure_ascii=False))
    else:
        doctor.render_pretty(reports)
    return doctor.exit_code(reports)

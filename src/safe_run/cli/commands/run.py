"""The run verb: `safe-run [OPTIONS] [--] COMMAND...` runs one command and reports how it ended."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from ... import calls
from ...calls import DEFAULT_MAX_OUTPUT, DEFAULT_YIELD_AFTER_S, MIN_MAX_OUTPUT, STRATEGIES
from ..invocation import Invocation, current as current_invocation
from ...environment import Environment, is_ci
from ..report import AnswerLost, annotate, emit, run_format_option, utf8_stdout
from ...core.result import ExitStatus, Result, Status, error_result, exit_status, not_started
from ...core.request import DEFAULT_IDLE_EXPIRE_S, DEFAULT_WAIT_EXPIRE_S, RunRequest, Scope, Timers
from ...session import SessionError
from .params import (
    SECONDS, complete_directories, given, open_log, read_command_file, refused_as_usage, stdin_is_open,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from ...display import Display
    from ...engine.interrupts import Wakeup
    from ...engine.runner import Follower, Run

EXIT_STATUS_HELP = (
    "Exit status: the command's own exit code when it completed; 2 usage or syntax error; "
    "75 still running in a session (--yield-after, or the default bound of JSON output); "
    "76 the persistent shell (--in) is busy with another command; "
    "123 no such session (poll, send, stop); 124 stopped before it finished (timeout, waiting for input); "
    "125 safe-run could not run the command; 129/130/143 safe-run was interrupted (SIGHUP/SIGINT/SIGTERM); "
    "141 stdout was closed or its reader went away (SIGPIPE)."
)
DEFAULT_TIMERS = Timers()
YIELD_AFTER_VARIABLE = "SAFE_RUN_YIELD_AFTER"
NEVER = ("never", "0")


def _pairs(words: tuple[str, ...]) -> dict[str, str]:
    """--env NAME=VALUE words as variables (a later name wins); the names are checked by calls.variables."""
    env = {}
    for item in words:
        name, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--env")
        env[name] = value
    return env


def _read_command(words: tuple[str, ...], command_file: str | None) -> str:
    """The command text from the words or the file; refuse what cannot be run as given."""
    if words and command_file is not None:
        raise click.UsageError("give the command as arguments or with --command-file, not both")
    if command_file is not None:
        data = read_command_file(command_file, stdin_is_open())
        try:
            command = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise click.UsageError(f"the command file is not valid UTF-8 (byte {exc.start})") from exc
    else:
        command = " ".join(words)
    with refused_as_usage():
        return calls.command(command)


def default_yield_after(environ: Mapping[str, str]) -> float | None:
    """The bound of a JSON run given no limit: $SAFE_RUN_YIELD_AFTER (0 or never: none), else 30 s."""
    value = environ.get(YIELD_AFTER_VARIABLE, "").strip()
    if not value:
        return DEFAULT_YIELD_AFTER_S
    if value.lower() in NEVER:
        return None
    try:
        return SECONDS.convert(value, None, None) or None
    except click.BadParameter as exc:
        raise click.UsageError(f"{YIELD_AFTER_VARIABLE}={value!r}: {exc.message} (or 'never')") from exc


def yield_after_for(
    requested: float | None, wait: bool, timeout: float | None, shown: str, environ: Mapping[str, str]
) -> float | None:
    """When the run should hand its command to a session and answer `running`; None: at its end.

    Asked for: --yield-after N (0 is "at the end"), --wait. Otherwise only an agent gets a bound:
    JSON output, no --timeout (which is a bound already), and not CI, whose steps wait for their
    build. People (pretty) and jsonl followers watch the run to its end.
    """
    if wait:
        if requested:
            raise click.UsageError("--wait and --yield-after contradict each other; give one")
        return None
    if requested is not None:
        return requested or None
    if timeout is not None or shown != "json":
        return None
    return None if is_ci(environ) else default_yield_after(environ)


@click.command(
    "run",
    context_settings={"allow_interspersed_args": False, "help_option_names": ["-h", "--help"]},
    epilog=EXIT_STATUS_HELP,
)
@click.argument("command", nargs=-1, metavar="[--] COMMAND...")
@click.option(
    "--command-file", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True),
    help="Read the command from FILE, a regular file ('-' for stdin; at most 1 MiB).",
)
@click.option("--shell", "shell", metavar="PATH", help="Shell to run in (default: $SHELL, then the passwd entry, then /bin/sh).")
@click.option("--no-rc", is_flag=True, help="Do not load the user's rc files.")
@click.option(
    "--cwd", metavar="DIR", shell_complete=complete_directories, help="Directory to run the command in.",
)
@click.option("--env", "env", multiple=True, metavar="NAME=VALUE", help="Set a variable for the command (repeatable).")
@run_format_option
@click.option(
    "--max-output", type=int, default=DEFAULT_MAX_OUTPUT, show_default=True, metavar="BYTES",
    help=f"Keep at most this many bytes of output (at least {MIN_MAX_OUTPUT}): the first and last halves; "
    "the middle is dropped.",
)
@click.option(
    "--strategy", type=click.Choice(STRATEGIES), default="auto", show_default=True,
    help="What decides the end: rich (integration marks), basic (prompt marks), none (no integration); "
    "auto starts rich and steps down when integration fails.",
)
@click.option(
    "--timeout", type=SECONDS, default=None, metavar="SECONDS",
    help="Stop the command after this long (exit status 124). Default, and 0: no limit.",
)
@click.option(
    "--idle", type=SECONDS, default=DEFAULT_TIMERS.idle, show_default=True, metavar="SECONDS",
    help="Quiet time before a fallback (prompt back without marks, input wait) is decided.",
)
@click.option(
    "--activation-timeout", type=SECONDS, default=DEFAULT_TIMERS.activation, show_default=True,
    metavar="SECONDS", help="How long the shell may take to become ready.",
)
@click.option(
    "--silence-timeout", type=SECONDS, default=DEFAULT_TIMERS.silence, show_default=True,
    metavar="SECONDS", help="Where the kernel cannot tell whether a command runs: stop it after this much silence.",
)
@click.option(
    "--no-output-timeout", type=SECONDS, default=DEFAULT_TIMERS.no_output, show_default=True,
    metavar="SECONDS",
    help="Where the kernel cannot tell whether a command runs: stop it when it printed nothing for this long.",
)
@click.option(
    "--yield-after", type=SECONDS, default=None, metavar="SECONDS",
    help="Return after this long with status running and a session id while the command goes on "
    "(see poll, send, stop); an input wait then keeps the command alive; 0: wait for the end. "
    f"Default: {DEFAULT_YIELD_AFTER_S:g} with JSON output and no --timeout (${YIELD_AFTER_VARIABLE}), "
    "else wait for the end.",
)
@click.option("--wait", is_flag=True, help="Wait for the end however long it takes, even with JSON output.")
@click.option("--keep-background", is_flag=True, help="Leave background jobs (cmd &) running when the run ends.")
@click.option(
    "--no-input", is_flag=True,
    help="At a terminal, keep your keys from the command: an input wait is stopped and reported, as for an agent.",
)
@click.option(
    "--stdin", "given_stdin", is_flag=True,
    help="The command reads safe-run's standard input (a pipe or a file) rather than its terminal. "
    "The default when stdout is your terminal and stdin is not (seq 9 | safe-run -- fzf). "
    "The run is then not handed to a session.",
)
@click.option(
    "--no-batch-env", is_flag=True,
    help="Keep the caller's PAGER, GIT_PAGER, GIT_EDITOR, ... instead of non-interactive defaults.",
)
@click.option(
    "--log", type=click.Path(dir_okay=False, readable=False), metavar="FILE",
    help="Write the raw terminal transcript to FILE, a regular file of yours: made with mode 0600, or emptied "
    "with its group and other permissions removed; another user's file or symbolic link, or a file with hard "
    "links, is refused.",
)
@click.option(
    "--in", "in_shell", metavar="NAME",
    help="Run in the persistent shell NAME (started on first use; cwd, variables, functions and jobs "
    "persist between calls). --shell, --no-rc, --log, --idle-expire, and --cwd/--env apply when it starts; "
    "--cwd/--env on a later call apply to that command alone.",
)
@click.option(
    "--idle-expire", type=SECONDS, default=DEFAULT_IDLE_EXPIRE_S, show_default=True, metavar="SECONDS",
    help="With --in, a shell left without a command this long closes itself and ends its jobs (0: never).",
)
@click.option(
    "--wait-expire", type=SECONDS, default=DEFAULT_WAIT_EXPIRE_S, show_default=True, metavar="SECONDS",
    help="A session's input wait that no call asked about, and nobody is attached to, this long is "
    "stopped (0: never).",
)
def run_command(
    command: tuple[str, ...],
    command_file: str | None,
    shell: str | None,
    no_rc: bool,
    cwd: str | None,
    env: tuple[str, ...],
    output_format: str,
    max_output: int,
    strategy: str,
    timeout: float | None,
    idle: float,
    activation_timeout: float,
    silence_timeout: float,
    no_output_timeout: float,
    yield_after: float | None,
    wait: bool,
    keep_background: bool,
    no_input: bool,
    given_stdin: bool,
    no_batch_env: bool,
    log: str | None,
    in_shell: str | None,
    idle_expire: float,
    wait_expire: float,
) -> int:
    """Run COMMAND through your shell in a pseudo-terminal and report how it ended.

    Several words are joined with spaces; quote the command or put it after -- when it has options
    of its own. The result is JSON or a pretty summary; see `man safe-run` for every field.
    """
    text = _read_command(command, command_file)
    environment = Environment.current()
    shown = environment.resolve_format(output_format)
    _refuse_contradictions(shown, yield_after, in_shell)
    stdin = _command_stdin(given_stdin, environment, in_shell, yield_after)
    bound = None if stdin is not None else yield_after_for(yield_after, wait, timeout, shown, environment.environ)
    # --cwd and --env start the shell there; on a later call they are that command's alone.
    scope = _scope(cwd, env)
    timers = Timers(activation=activation_timeout, idle=idle, silence=silence_timeout, no_output=no_output_timeout)
    with refused_as_usage():
        if in_shell is not None:
            calls.shell_name(in_shell)
        request = calls.request(
            text, shell=shell, cwd=scope.cwd or calls.current_directory("give --cwd DIR"), env=scope.env,
            timeout=timeout or None,  # 0 is no limit, as for timeout(1)
            max_output=calls.output_bound(max_output, "--max-output"), strategy=strategy, load_rc=not no_rc,
            idle_expire=idle_expire or None, wait_expire=wait_expire or None, timers=timers,
        )
    request = replace(
        request, batch_env=not no_batch_env, keep_background=keep_background, stdin=stdin,
        log=None if log is None else open_log(log),  # last: nothing is created for a refused call
    )
    request, keyboard = _for_a_person(request, shown, bound, in_shell, no_input, environment)
    invocation = current_invocation()
    invocation.signals.keep()
    try:
        if in_shell is not None:
            result = _answer_in_shell(in_shell, request, bound, scope, shown, invocation, environment, no_input)
        else:
            result = _run(request, bound, shown, invocation, environment, keyboard)
    finally:
        if request.log is not None:
            request.log.close()
        if keyboard is not None:
            os.close(keyboard)
    annotate(result, environment)
    return exit_status(result)


def _refuse_contradictions(shown: str, yield_after: float | None, in_shell: str | None) -> None:
    """Options that ask for two ways of running at once, or for what this way does not have."""
    if shown == "jsonl" and (yield_after or in_shell is not None):
        raise click.UsageError("--format jsonl follows a one-shot run to its end; with --yield-after or --in use json")
    if in_shell is None and given("idle_expire"):
        raise click.UsageError("--idle-expire is a persistent shell's: it goes with --in NAME")


def _scope(cwd: str | None, env: tuple[str, ...]) -> Scope:
    """What --cwd and --env ask for, checked as every front end's directory and variables are."""
    with refused_as_usage():
        return Scope(calls.directory(cwd, "--cwd"), calls.variables(_pairs(env), "--env") if env else None)


def _command_stdin(asked: bool, env: Environment, in_shell: str | None, yield_after: float | None) -> int | None:
    """What the command reads instead of its terminal (see `_given_stdin`): never in a named shell,
    whose commands read their terminal, nor in a session, which outlives this process."""
    stdin = _given_stdin(asked, env)
    if stdin is not None and asked and (in_shell is not None or yield_after):
        raise click.UsageError("--stdin runs the command here, to its end: it cannot go with --in or --yield-after")
    return None if in_shell is not None else stdin


def _for_a_person(
    request: RunRequest, shown: str, bound: float | None, in_shell: str | None, no_input: bool, env: Environment,
) -> tuple[RunRequest, int | None]:
    """The request of a person's own run, with their keys, their screen and its size
    (display.interactive), and their terminal when their keys do not come on stdin; a run that
    is not theirs as it was, with no terminal."""
    if shown != "pretty" or bound is not None or in_shell is not None:
        return request, None
    from ...display.interactive import interactive, open_keyboard, terminal_size

    keyboard = None
    if request.stdin is not None and not no_input and env.presentation.passthrough:
        keyboard = open_keyboard(env)
    if keyboard is None and not interactive(env, no_input):
        return request, None
    return replace(request, hold_on_input=True, interactive=True, size=terminal_size(env)), keyboard


def _answer_in_shell(
    name: str, request: RunRequest, bound: float | None, scope: Scope, shown: str, invocation: Invocation,
    env: Environment, no_input: bool,
) -> Result:
    """The run in the named shell `name`, and its answer written. At a person's terminal a wait for
    input is theirs to answer, as in their own run: their terminal joins the command, as `attach`
    joins it, until it ends; leaving it (Ctrl-\\ then d) leaves it waiting, and the summary says
    how to answer it later. With stdout going elsewhere (`| tee log`) the join is drawn on the
    terminal that stderr is, and stdout gets the command's output as it would without the wait."""
    person = shown == "pretty" and bound is None and _persons(env, no_input)
    with _quit_for_the_command(invocation.signals.wakeup) if person else nullcontext():
        if person and env.stdout_isatty:
            result, on_screen = _followed_in_shell(name, request, scope, invocation, env)
        else:
            result, on_screen = _in_shell(name, request, bound, scope, invocation, person), None
    if result.status is Status.INPUT_REQUIRED and result.session_id is not None and person:
        if env.stdout_isatty or env.stderr_isatty:
            screen = 1 if env.stdout_isatty else 2
            answered = _answered_here(result.session_id, screen, on_screen)
            if answered is not None:
                if screen != 1:
                    emit(answered, shown, env)
                return answered
    if on_screen is not None:
        from ...display.yielding import print_followed_summary

        print_followed_summary(result, env, on_screen)
        return result
    pressed = bool(invocation.signals.wakeup.passed_on)
    if (result.signal == "SIGINT" or pressed) and shown == "pretty" and env.stdin_isatty and env.stdout_isatty:
        env.stdout.write("\n")  # the person's Ctrl-C was echoed as ^C where the cursor stood
    emit(result, shown, env)
    return result


def _persons(env: Environment, no_input: bool) -> bool:
    """Whether a pretty call is a person's at their terminal (`display.interactive`, loaded only
    then: an agent's JSON call does without its 6 ms of imports)."""
    from ...display.interactive import interactive

    return interactive(env, no_input)


def _answered_here(session_id: str, screen: int, on_screen: str | None) -> Result | None:
    """The command's end once the person at this terminal (`screen`) answered it; None when they
    left it waiting, or it could not be joined. `on_screen`: the output already shown there.
    Left, the way back named is the command's id: attached by the shell's name, a person stays
    joined to the shell after the command's end, with no summary."""
    from .attach import joined
    from ...session.store import SessionStore

    try:
        return joined(SessionStore.open(sweep=False).get(session_id), session_id, watch=False, about=session_id,
                      screen=screen, shown=on_screen, suspends=True)
    except SessionError:
        return None


def _given_stdin(asked: bool, env: Environment) -> int | None:
    """The descriptor the command reads as its standard input instead of its terminal: safe-run's
    own, when asked (--stdin), or when it is a pipe or a file and stdout a person's terminal, as in
    their pipeline (`seq 9 | safe-run -- fzf`). Never a terminal: that is the command's own."""
    if env.stdin_isatty:
        return None
    if not stdin_is_open():
        if asked:
            raise click.UsageError("--stdin: standard input is closed")
        return None
    return env.stdin.fileno() if asked or env.persons_screen else None


def _run(
    request: RunRequest, bound: float | None, shown: str, invocation: Invocation, env: Environment,
    keyboard: int | None = None,
) -> Result:
    """The run, in the foreground or in a session, and its answer written. `keyboard`: the person's
    terminal when their keys do not come on stdin (see `display.interactive.open_keyboard`)."""
    if bound is not None:
        if shown == "pretty":
            result = _watched_session(request, bound, invocation, env)
            from ...display.yielding import print_followed_summary

            print_followed_summary(result, env)
            return result
        result = _in_session(request, bound, invocation)
        emit(result, shown, env)
        return result
    if shown == "jsonl":
        utf8_stdout(env.stdout)  # JSON is UTF-8, whatever PYTHONIOENCODING says
    display = _display(request, shown, env, keyboard)
    from ...engine.runner import execute
    from ...session.adoption import adopting

    # What the command detaches comes back to this process, which collects it once the run is
    # over: in a container without an init, PID 1 would leave each one a zombie.
    on_output, follower = _followed_by(display)

    def answer(result: Result) -> None:
        """Written as soon as it is known: a shell still at work for its prompt is hung up after."""
        if display is None:
            emit(result, shown, env)
        else:
            display.finished(result)

    with adopting():
        result = execute(request, wakeup=invocation.signals.wakeup, on_output=on_output, follower=follower,
                         answer=answer)
    if display is None:
        return result
    if shown == "jsonl" and display.broken and result.signal != "SIGPIPE":
        # Stopped like a pipeline's writer, it is as quiet as one; but a reader gone only at the
        # end took the answer with it, and that is said, as for JSON.
        raise AnswerLost("the reader of standard output went away", result)
    return result


def _followed_by(
    display: Display | None,
) -> tuple[Callable[[bytes], None] | None, Callable[[Run, Callable[[], float]], Follower] | None]:
    """What the engine is handed of a display: the output as it comes, and a turn between steps
    (`display.shown.Shown`). A JSON run loads nothing of the displays."""
    if display is None:
        return None, None
    from ...display.shown import Shown

    return display.on_output, lambda run, clock: Shown(run, display, clock)


def _display(request: RunRequest, shown: str, env: Environment, keyboard: int | None) -> Display | None:
    """What shows a run here as it goes: a person's own terminal, the lines of pretty or jsonl
    output, or nothing for JSON, which answers once at the end."""
    if request.interactive:
        from ...display.interactive import InteractiveDisplay, PipedInteractiveDisplay

        if env.stdout_isatty:
            return InteractiveDisplay(env, time.monotonic, keyboard)
        return PipedInteractiveDisplay(env, time.monotonic, request.max_output)
    if shown == "json":
        return None
    from ...display import make_display

    return make_display(shown, request.max_output, env)


def _in_session(request: RunRequest, bound: float, invocation: Invocation) -> Result:
    """Start the command in a session; a signal that came while it started stops it again."""
    from ...session import wire
    from ...session.client import ask, start_session

    wakeup = invocation.signals.wakeup
    arrived = wakeup.pending
    if arrived:
        return not_started(request.command, signal.Signals(arrived[0]).name)
    try:
        result = start_session(request, bound, invocation.launcher(), wakeup=wakeup)
        if arrived and result.session_id is not None:
            result = ask(result.session_id, wire.Interrupt(signal=signal.Signals(arrived[0]).name))
    except SessionError as exc:  # the sessions directory cannot be used: nothing started
        return error_result(request.command, str(exc))
    except OSError as exc:  # no process or no room for the session's holder
        return error_result(request.command, f"cannot start a session for the command: {exc.strerror or exc}")
    return result


def _in_shell(
    name: str, request: RunRequest, bound: float | None, scope: Scope, invocation: Invocation, person: bool,
) -> Result:
    """The command in the persistent shell `name`; nothing runs when a signal came first.
    `person`: their Ctrl-C is the command's, as in their own run."""
    wakeup = invocation.signals.wakeup
    if wakeup.pending:
        return not_started(request.command, signal.Signals(wakeup.pending[0]).name)
    try:
        return calls.run_in_shell(name, request, bound, scope, launcher=invocation.launcher(), wakeup=wakeup,
                                  person=person)
    except SessionError as exc:
        if exc.status == ExitStatus.USAGE:
            raise click.UsageError(str(exc)) from None
        return error_result(request.command, str(exc))
    except OSError as exc:
        return error_result(request.command, f"cannot start the shell {name}: {exc.strerror or exc}")


def _followed_in_shell(
    name: str, request: RunRequest, scope: Scope, invocation: Invocation, env: Environment,
) -> tuple[Result, str | None]:
    """The command in the named shell `name` called from a person's terminal: its output there as
    it comes (its clean text, as a watched session's), under a status line, until it ends or waits
    for them; and the output shown (None: an error was the answer, and nothing was shown)."""
    from ...display.yielding import follow_answers
    from ...session.client import follow

    wakeup = invocation.signals.wakeup
    try:
        return follow_answers(
            lambda wait: _in_shell(name, request, wait, scope, invocation, person=True),
            lambda session_id, wait: follow(session_id, wait, wakeup, person=True),
            None, env, f" · in {name}",
        )
    except SessionError as exc:
        return error_result(request.command, str(exc)), None
    except OSError as exc:
        return error_result(request.command, f"lost the shell {name}: {exc.strerror or exc}"), None


@contextmanager
def _quit_for_the_command(wakeup: Wakeup) -> Iterator[None]:
    """A person's Ctrl-\\ while their call waits is the command's quit character, as in their own
    run; SIGQUIT's own way (safe-run ends, dumping core) left the command running unseen."""
    try:
        previous = signal.signal(signal.SIGQUIT, lambda signum, frame: wakeup.trigger(signum))
    except ValueError:  # not the main thread: SIGQUIT stays as it was
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGQUIT, previous)


def _watched_session(request: RunRequest, bound: float, invocation: Invocation, env: Environment) -> Result:
    """A session a person watches: its output as it comes, with a status line, up to the bound."""
    from ...display.yielding import follow_yielding
    from ...session.client import follow, start_session

    wakeup = invocation.signals.wakeup
    if wakeup.pending:
        return not_started(request.command, signal.Signals(wakeup.pending[0]).name)
    launcher = invocation.launcher()
    try:
        return follow_yielding(
            lambda wait: start_session(request, wait, launcher, wakeup=wakeup),
            lambda session_id, wait: follow(session_id, wait, wakeup),
            bound, env,
        )
    except SessionError as exc:
        return error_result(request.command, str(exc))
    except OSError as exc:
        return error_result(request.command, f"cannot start a session for the command: {exc.strerror or exc}")
"""Runs in the command line's process (`safe-run ...`, or a warm call's child in its place): its
one way out, and what the process needs before it can answer at all.

This is the only module that exits: every way out goes through `main`, which turns usage mistakes
into one-line messages with status 2 and anything unexpected into status 125, never a traceback.
The verbs themselves are in `commands`.

First `main` hides the command from the process title and offers the call to a warm process
(`warm/`), which runs it in a pre-imported copy of this program; the client exits as that copy
did. Otherwise `main_here` makes this process fit to answer: UTF-8 mode (argument bytes are read
as UTF-8 whatever the locale), descriptors 0-2 occupied (so that nothing safe-run opens takes the
place of a closed one), and stop-signal handlers that give an answer from then on. That is why
this module imports nothing heavy at the top: the handlers are in place before click, the verbs
and the run machinery are loaded, which takes most of the start-up time. `--version` alone is
answered before any of that is loaded, and before the process title is set.
"""

from __future__ import annotations

import os
import sys

from .. import __version__
from .verbs import GROUP_OPTIONS, RUN, SERVER_VERB, VERBS, VERSION_ONLY

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from typing import NoReturn

    import click

    from ..environment import Environment
    from ..engine.interrupts import Interrupted
    from .invocation import Invocation
    from .report import AnswerLost
    from ..core.result import Result
    from ..session.launch import Launcher


def _format_from_argv(argv: list[str]) -> str:
    """The --format a failed parse was asked for, so that a usage error still answers in kind."""
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word.startswith("--format="):
            return word.split("=", 1)[1]
        if word == "--format" and index + 1 < len(argv):
            return argv[index + 1]
    return "auto"


def _is_run(args: list[str]) -> bool:
    """Whether the arguments start a run (rather than name a verb or ask for help or the version)."""
    if not args:
        return True
    return args[0] == RUN or (args[0] not in VERBS and args[0] not in GROUP_OPTIONS)


def _help_hint(exc: click.UsageError) -> str:
    """Where to read about the verb that was misused: the run verb's help is the group's."""
    ctx = exc.ctx
    if ctx is None or ctx.command.name in (RUN, None) or ctx.parent is None:
        return "safe-run --help"
    return f"safe-run {ctx.command.name} --help"


def _fail(message: str, argv: list[str], status: int, hint: str | None = None) -> int:
    """One line on stderr, and the error as JSON on stdout when JSON was asked for."""
    from ..environment import Environment
    from .report import FORMATS, SINGLE_ANSWER_FORMATS
    from ..core.result import error_result

    _say(message + (f" (try '{hint}')" if hint else ""))
    if argv[:1] == [SERVER_VERB]:
        return status  # the MCP server's stdout is the protocol's: nothing else goes there
    output_format = _format_from_argv(argv)
    # jsonl only means something to the run verb: the others answer a refused one like auto.
    accepted = FORMATS if _is_run(argv) else SINGLE_ANSWER_FORMATS
    output_format = output_format if output_format in accepted else "auto"
    env = Environment.current()
    if env.wants_json(output_format):
        _answer_quietly(error_result(None, message), output_format, env)
    return status


def _answer_quietly(result: Result, output_format: str, env: Environment) -> None:
    """The JSON answer of a failure, when stdout takes it; stderr already has the line."""
    from .report import AnswerLost, json_line, write_json_line

    try:
        write_json_line(json_line(result, output_format), env.stdout, result)
    except AnswerLost:
        pass


def _interrupted(exc: Interrupted, argv: list[str]) -> int:
    """A stop signal before anything ran: a run answers `interrupted` (nothing ran); a verb just stops."""
    status = 128 + exc.signum
    if not _is_run(argv):
        _say(f"interrupted by {exc.name}")
        return status
    from ..environment import Environment
    from .report import FORMATS
    from ..core.result import not_started

    result = not_started(None, exc.name)
    _say(result.message or "")
    output_format = _format_from_argv(argv)
    env = Environment.current()
    if env.wants_json(output_format if output_format in FORMATS else "auto"):
        _answer_quietly(result, output_format, env)
    return status


def _lost(exc: AnswerLost) -> int:
    """The answer could not be written to stdout: say on stderr what it was, and exit like SIGPIPE."""
    from ..core.result import ExitStatus

    what = ""
    if exc.result is not None:
        result = exc.result
        what = f": {result.status.value}"
        what += f", exit code {result.exit_code}" if result.exit_code is not None else ""
        what += f", session {result.session_id} goes on" if result.session_id else ""
    _silence_stdout()
    _say(f"{exc.reason}; the answer was lost{what}")
    return ExitStatus.NO_READER


def _say(line: str) -> None:
    """One line on stderr, if it takes it (closed, full or gone, there is no one left to tell)."""
    try:
        sys.stderr.write(f"safe-run: {line}\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """Point descriptor 1 at /dev/null, so that Python's own flush at exit finds nothing to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def _utf8_mode() -> None:
    """Re-run in Python's UTF-8 mode when the locale made it ASCII (LC_ALL=C with PYTHONUTF8=0).

    safe-run's text is UTF-8 end to end (arguments, the command file, the terminal, JSON); under
    an ASCII file-system encoding every non-ASCII argument would arrive as undecodable bytes. The
    command's own environment is left as it was.
    """
    if sys.flags.utf8_mode or sys.getfilesystemencoding().lower().replace("-", "") == "utf8":
        return
    try:
        os.execv(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]])
    except OSError:
        pass  # carry on: non-ASCII arguments are then refused one by one


def _occupy_standard_descriptors() -> bool:
    """Put /dev/null on each of descriptors 0-2 that is closed; whether stdout was open.

    A closed descriptor would be the next one the kernel hands out: the terminal or a socket
    could then be safe-run's stdout or stderr.
    """
    stdout_open = True
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            stdout_open = stdout_open and fd != 1
            try:
                devnull = os.open(os.devnull, os.O_RDWR)
                if devnull != fd:
                    os.dup2(devnull, fd)
                    os.close(devnull)
            except OSError:
                pass
    return stdout_open


def _first_non_utf8(args: list[str]) -> str | None:
    for index, word in enumerate(args, start=1):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            shown = word.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            return f"argument {index} is not valid UTF-8: {shown}"
    return None


def main(argv: list[str] | None = None) -> NoReturn:
    if argv is not None:  # a caller of this function, not the safe-run process itself
        main_here(argv)
    args = sys.argv[1:]
    if args != VERSION_ONLY:  # nothing to hide; even the quick way to set the title costs a little
        from .. import process_title

        process_title.hide_command()
    from ..warm import client

    handed = client.call(args)
    if handed is not None:
        client.exit_like(handed)
    _utf8_mode()
    try:
        main_here(args)
    except SystemExit as leaving:
        _leave(leaving)


def _leave(leaving: SystemExit) -> NoReturn:
    """End the safe-run process as soon as its answer is out. Python's own exit tears down every
    module and object first: some 20 ms after the answer is written, which its caller waits
    through. Not when another thread is still at work (a server's worker, which Python's exit
    waits for), nor for an exit that is a message (Python prints it)."""
    code = leaving.code
    threading = sys.modules.get("threading")
    if (threading is not None and threading.active_count() > 1) or not (code is None or isinstance(code, int)):
        raise leaving
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: closed when safe-run started
                stream.flush()
    except (OSError, ValueError):
        raise leaving from None  # Python's own exit says what it says of an output gone
    adoption = sys.modules.get("safe_run.session.adoption")  # a call that started no session has nothing to collect
    if adoption is not None:
        adoption.collect_pending()
    os._exit(0 if code is None else code)


def main_here(args: list[str], holders: Launcher | None = None) -> NoReturn:
    """The call, in this process: the command line's own, a warm process's child, or a library
    caller's. `holders`: how its sessions' holders start (see `invocation.Invocation`)."""
    stdout_open = _occupy_standard_descriptors()
    if stdout_open and args == VERSION_ONLY:
        sys.exit(_version(args))  # before loading what a call needs (dataclasses, inspect: milliseconds)
    from ..engine.interrupts import Interrupted, StopSignals
    from .invocation import Invocation

    signals = StopSignals()
    signals.install()
    try:
        code = _main(args, Invocation(signals, holders), stdout_open)
    except Interrupted as exc:
        signals.keep()
        code = _interrupted(exc, args)
    sys.exit(code)


def _main(args: list[str], invocation: Invocation, stdout_open: bool) -> int:
    from ..core.result import ExitStatus

    if not stdout_open:
        invocation.signals.keep()
        _say("standard output is closed: there is nowhere to write the answer; nothing ran")
        return ExitStatus.NO_READER
    problem = _first_non_utf8(args)
    if problem is not None:
        return _fail(problem, args, ExitStatus.USAGE, "safe-run --help")

    import click

    from .commands import cli
    from .report import AnswerLost
    from ..session import SessionError

    if "_SAFE_RUN_COMPLETE" in os.environ:
        from .commands.completion import use_ours

        use_ours()

    try:
        code = cli.main(args, prog_name="safe-run", standalone_mode=False, obj=invocation)
    except click.UsageError as exc:
        code = _fail(_one_line(exc.format_message()), args, ExitStatus.USAGE, _help_hint(exc))
    except click.ClickException as exc:
        code = _fail(_one_line(exc.format_message()), args, ExitStatus.FAILURE)
    except SessionError as exc:
        code = _fail(str(exc), args, exc.status)
    except AnswerLost as exc:
        invocation.signals.keep()
        code = _lost(exc)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.Abort:
        code = ExitStatus.INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, not a traceback
        code = _internal_error(exc, args)
    invocation.signals.keep()
    return code if isinstance(code, int) else 0


def _version(args: list[str]) -> int:
    """What click's --version option answers, without loading click or the verbs: nothing else
    is needed for it. A reader gone away ends it with status 1 and stdout silenced, as in click."""
    try:
        sys.stdout.write(f"safe-run, version {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return 1
    except OSError as exc:
        return _internal_error(exc, args)
    return 0


def _internal_error(exc: Exception, args: list[str]) -> int:
    from ..core.result import ExitStatus

    if os.environ.get("SAFE_RUN_DEBUG"):
        raise exc
    message = _one_line(f"internal error: {type(exc).__name__}: {exc}")
    return _fail(f"{message} (a bug in safe-run: please report it, with the traceback SAFE_RUN_DEBUG=1 prints)",
                 args, ExitStatus.FAILURE)


def _one_line(message: str) -> str:
    return " ".join(message.split())

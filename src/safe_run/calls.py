"""The calls every front end makes, in one place: the command line, the library, the MCP server
and `Remote` check their arguments here, build their request here, and start, ask and close
sessions and named shells through here. A rule (what a number of seconds may be, what a variable
name is, how a named shell's first command keeps its own directory) is then the same everywhere.

Checks raise `ValueError` or `TypeError` with a sentence for the caller; the command line turns
them into a usage error, the MCP server into a tool error. Nothing here loads the engine before a
call needs it, so a front end that only checks pays nothing for it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from .core.request import (
    DEFAULT_IDLE_EXPIRE_S, DEFAULT_WAIT_EXPIRE_S, STRATEGY_CHOICES, RunRequest, Scope, StrategyChoice, Timers,
)
from .core.result import ExitStatus, Result
from .session import SessionError

if TYPE_CHECKING:
    from .engine.interrupts import Wakeup
    from .session.client import Line
    from .session.launch import Launcher
    from .session.store import Session
    from .session.wire import Request, Run

    WarmRun = tuple[Session, Run]

STRATEGIES = STRATEGY_CHOICES
DEFAULT_MAX_OUTPUT = 1024 * 1024
# The longest command any front end takes, in bytes of UTF-8: far beyond a command line, and a
# bound on what a holder is handed.
MAX_COMMAND_BYTES = 1024 * 1024
MIN_MAX_OUTPUT = 1024
# No wait needs more than ~31 years.
MAX_SECONDS = 1e9
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# How long a JSON call waits before it answers `running` with a session, when the caller gave no
# limit of its own (agents that forget one get control back).
DEFAULT_YIELD_AFTER_S = 30.0
# What an unscoped first command types so that a shell exists before a command with its own
# cwd/env runs in it: a fresh shell takes its start directory and variables from the command
# that starts it, and those belong to the shell, not to one command.
WARM_UP = "true"

__all__ = [
    "DEFAULT_IDLE_EXPIRE_S", "DEFAULT_MAX_OUTPUT", "MAX_COMMAND_BYTES", "DEFAULT_YIELD_AFTER_S", "ENV_NAME", "MAX_SECONDS",
    "MIN_MAX_OUTPUT", "STRATEGIES", "WARM_UP", "Scope",
]


# ---- checks ------------------------------------------------------------------------------------


def seconds(value: object, what: str) -> float | None:
    """A limit in seconds: None or 0 is none, as on the command line."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or None, not {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    refusal = seconds_refusal(number, value)
    if refusal is not None:
        raise ValueError(f"{what}: {refusal}")
    return number or None


def seconds_refusal(number: float, written: object) -> str | None:
    """Why `number` (`written` as the caller wrote it) cannot be a number of seconds; None when it
    can. NaN compares false with everything, so it would turn a limit into none or into zero
    without a word; the clocks and poll(2) overflow somewhere above MAX_SECONDS."""
    if not math.isfinite(number):
        return f"{written!r} is not a finite number of seconds"
    if number < 0:
        return "must not be negative"
    if number > MAX_SECONDS:
        return f"must be at most {MAX_SECONDS:.0f}"
    return None


def wait(value: object, what: str) -> float:
    """How long a call waits for its answer: 0 when not given."""
    return seconds(value, what) or 0.0


def command(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"command must be a string, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError("the command contains a NUL byte, which no shell can run")
    if not text.strip():
        raise ValueError("no command given (an empty command runs nothing)")
    size = len(utf8(text, "the command").encode("utf-8"))
    if size > MAX_COMMAND_BYTES:
        raise ValueError(f"the command is {size} bytes, and a command may have at most {MAX_COMMAND_BYTES} (1 MiB); "
                         "put a longer script in a file and run that")
    return text


def utf8(text: str, what: str) -> str:
    """`text` as given, once it is UTF-8: Python keeps bytes that are not (a file name's, an
    argument's) as surrogates, which the shell's start-up files and a session's messages cannot
    hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        at = len(text[:exc.start].encode("utf-8"))  # where it is in the bytes it came from
        raise ValueError(f"{what} is not valid UTF-8 (byte {at})") from None
    return text


def current_directory(instead: str = "give cwd") -> str:
    """The caller's own directory, where a run given none starts; `instead` says what to do when
    there is none to take (it was removed under the caller, or cannot be read)."""
    try:
        path = os.getcwd()
    except FileNotFoundError:
        raise ValueError(f"the current directory no longer exists; {instead}") from None
    except OSError as exc:
        raise ValueError(f"cannot tell the current directory ({exc.strerror}); {instead}") from None
    return utf8(path, "the name of the current directory")


def directory(cwd: object, what: str = "cwd") -> str | None:
    """An absolute, existing directory, decided now (a relative one is taken from the caller's)."""
    if cwd is None:
        return None
    if not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path or None, not {type(cwd).__name__}")
    given = os.fspath(cwd)
    if not isinstance(given, str):
        raise TypeError(f"{what} must be a path as a string, not {type(given).__name__}")
    if not os.path.isabs(given):
        given = os.path.join(current_directory(f"give an absolute {what}"), given)
    path = os.path.normpath(utf8(given, f"{what} {given!r}"))
    if not os.path.isdir(path):
        raise ValueError(f"{what} {path!r} is not a directory")
    return path


def variables(env: object, what: str = "env") -> dict[str, str]:
    """Variables for the command: names as a shell takes them, values without NUL bytes."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"{what} must be a mapping of names to strings, not {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise ValueError(f"{what}: {name!r} is not a variable name")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"{what}: the value of {name} must be a string without NUL bytes")
        utf8(value, f"{what}: the value of {name}")
    return dict(env)


def output_bound(max_output: object, what: str = "max_output") -> int:
    """How many bytes of a command's output a run keeps (its first and last halves)."""
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < MIN_MAX_OUTPUT:
        raise ValueError(f"{what} must be a whole number of at least {MIN_MAX_OUTPUT} bytes, not {max_output!r}")
    return max_output


def check_output(max_output: object, strategy: object) -> StrategyChoice:
    """The strategy asked for, once it and the output bound are what a run takes."""
    output_bound(max_output)
    return strategy_choice(strategy)


def strategy_choice(strategy: object) -> StrategyChoice:
    for choice in STRATEGIES:
        if strategy == choice:
            return choice
    raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")


def shell_name(name: object) -> str:
    """A caller's name for a persistent shell, checked as `--in NAME` checks it; a new one if None."""
    from .session.client import check_name

    chosen = f"api-{os.urandom(8).hex()}" if name is None else name
    if not isinstance(chosen, str):
        raise TypeError(f"name must be a string or None, not {type(chosen).__name__}")
    try:
        check_name(chosen)
    except SessionError as exc:
        raise ValueError(str(exc)) from None
    return chosen


def request(
    text: object, *, shell: object = None, cwd: str | None = None, env: dict[str, str] | None = None,
    timeout: float | None = None, max_output: object = DEFAULT_MAX_OUTPUT, strategy: object = "auto",
    load_rc: object = True, idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
    wait_expire: float | None = DEFAULT_WAIT_EXPIRE_S, caller: str = "cli", timers: Timers = Timers(),
) -> RunRequest:
    """The request of a call, its arguments checked (cwd and env already are; None is the caller's
    directory). `timers`: the fallbacks' delays, which only the command line changes."""
    if shell is not None and not isinstance(shell, str):
        raise TypeError(f"shell must be a path or name as a string, not {type(shell).__name__}")
    kept = output_bound(max_output)
    if timers.timeout != timeout:  # copied only when it differs: the copy was half of this function's time
        timers = replace(timers, timeout=timeout)
    return RunRequest(
        command=command(text), shell=shell, cwd=cwd or current_directory(), env=env or {}, load_rc=bool(load_rc),
        strategy=strategy_choice(strategy), timers=timers, max_output=kept,
        idle_expire=idle_expire, wait_expire=wait_expire, caller=caller,
    )


def scope(cwd: object = None, env: object = None) -> Scope:
    """A named shell's later command's own directory and variables, checked."""
    return Scope(directory(cwd), None if env is None else variables(env))


# ---- runs, sessions and named shells -------------------------------------------------------------


def run(run_request: RunRequest, wakeup: Wakeup | None = None) -> Result:
    """A one-shot run, to its end in this thread. The shell is hung up in another thread, once
    its own work after the command (a prompt theme's worker) is done, so the result waits for
    neither; the interpreter waits for that thread at its exit (at most `cleanup.SHELL_WORK_S`
    and a hang-up)."""
    from .engine.runner import execute

    return execute(run_request, wakeup=wakeup, later=_in_a_thread)


def _in_a_thread(work: Callable[[], None]) -> None:
    import threading

    threading.Thread(target=_quietly, args=(work,), name="safe-run hang-up").start()


def _quietly(work: Callable[[], None]) -> None:
    """`work`, whose faults nobody is left to hear of: the result went out before it."""
    try:
        work()
    except Exception:  # noqa: BLE001
        pass


def run_in_session(
    run_request: RunRequest, yield_after: float, launcher: Launcher, wakeup: Wakeup | None = None,
) -> Result:
    """A one-shot run in a session (its holder started by `launcher`) that answers after `yield_after`."""
    from .session.client import start_session

    return start_session(run_request, yield_after, launcher, wakeup=wakeup)


def run_in_shell(
    name: str, run_request: RunRequest, bound: float | None, command_scope: Scope = Scope(), *,
    launcher: Launcher, started: bool = True, wakeup: Wakeup | None = None, person: bool = False,
) -> Result:
    """The command in the named shell, started on first use with `run_request`'s shell, directory,
    variables and idle limit. `command_scope` is this command's own directory and variables; a
    shell not `started` yet by this caller first runs a command of its own, so that a scoped first
    command stays scoped (a shell takes its start directory from the command that starts it).
    `person`: a person at their terminal calls, whose Ctrl-C is the command's."""
    from .session.client import run_in_shell as in_shell

    if not started and not command_scope.empty:
        warm_up = replace(run_request, command=WARM_UP, timers=replace(run_request.timers, timeout=None))
        in_shell(name, warm_up, None, Scope(), wakeup=wakeup, launcher=launcher)
    return in_shell(name, run_request, bound, command_scope, wakeup=wakeup, launcher=launcher, person=person)


def warm_shell_run(
    name: str, run_request: RunRequest, bound: float | None, command_scope: Scope, last: Session | None = None,
) -> WarmRun | None:
    """The named shell's session and what to ask it, when it can be asked at once: for a front end
    that waits for the answer in its own event loop (see `run_in_shell` for the rest). None: ask
    through `run_in_shell`, which looks the shell up, or starts it, the careful way. `last`: the
    session this caller's last call found for the name."""
    from .session.client import run_message, warm_shell

    session = warm_shell(name, last=last)
    return None if session is None else (session, run_message(run_request, bound, command_scope))


def ask_warm(warm: WarmRun, line: Line | None = None) -> Result | None:
    """The answer of the shell `warm_shell_run` found; None when its holder took no command after
    all: ask through `run_in_shell` then. `line`: the caller's connection to that shell's holder,
    kept between its calls (`kept_line`)."""
    from .session.client import ask_warm as ask

    return ask(*warm, line=line)


def kept_line() -> Line:
    """A caller's connection to a named shell's holder, kept from one call to the next when the
    holder keeps it (see `session.client.Line`)."""
    from .session.client import Line

    return Line()


def close_shell(name: str) -> Result:
    """End the named shell and everything it started: its last result, with what was ended."""
    from .session.client import close_shell as close

    return close(name)


def close_if_open(close: Callable[[], Result]) -> None:
    """End a shell as a `with` block leaves it: one already gone (exited, idled out) is fine."""
    try:
        close()
    except SessionError as exc:
        if exc.status != ExitStatus.NO_SESSION:
            raise


def ask(session_id: str, message: Request) -> Result:
    """One request to a session's holder (poll, send, stop...), or the result its command left."""
    from .session.client import ask as ask_holder

    return ask_holder(session_id, message)


def poll(session_id: str, wait_s: float = 0.0) -> Result:
    from .session import wire

    return ask(session_id, wire.Poll(wait=wait_s))


def send(session_id: str, text: str | None, keys: Iterable[str] | str = (), enter: bool = True, queue: bool = False,
         wait_s: float = 1.0) -> Result:
    """Type `text` (and Enter unless `enter` is false) and press `keys`, then answer as a poll does."""
    from .session import wire

    typed, pressed = keystrokes(text, keys, enter)
    return ask(session_id, wire.Send(text=typed, keys=pressed, queue=bool(queue), wait=wait_s))


def key_names(keys: Iterable[str]) -> list[str]:
    """The key names a library caller gave: one string would be taken as a name per character."""
    if isinstance(keys, str):
        raise TypeError("keys must be a list of key names, not one string")
    return list(keys)


def keystrokes(text: object, keys: Iterable[str] | str = (), enter: bool = True) -> tuple[str, str]:
    """What `send` types and what keys it presses, checked before a holder is asked. `keys` are
    key names (`ctrl-c`, `enter`, ...), or a string of what they type already."""
    from .session.keys import key_text

    if text is not None and not isinstance(text, str):
        raise TypeError(f"text must be a string or None, not {type(text).__name__}")
    pressed = keys if isinstance(keys, str) else "".join(key_text(name) for name in keys)
    if text is None:
        if not pressed:
            raise ValueError("nothing to send: give text, keys, or both")
        return "", pressed
    utf8(text, "text")
    return (typed_line(text) + "\r" if enter else text), pressed


def typed_line(text: str) -> str:
    """A line to be typed with Enter: one that already ends in a line break (`"y\\n"`, as agents
    write it) is that one line, its break the Enter, not a second, empty line."""
    for ending in ("\r\n", "\n", "\r"):
        if text.endswith(ending):
            return text[: -len(ending)]
    return text


def stop(session_id: str, why: str | None = None) -> Result:
    """End the session's command; `why` is said in its result (else who stopped it)."""
    from .session import wire

    return ask(session_id, wire.Stop(why=why))



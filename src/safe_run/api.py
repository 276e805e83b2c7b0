"""safe-run as a library: the same runs, sessions and persistent shells as the command line.

Every call answers with a `Result`, the object the command line prints as JSON (`to_dict()` gives
that JSON). What the command did (failed, timed out, waited for input, was busy) is in the
result, never an exception; only a call that cannot be made raises: `ValueError` or `TypeError`
for bad arguments, `SessionError` for a session or shell that does not exist (any more).

Nothing here installs a signal handler or touches the caller's terminal: one-shot runs run in the
calling thread with their own pseudo-terminal, and sessions and shells live in holder processes
reached over a socket, so any thread may call, and many at once.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType

from .result import ExitStatus, Result
from .request import DEFAULT_IDLE_EXPIRE_S, RunRequest, Timers
from .session import SessionError

__all__ = [
    "AsyncShell", "Result", "Session", "SessionError", "Shell", "arun", "run",
]

STRATEGIES = ("auto", "rich", "basic", "none")
DEFAULT_MAX_OUTPUT = 1024 * 1024
MIN_MAX_OUTPUT = 1024
MAX_SECONDS = 1e9
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What an unscoped first command types so that a shell exists before a command with its own
# cwd/env runs in it: a fresh shell takes its start directory and variables from the command
# that starts it, and those belong to the Shell, not to one command.
WARM_UP = "true"


def _seconds(value: float | None, what: str) -> float | None:
    """A limit in seconds: None or 0 is none, as on the command line."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of seconds or None, not {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or value > MAX_SECONDS:
        raise ValueError(f"{what} must be a finite number of seconds from 0 to {MAX_SECONDS:.0f}, not {value!r}")
    return float(value) or None


def _wait(value: float, what: str) -> float:
    return _seconds(value, what) or 0.0


def _command(command: str) -> str:
    if not isinstance(command, str):
        raise TypeError(f"command must be a string, not {type(command).__name__}")
    if "\0" in command:
        raise ValueError("the command contains a NUL byte, which no shell can run")
    if not command.strip():
        raise ValueError("no command given (an empty command runs nothing)")
    return command


def _directory(cwd: str | os.PathLike[str] | None) -> str | None:
    """An absolute, existing directory, decided now (a relative one is taken from the caller's)."""
    if cwd is None:
        return None
    if not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(f"cwd must be a path or None, not {type(cwd).__name__}")
    path = os.path.abspath(os.fspath(cwd))
    if not os.path.isdir(path):
        raise ValueError(f"cwd {path!r} is not a directory")
    return path


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a mapping of names to strings, not {type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise ValueError(f"env: {name!r} is not a variable name")
        if not isinstance(value, str) or "\0" in value:
            raise ValueError(f"env: the value of {name} must be a string without NUL bytes")
    return dict(env)


def _check_output(max_output: int, strategy: str) -> None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, not {strategy!r}")
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output < MIN_MAX_OUTPUT:
        raise ValueError(f"max_output must be an int of at least {MIN_MAX_OUTPUT} bytes, not {max_output!r}")


def _request(
    command: str, *, shell: str | None, cwd: str | None, env: dict[str, str], timeout: float | None,
    max_output: int, strategy: str, load_rc: bool, idle_expire: float | None,
) -> RunRequest:
    if shell is not None and not isinstance(shell, str):
        raise TypeError(f"shell must be a path or name as a string, not {type(shell).__name__}")
    _check_output(max_output, strategy)
    return RunRequest(
        command=_command(command), shell=shell, cwd=cwd or os.getcwd(), env=env, load_rc=bool(load_rc),
        strategy=strategy, timers=Timers(timeout=timeout), max_output=max_output, idle_expire=idle_expire,
    )


def run(
    command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
) -> Result:
    """Run one command in a fresh shell and answer at its end.

    With `yield_after`, the command runs in a session: still going after that many seconds, it
    answers `running` with a `session_id` (see `session`), and an input wait is kept for `send`,
    for `idle_expire` seconds after the last call about it (None or 0: for ever).
    """
    request = _request(
        command, shell=shell, cwd=_directory(cwd), env=_env(env), timeout=_seconds(timeout, "timeout"),
        max_output=max_output, strategy=strategy, load_rc=load_rc,
        idle_expire=_seconds(idle_expire, "idle_expire") or None,
    )
    bound = _seconds(yield_after, "yield_after")
    if bound is None:
        from .runner import execute

        return execute(request)
    from .session.client import start_session

    return start_session(request, bound)


async def arun(
    command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
) -> Result:
    """`run` in a worker thread, so that an event loop goes on meanwhile.

    Cancelling the awaiting task does not stop the command; give it a `timeout` or `yield_after`.
    """
    return await asyncio.to_thread(
        run, command, shell=shell, cwd=cwd, env=env, timeout=timeout, yield_after=yield_after,
        max_output=max_output, strategy=strategy, load_rc=load_rc, idle_expire=idle_expire,
    )


class Session:
    """A command that outlived the call that started it: ask where it stands, answer it, or end it."""

    def __init__(self, session_id: str) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a string, not {type(session_id).__name__}")
        self.id = session_id

    def __repr__(self) -> str:
        return f"Session({self.id!r})"

    @classmethod
    def of(cls, result: Result) -> Session:
        """The session of a result that has one (`running`, or `input_required` in a session)."""
        if not isinstance(result, Result):
            raise TypeError(f"expected a Result, not {type(result).__name__}")
        if result.session_id is None:
            raise ValueError(f"this result ({result.status.value}) has no session: its command is not running")
        return cls(result.session_id)

    def poll(self, wait: float = 0.0) -> Result:
        """The output since the last answer and where the command stands; waits up to `wait` s for its end."""
        return self._ask({"op": "poll", "wait": _wait(wait, "wait")})

    def send(
        self, text: str | None = None, keys: Iterable[str] = (), enter: bool = True, queue: bool = False,
        wait: float = 1.0,
    ) -> Result:
        """Type `text` (and Enter) and press `keys` (names as `safe-run send --key` takes them), then poll."""
        from .session.keys import key_text

        if text is not None and not isinstance(text, str):
            raise TypeError(f"text must be a string or None, not {type(text).__name__}")
        if isinstance(keys, str):
            raise TypeError("keys must be a list of key names, not one string")
        pressed = "".join(key_text(name) for name in keys)
        if text is None and not pressed:
            raise ValueError("nothing to send: give text, keys, or both")
        typed = "" if text is None else text + ("\r" if enter else "")
        return self._ask({"op": "send", "text": typed, "keys": pressed, "queue": bool(queue), "wait": _wait(wait, "wait")})

    def stop(self) -> Result:
        """End the command and everything it started; its final result."""
        return self._ask({"op": "stop"})

    def _ask(self, request: dict[str, object]) -> Result:
        from .session.client import ask

        return ask(self.id, request)


def shell_name(name: str | None) -> str:
    """The caller's name for a persistent shell, checked as `--in NAME` checks it; a new one if None."""
    from .session.client import check_name

    chosen = f"api-{secrets.token_hex(8)}" if name is None else name
    if not isinstance(chosen, str):
        raise TypeError(f"name must be a string or None, not {type(chosen).__name__}")
    try:
        check_name(chosen)
    except SessionError as exc:
        raise ValueError(str(exc)) from None
    return chosen


def close_if_open(close: Callable[[], Result]) -> None:
    """End a shell as a `with` block leaves it: one already gone (exited, idled out) is fine."""
    try:
        close()
    except SessionError as exc:
        if exc.status != ExitStatus.NO_SESSION:
            raise


class Shell:
    """A persistent shell: directory, variables, functions and jobs last from one `run` to the next.

    The shell starts on the first `run` (with this object's shell, cwd, env and load_rc) and ends
    with `close`, at the end of a `with` block, or after `idle_expire` seconds without a command
    (None or 0: never). Two `Shell` objects with one name share the one shell.
    """

    def __init__(
        self, name: str | None = None, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, load_rc: bool = True, idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
    ) -> None:
        self.name = shell_name(name)
        if shell is not None and not isinstance(shell, str):
            raise TypeError(f"shell must be a path or name as a string, not {type(shell).__name__}")
        self._shell = shell
        self._cwd = _directory(cwd)
        self._env = _env(env)
        self._load_rc = bool(load_rc)
        self._idle_expire = _seconds(idle_expire, "idle_expire")
        self._used = False

    def __repr__(self) -> str:
        return f"Shell({self.name!r})"

    def run(
        self, command: str, *, timeout: float | None = None, yield_after: float | None = None,
        cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run `command` in this shell; `cwd` and `env` apply to this command alone.

        A call while another command runs here answers `busy` at once, with that command's
        session id. With `yield_after`, a command still going then answers `running`.
        """
        request = self._request(command, _seconds(timeout, "timeout"))
        bound = _seconds(yield_after, "yield_after")
        scoped: dict[str, object] = {}
        directory = _directory(cwd)
        if directory is not None:
            scoped["cwd"] = directory
        if env is not None:
            scoped["env"] = _env(env)
        if scoped and not self._used:
            self._start()
        result = self._run_in_shell(request, bound, scoped)
        self._used = True
        return result

    def close(self) -> Result:
        """End the shell and everything it started: its last result, with what was ended in `killed`."""
        from .session.client import close_shell

        return close_shell(self.name)

    def __enter__(self) -> Shell:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        close_if_open(self.close)

    def _request(self, command: str, timeout: float | None) -> RunRequest:
        return _request(
            command, shell=self._shell, cwd=self._cwd, env=self._env, timeout=timeout,
            max_output=DEFAULT_MAX_OUTPUT, strategy="auto", load_rc=self._load_rc, idle_expire=self._idle_expire or None,
        )

    def _start(self) -> None:
        """Start the shell with a command of its own, so that a first scoped command stays scoped."""
        self._run_in_shell(self._request(WARM_UP, None), None, {})

    def _run_in_shell(self, request: RunRequest, bound: float | None, scoped: dict[str, object]) -> Result:
        from .session.client import run_in_shell

        return run_in_shell(self.name, request, bound, scoped)


class AsyncShell:
    """A `Shell` for asyncio code: each call runs in a worker thread (`asyncio.to_thread`)."""

    def __init__(
        self, name: str | None = None, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, load_rc: bool = True, idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
    ) -> None:
        self.shell = Shell(name, shell=shell, cwd=cwd, env=env, load_rc=load_rc, idle_expire=idle_expire)
        self.name = self.shell.name

    async def run(
        self, command: str, *, timeout: float | None = None, yield_after: float | None = None,
        cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
    ) -> Result:
        return await asyncio.to_thread(self.shell.run, command, timeout=timeout, yield_after=yield_after, cwd=cwd, env=env)

    async def close(self) -> Result:
        return await asyncio.to_thread(self.shell.close)

    async def __aenter__(self) -> AsyncShell:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await asyncio.to_thread(self.shell.__exit__, kind, value, traceback)


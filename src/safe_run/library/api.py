"""safe-run as a library: the same runs, sessions and persistent shells as the command line.

Every call answers with a `Result`, the object the command line prints as JSON (`to_dict()` gives
that JSON). What the command did (failed, timed out, waited for input, was busy) is in the
result, never an exception; only a call that cannot be made raises: `ValueError` or `TypeError`
for bad arguments, `SessionError` for a session or shell that does not exist (any more).

Nothing here installs a signal handler or touches the caller's terminal: one-shot runs run in the
calling thread with their own pseudo-terminal, and sessions and shells live in holder processes
reached over a socket, so any thread may call, and many at once. The holders come from one fork
server per process (`session.forkserver`), started with the first `Shell` or session: it forks a
holder ahead, with a shell started and its rc files loaded, so that a shell whose first command
comes a moment after it was made starts at once, and it ends with this process.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from .. import calls

from ..calls import DEFAULT_MAX_OUTPUT
from ..core.request import DEFAULT_IDLE_EXPIRE_S, DEFAULT_WAIT_EXPIRE_S
from ..core.result import Result
from ..session import SessionError

if TYPE_CHECKING:
    from ..core.request import RunRequest, Scope
    from ..session.client import Line
    from ..session.forkserver import ForkServer
    from ..session import store

__all__ = [
    "AsyncShell", "Result", "Session", "SessionError", "Shell", "arun", "run",
]


class _Holders:
    """This process's fork server, started on first need and shared by every call (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: ForkServer | None = None

    def __call__(self) -> ForkServer:
        with self._lock:
            if self._server is None:
                from ..session.forkserver import ForkServer

                self._server = ForkServer().open()
            return self._server


HOLDERS = _Holders()


def run(
    command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    wait_expire: float | None = DEFAULT_WAIT_EXPIRE_S,
) -> Result:
    """Run one command in a fresh shell and answer at its end.

    With `yield_after`, the command runs in a session: still going after that many seconds, it
    answers `running` with a `session_id` (see `session`), and an input wait is kept for `send`,
    for `wait_expire` seconds after the last call about it (None or 0: for ever).
    """
    request = calls.request(
        command, shell=shell, cwd=calls.directory(cwd), env=calls.variables(env),
        timeout=calls.seconds(timeout, "timeout"), max_output=max_output, strategy=strategy, load_rc=load_rc,
        wait_expire=calls.seconds(wait_expire, "wait_expire"),
    )
    bound = calls.seconds(yield_after, "yield_after")
    return calls.run(request) if bound is None else calls.run_in_session(request, bound, HOLDERS())


async def arun(
    command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    wait_expire: float | None = DEFAULT_WAIT_EXPIRE_S,
) -> Result:
    """`run` in a worker thread, so that an event loop goes on meanwhile.

    Cancelling the awaiting task does not stop the command; give it a `timeout` or `yield_after`.
    """
    return await asyncio.to_thread(
        run, command, shell=shell, cwd=cwd, env=env, timeout=timeout, yield_after=yield_after,
        max_output=max_output, strategy=strategy, load_rc=load_rc, wait_expire=wait_expire,
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
        return calls.poll(self.id, calls.wait(wait, "wait"))

    def send(
        self, text: str | None = None, keys: Iterable[str] = (), enter: bool = True, queue: bool = False,
        wait: float = 1.0,
    ) -> Result:
        """Type `text` (and Enter) and press `keys` (names as `safe-run send --key` takes them), then poll."""
        return calls.send(self.id, text, calls.key_names(keys), enter=enter, queue=queue, wait_s=calls.wait(wait, "wait"))

    def stop(self) -> Result:
        """End the command and everything it started; its final result."""
        return calls.stop(self.id)

    def attach_command(self) -> list[str]:
        """The command line with which a person joins this session from their own terminal (to
        type a password the agent must not see, or to take over): show it to them."""
        return ["safe-run", "attach", self.id]


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
        self.name = calls.shell_name(name)
        if shell is not None and not isinstance(shell, str):
            raise TypeError(f"shell must be a path or name as a string, not {type(shell).__name__}")
        self._shell = shell
        self._cwd = calls.directory(cwd)
        self._env = calls.variables(env)
        self._load_rc = bool(load_rc)
        self._idle_expire = calls.seconds(idle_expire, "idle_expire")
        self._used = False
        self._warm: store.Session | None = None  # the shell's session, as the last call found it
        self._line: Line | None = None  # the connection to its holder, kept between calls
        self._holders = HOLDERS()  # now: it forks ahead while the caller goes on to its first command

    def __repr__(self) -> str:
        return f"Shell({self.name!r})"

    def attach_command(self) -> list[str]:
        """The command line with which a person joins this shell from their own terminal."""
        return ["safe-run", "attach", self.name]

    def run(
        self, command: str, *, timeout: float | None = None, yield_after: float | None = None,
        cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
    ) -> Result:
        """Run `command` in this shell; `cwd` and `env` apply to this command alone.

        A call while another command runs here answers `busy` at once, with that command's
        session id. With `yield_after`, a command still going then answers `running`.
        """
        request = calls.request(
            command, shell=self._shell, cwd=self._cwd, env=self._env, timeout=calls.seconds(timeout, "timeout"),
            load_rc=self._load_rc, idle_expire=self._idle_expire,
        )
        bound = calls.seconds(yield_after, "yield_after")
        scope = calls.scope(cwd, env)
        result = self._in_warm_shell(request, bound, scope) if self._used else None
        if result is None:
            result = calls.run_in_shell(self.name, request, bound, scope, started=self._used, launcher=self._holders)
        self._used = True
        return result

    def _in_warm_shell(self, request: RunRequest, bound: float | None, scope: Scope) -> Result | None:
        """The command run in the shell the last call found, without looking its name up in the
        store again (most of a millisecond of a 2.6 ms call here); None when that shell cannot
        take it at once (it ended, or is busy ending), and `run` then goes the careful way."""
        warm = calls.warm_shell_run(self.name, request, bound, scope, self._warm)
        if warm is None:
            self._warm = None
            return None
        if self._line is None:
            self._line = calls.kept_line()
        result = calls.ask_warm(warm, self._line)
        self._warm = warm[0] if result is not None else None
        return result

    def close(self) -> Result:
        """End the shell and everything it started: its last result, with what was ended in `killed`."""
        if self._line is not None:
            self._line.close()
        return calls.close_shell(self.name)

    def __enter__(self) -> Shell:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        calls.close_if_open(self.close)


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


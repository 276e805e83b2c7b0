"""safe-run's Python API on the far side of a command prefix: a container, a pod, another host.

`Remote(["docker", "exec", "-i", "C"])` answers the calls of `safe_run.run`, `Shell` and
`Session` by running the command line there (`prefix + program + arguments`, JSON output) and
reading its one JSON object back into the same `Result`. The far side needs safe-run installed
and nothing else: no daemon, no open port; its sessions and shells live in its own store, so one
process can drive many containers at once, each with its own state.

The command text goes on the far side's stdin (`--command-file -`), which every prefix that
forwards stdin (`docker exec -i`, `kubectl exec -i`, `ssh`) passes through byte for byte; the
other words go in argv. ssh joins argv into one line for the remote user's shell, so with an
ssh-like prefix each of safe-run's arguments is quoted for a POSIX shell (`quote`, by default on
when the prefix starts with `ssh`).

As with the local API, what the command did is always a result; bad arguments raise `ValueError`
or `TypeError` and a session or shell that does not exist raises `SessionError`. A call that
could not be made across the boundary (the prefix failed or is missing, the far side answered
no JSON, or no answer came in time) raises `RemoteError` with what the prefix said on stderr.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from .. import calls
from ..calls import DEFAULT_MAX_OUTPUT, WARM_UP
from ..core.result import ExitStatus, Result, Status
from ..core.request import DEFAULT_IDLE_EXPIRE_S
from ..session import SessionError

__all__ = ["Remote", "RemoteError", "RemoteSession", "RemoteShell"]

# Time the far side may take beyond the wait a call asks for: the prefix connecting (an ssh
# handshake, a container exec), Python starting there, and a stopped command being cleaned up.
DEFAULT_MARGIN_S = 60.0
# How long a call with no limit of its own (no timeout, no yield_after) waits for its answer.
DEFAULT_LONGEST_S = 24 * 3600.0
# How much of the prefix's stderr an error quotes: the end, where the reason usually is.
STDERR_SHOWN = 2000
SSH_LIKE = ("ssh",)


class RemoteError(Exception):
    """The call could not be made across the boundary; nothing is known about the command."""

    def __init__(self, message: str, returncode: int | None = None, stderr: str = "") -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def _words(value: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(word, str) for word in value):
        raise TypeError(f"{what} must be a list of strings, not {value!r}")
    return tuple(value)


def _path(value: str | os.PathLike[str] | None, what: str) -> str | None:
    """A path on the far side: not checked here (it is not this machine's), only its type."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be a path or None, not {type(value).__name__}")
    return os.fspath(value)


def _optional_text(value: str | None, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{what} must be a string or None, not {type(value).__name__}")
    return value


def _number(value: float) -> str:
    return repr(float(value))


def _run_options(
    *, shell: str | None, cwd: str | None, env: Mapping[str, str], timeout: float | None,
    yield_after: float | None, load_rc: bool,
) -> list[str]:
    """The run verb's options for these arguments; no yield_after is --wait, as a local run."""
    args = ["--shell", shell] if shell is not None else []
    args += [] if load_rc else ["--no-rc"]
    args += ["--cwd", cwd] if cwd is not None else []
    for name, value in env.items():
        args += ["--env", f"{name}={value}"]
    args += ["--timeout", _number(timeout)] if timeout is not None else []
    args += ["--yield-after", _number(yield_after)] if yield_after is not None else ["--wait"]
    return args


def _bound(*waits: float | None) -> float | None:
    """The longest the far side may take before it answers by itself: the shortest wait given."""
    given = [wait for wait in waits if wait is not None]
    return min(given) if given else None


class Remote:
    """safe-run reached through `prefix`: `run`, `arun`, `Shell` and `Session` as in `safe_run`.

    `program` is how the far side starts safe-run (`["python3", "-m", "safe_run"]` works too).
    `quote` quotes each argument for the remote shell, as an ssh prefix needs (None: when the
    prefix's program is ssh); the program's words are left as written, so `~` or `$HOME` in them
    is expanded there. Each call waits for the far side's answer at most the wait it asks for
    plus `margin` seconds, and a call with no limit of its own at most `longest` seconds; past
    that the prefix is killed and `RemoteError` raised (the command may go on over there).

    The prefix runs in a session of its own, away from the caller's terminal: a prefix that would
    ask for a password there fails at once instead of waiting (give ssh a key, or BatchMode).
    Paths (`cwd`) and shell names are the far side's and are not checked here.
    """

    def __init__(
        self, prefix: Sequence[str], program: Sequence[str] = ("safe-run",), *, quote: bool | None = None,
        margin: float = DEFAULT_MARGIN_S, longest: float = DEFAULT_LONGEST_S,
    ) -> None:
        self.prefix = _words(prefix, "prefix")
        self.program = _words(program, "program")
        if not self.program:
            raise ValueError("program must name the far side's safe-run, such as ['safe-run']")
        ssh_like = bool(self.prefix) and os.path.basename(self.prefix[0]) in SSH_LIKE
        self.quote = ssh_like if quote is None else bool(quote)
        self.margin = calls.seconds(margin, "margin") or 0.0
        self.longest = calls.seconds(longest, "longest") or DEFAULT_LONGEST_S

    def __repr__(self) -> str:
        return f"Remote({list(self.prefix)!r}, {list(self.program)!r})"

    def run(
        self, command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    ) -> Result:
        """`safe_run.run` on the far side: a fresh shell there, to the end or to `yield_after`."""
        calls.check_output(max_output, strategy)
        limit, bound = calls.seconds(timeout, "timeout"), calls.seconds(yield_after, "yield_after")
        options = _run_options(
            shell=_optional_text(shell, "shell"), cwd=_path(cwd, "cwd"), env=calls.variables(env), timeout=limit,
            yield_after=bound, load_rc=bool(load_rc),
        )
        options += ["--max-output", str(max_output), "--strategy", strategy]
        return self.call(["run", *options], command=calls.command(command), wait=_bound(limit, bound))

    async def arun(
        self, command: str, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, timeout: float | None = None, yield_after: float | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT, strategy: str = "auto", load_rc: bool = True,
    ) -> Result:
        """`run` in a worker thread, so that an event loop (driving other boundaries too) goes on."""
        return await asyncio.to_thread(
            self.run, command, shell=shell, cwd=cwd, env=env, timeout=timeout, yield_after=yield_after,
            max_output=max_output, strategy=strategy, load_rc=load_rc,
        )

    def Shell(  # noqa: N802 -- named like the class it mirrors
        self, name: str | None = None, *, shell: str | None = None, cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None, load_rc: bool = True, idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
    ) -> RemoteShell:
        """A persistent shell on the far side, as `safe_run.Shell`."""
        return RemoteShell(self, name, shell=shell, cwd=cwd, env=env, load_rc=load_rc, idle_expire=idle_expire)

    def Session(self, session: str | Result) -> RemoteSession:  # noqa: N802 -- named like the class it mirrors
        """A far-side session by its id, or the session of a result (as `safe_run.Session.of`)."""
        if isinstance(session, Result):
            if session.session_id is None:
                raise ValueError(f"this result ({session.status.value}) has no session: its command is not running")
            return RemoteSession(self, session.session_id)
        return RemoteSession(self, session)

    def call(self, args: Sequence[str], *, command: str | None = None, wait: float | None = None) -> Result:
        """One command line call on the far side (`args` after the program, JSON asked for here)."""
        words = [args[0], "--format", "json", *args[1:]]
        words += [] if command is None else ["--command-file", "-"]
        quoted = [shlex.quote(word) for word in words] if self.quote else words
        argv = [*self.prefix, *self.program, *quoted]
        seconds = self.longest if wait is None else wait + self.margin
        returncode, stdout, stderr = self._exchange(argv, command, seconds)
        return _answer(self._describe(), returncode, stdout, stderr)

    def _describe(self) -> str:
        return shlex.join([*self.prefix, *self.program]) or "safe-run"

    def _exchange(self, argv: list[str], command: str | None, seconds: float) -> tuple[int, str, str]:
        """Run argv with the command (or nothing) on stdin; its status, stdout and stderr."""
        try:
            process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL if command is None else subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            raise RemoteError(f"{self._describe()}: cannot start {argv[0]!r}: {exc.strerror or exc}") from None
        data = None if command is None else command.encode("utf-8")
        try:
            out, err = process.communicate(data, timeout=seconds)
        except subprocess.TimeoutExpired:
            _kill(process)
            out, err = process.communicate()
            raise RemoteError(
                f"{self._describe()}: no answer within {seconds:g} s; the prefix was killed "
                "(the command may go on over there)", None, _tail(err),
            ) from None
        except BaseException:  # KeyboardInterrupt, a cancelled thread: leave no prefix behind
            _kill(process)
            process.wait()
            raise
        return process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


class RemoteShell:
    """`safe_run.Shell` on the far side: `--in NAME` there, its state kept from call to call."""

    def __init__(
        self, remote: Remote, name: str | None = None, *, shell: str | None = None,
        cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None, load_rc: bool = True,
        idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S,
    ) -> None:
        self.remote = remote
        self.name = calls.shell_name(name)
        self._shell = _optional_text(shell, "shell")
        self._cwd = _path(cwd, "cwd")
        self._env = calls.variables(env)
        self._load_rc = bool(load_rc)
        self._idle_expire = calls.seconds(idle_expire, "idle_expire")
        self._used = False

    def __repr__(self) -> str:
        return f"{self.remote!r}.Shell({self.name!r})"

    def run(
        self, command: str, *, timeout: float | None = None, yield_after: float | None = None,
        cwd: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None,
    ) -> Result:
        """As `Shell.run`: `cwd` and `env` apply to this command alone; `busy` while another runs."""
        text = calls.command(command)
        limit, bound = calls.seconds(timeout, "timeout"), calls.seconds(yield_after, "yield_after")
        directory, variables = _path(cwd, "cwd"), None if env is None else calls.variables(env)
        scoped = directory is not None or variables is not None
        if scoped and not self._used:
            self._call(WARM_UP, None, None, None, None)
        return self._call(text, limit, bound, directory, variables)

    def close(self) -> Result:
        """End the shell and everything it started: its last result, with what was ended in `killed`."""
        return self.remote.call(["close", "--", self.name], wait=0.0)

    def __enter__(self) -> RemoteShell:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        calls.close_if_open(self.close)

    def _call(
        self, command: str, timeout: float | None, yield_after: float | None, cwd: str | None,
        env: dict[str, str] | None,
    ) -> Result:
        """One command in the shell; before its first use, the shell's own cwd and env start it.

        The command line applies --cwd/--env to the shell when it starts and to the one command
        otherwise, so the shell's own are given only while it has not run anything yet.
        """
        if not self._used and cwd is None and env is None:
            cwd, env = self._cwd, self._env
        options = _run_options(
            shell=self._shell, cwd=cwd, env=env or {}, timeout=timeout, yield_after=yield_after,
            load_rc=self._load_rc,
        )
        options += ["--in", self.name, "--idle-expire", _number(self._idle_expire or 0)]
        result = self.remote.call(["run", *options], command=command, wait=_bound(timeout, yield_after))
        self._used = True
        return result


class RemoteSession:
    """`safe_run.Session` on the far side: poll, send to, or stop a command that outlived its call."""

    def __init__(self, remote: Remote, session_id: str) -> None:
        if not isinstance(session_id, str):
            raise TypeError(f"session_id must be a string, not {type(session_id).__name__}")
        self.remote = remote
        self.id = session_id

    def __repr__(self) -> str:
        return f"{self.remote!r}.Session({self.id!r})"

    def poll(self, wait: float = 0.0) -> Result:
        """The output since the last answer and where the command stands; waits up to `wait` s for its end."""
        seconds = calls.wait(wait, "wait")
        return self.remote.call(["poll", "--wait", _number(seconds), "--", self.id], wait=seconds)

    def send(
        self, text: str | None = None, keys: Iterable[str] = (), enter: bool = True, queue: bool = False,
        wait: float = 1.0,
    ) -> Result:
        """Type `text` (and Enter) and press `keys` (names as `safe-run send --key` takes them), then poll."""
        names = calls.key_names(keys)
        calls.keystrokes(text, names, enter)  # refused here as by the local API, before the far side is asked
        seconds = calls.wait(wait, "wait")
        args = ["send", "--wait", _number(seconds)]
        for name in names:
            args += ["--key", name]
        args += [] if enter else ["--no-enter"]
        args += ["--queue"] if queue else []
        args += ["--", self.id] + ([] if text is None else [text])
        return self.remote.call(args, wait=seconds)

    def stop(self) -> Result:
        """End the command and everything it started; its final result."""
        return self.remote.call(["stop", "--", self.id], wait=0.0)


def _answer(where: str, returncode: int, stdout: str, stderr: str) -> Result:
    """The far side's result; the exceptions the local API raises for the same refusals."""
    data = _json_object(stdout)
    if data is None:
        said = f"exit status {returncode}" if returncode >= 0 else f"killed by {_signal_name(-returncode)}"
        shown = f": {_tail(stderr).strip()}" if stderr.strip() else ""
        raise RemoteError(f"{where}: no safe-run result came back ({said}){shown}", returncode, _tail(stderr))
    try:
        result = Result.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise RemoteError(f"{where}: the answer is not a safe-run result ({exc})", returncode, _tail(stderr)) from None
    if result.status is Status.ERROR and returncode in (ExitStatus.NO_SESSION, ExitStatus.UNRESPONSIVE):
        raise SessionError(result.message or "no such session or shell", returncode)
    if result.status is Status.ERROR and returncode == ExitStatus.USAGE:
        raise ValueError(result.message or "the far side refused the arguments")
    return result


def _json_object(stdout: str) -> dict[str, object] | None:
    """The JSON object on stdout; also the last line that is one, after lines a login script printed."""
    candidates = [stdout] + [line for line in reversed(stdout.splitlines()) if line.startswith("{")]
    for text in candidates:
        try:
            data = json.loads(text)
        except ValueError:
            continue
        if isinstance(data, dict) and "status" in data:
            return data
    return None


def _tail(stderr: str | bytes | None) -> str:
    text = stderr.decode("utf-8", "replace") if isinstance(stderr, bytes) else stderr or ""
    return text[-STDERR_SHOWN:]


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The prefix and what it started on this side (a script, a child), by its own process group."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()

"""One run, start to finish: private directory, shell, loop, result.

`Run` owns the terminal and can be driven step by step from any process; `execute` is the plain
foreground use of it. All decisions are the tracker's; this module only moves bytes and time.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from . import shells
from .output import HeadTail
from .result import Result, ShellInfo, Status, error_result
from .sequences import SequenceParser
from .shells import bash, fish, zsh
from .terminal import Terminal, TerminalError
from .tracker import CommandTracker, Finish, Send

LAUNCHERS = {"bash": bash.launch, "zsh": zsh.launch, "fish": fish.launch}

# The emulated terminal, whatever the caller's own TERM is (agents and CI have dumb or none).
TERM = "xterm-256color"
DEFAULT_SIZE = (50, 200)
# Variables describing the caller's terminal, wrong inside ours.
CALLER_TERMINAL_VARS = ("COLUMNS", "LINES", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM_SESSION_ID")


@dataclass(frozen=True)
class RunRequest:
    """Everything the caller decided about one run."""

    command: str
    shell: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    load_rc: bool = True
    max_output: int = 1024 * 1024
    activation_timeout: float = 10.0
    size: tuple[int, int] = DEFAULT_SIZE
    log: BinaryIO | None = None


class RunFailed(Exception):
    """safe-run itself could not carry out the run (not the command failing)."""


@contextmanager
def private_workdir() -> Iterator[Path]:
    """A directory only this user can read, gone when the run is over, whatever happens."""
    path = Path(tempfile.mkdtemp(prefix="safe-run-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


class Run:
    """A started run: the shell in its terminal and the tracker following the command."""

    def __init__(self, request: RunRequest, workdir: Path, clock: Callable[[], float]) -> None:
        self.request = request
        self._clock = clock
        self.started_at = clock()
        shell_path = shells.resolve_shell(request.shell, dict(os.environ))
        name = shells.shell_name(shell_path)
        self.shell = ShellInfo(name=name, path=shell_path)
        launcher = LAUNCHERS.get(name)
        if launcher is None:
            raise RunFailed(f"{name} has no shell integration; use bash, zsh or fish")
        nonce = secrets.token_hex(16)
        command_file = workdir / "command"
        command_file.write_text(request.command, encoding="utf-8")
        cwd = os.path.abspath(request.cwd or os.getcwd())
        setup = shells.RunSetup(shell_path, workdir, nonce, command_file, cwd, request.load_rc, request.env)
        launch = launcher(setup)
        env = _shell_environment(request.env, launch.env)
        self._parser = SequenceParser()
        capture = HeadTail(request.max_output // 2, request.max_output - request.max_output // 2)
        self.tracker = CommandTracker(nonce, launch.run_line, capture, request.activation_timeout)
        rows, cols = request.size
        self.terminal = Terminal.spawn(launch.argv, env, cwd, rows, cols)
        self.tracker.start(clock())
        self.finish: Finish | None = None

    def step(self, timeout: float | None) -> Finish | None:
        """Wait at most `timeout` seconds for something to happen and act on it."""
        deadline = self.tracker.next_deadline()
        wait = _earliest(timeout, None if deadline is None else max(0.0, deadline - self._clock()))
        ready = self.terminal.wait(wait)
        if ready.readable:
            self._consume(self.terminal.read())
        if ready.exited and self.finish is None:
            for chunk in self.terminal.drain():
                self._consume(chunk)
            if self.finish is None:
                self._consume_tail()
                self.finish = self.tracker.shell_exited(self.terminal.exit_status())
        if self.finish is None:
            self._act(self.tracker.tick(self._clock()))
        return self.finish

    def result(self) -> Result:
        finish = self.finish
        assert finish is not None, "result() before the run finished"
        duration = self._clock() - self.started_at
        if finish.error is not None:
            return error_result(self.request.command, finish.error, self.shell)
        capture = self.tracker.capture
        return Result(
            status=Status.COMPLETED,
            exit_code=finish.exit_code,
            strategy=finish.strategy,
            completion_reason=finish.reason,
            command=self.request.command,
            shell=self.shell,
            output=capture.text(),
            output_truncated=capture.dropped > 0,
            output_dropped_bytes=capture.dropped,
            duration_s=duration,
        )

    def close(self) -> None:
        self.terminal.close()

    def _consume(self, chunk: bytes) -> None:
        if not chunk:
            return
        if self.request.log is not None:
            self.request.log.write(chunk)
        for item in self._parser.feed(chunk):
            self._act(self.tracker.feed(item))

    def _consume_tail(self) -> None:
        for item in self._parser.flush():
            self._act(self.tracker.feed(item))

    def _act(self, actions: list[Send | Finish]) -> None:
        for action in actions:
            if isinstance(action, Send):
                self.terminal.write(action.data)
            elif self.finish is None:
                self.finish = action


def execute(request: RunRequest, clock: Callable[[], float] = time.monotonic) -> Result:
    """Run one command in the foreground and return its result; never raises for the command's sake."""
    with private_workdir() as workdir:
        try:
            run = Run(request, workdir, clock)
        except (shells.ShellNotFound, TerminalError, RunFailed) as exc:
            return error_result(request.command, str(exc))
        try:
            while run.step(None) is None:
                pass
        finally:
            run.close()
        return run.result()


def _shell_environment(requested: dict[str, str], launch_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CALLER_TERMINAL_VARS}
    env["TERM"] = TERM
    env.update(requested)
    env.update(launch_env)
    return env


def _earliest(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)

"""A run's shell, started: its kind, its files, its terminal, and the kernel's view of it.

A run starts its shell when it begins (`start_shell`). A shell can also be started ahead of a
run that is likely to come, with the user's rc files loaded by the time it does (`KeptShell`):
the holder a warm process forks ahead of its next call keeps one (`processes.holder_ahead`). A run takes a
kept shell only when it would have started exactly that shell itself: the same program, options,
directory and environment (the `StartKey`), with none of the rc files it loads changed since, and
the shell still alive. Whatever the shell printed meanwhile waits unread in its terminal, so the
run reads it as if it had just come. A kept shell serves one run and is never used again, so
nothing of an earlier command (history, jobs, variables) can reach another.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .. import shells
from .cleanup import NEVER_TYPED, Reaper
from ..core.evidence import MARKER_VAR
from .kernel import KernelObserver, ObserverLike, current_umask
from ..core.request import RunRequest
from ..shells.kind import ShellKind
from ..shells.registry import kind_of
from .spawn import GIVEN_STDIN_FD
from .terminal import Terminal, TerminalLike
from .workdir import HeldDirectory

# The emulated terminal, whatever the caller's own TERM is (agents and CI have dumb or none).
TERM = "xterm-256color"
# Variables describing the caller's terminal, wrong inside ours.
CALLER_TERMINAL_VARS = ("COLUMNS", "LINES", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "TERM_SESSION_ID")
# Nobody is there to page, edit or type a password: commands get non-interactive settings
# unless the caller keeps their own (--no-batch-env). --env values win over these.
BATCH_ENV = {
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GH_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "GIT_EDITOR": ":",
    "GIT_TERMINAL_PROMPT": "0",
    "DEBIAN_FRONTEND": "noninteractive",
}


class RunFailed(Exception):
    """safe-run itself could not carry out the run (not the command failing)."""


@dataclass(frozen=True)
class StartKey:
    """What makes one start of a shell differ from another: two runs with equal keys would start
    the same process, in the same place, with the same variables."""

    shell_path: str
    strategy: str
    load_rc: bool
    cwd: str
    env: tuple[tuple[str, str], ...]  # the shell's variables, but for those of the run's own files
    size: tuple[int, int]
    given_stdin: bool  # the caller gives the command a standard input of its own (`--stdin`)
    umask: int


def start_key(request: RunRequest, shell_path: str) -> StartKey:
    """The key of the shell `request` starts (this process's variables and directory included)."""
    return StartKey(
        shell_path=shell_path,
        strategy=request.strategy,
        load_rc=request.load_rc,
        cwd=os.path.abspath(request.cwd or os.getcwd()),
        env=tuple(sorted(shell_environment(_requested(request), {}).items())),
        size=request.size,
        given_stdin=request.stdin is not None,
        umask=current_umask(),
    )


@dataclass
class ShellStart:
    """A started shell, as a run drives it."""

    kind: ShellKind
    setup: shells.RunSetup
    launch: shells.Launch
    terminal: TerminalLike
    kernel: ObserverLike


def start_shell(
    request: RunRequest,
    kind: ShellKind,
    setup: shells.RunSetup,
    start_terminal: Callable[..., TerminalLike] = Terminal.spawn,
    observe_with: Callable[..., ObserverLike] = KernelObserver,
    clock: Callable[[], float] = time.monotonic,
) -> ShellStart:
    """Write the shell's files into `setup.workdir` and start it on a new terminal, watched on
    the run's `clock`."""
    launch = _launch(kind, setup, request.strategy)
    rows, cols = request.size
    marker = os.urandom(8).hex()  # finds what the command started in other sessions
    env = {**shell_environment(setup.env, launch.env), MARKER_VAR: marker}
    terminal = start_terminal(launch.argv, env, setup.cwd, rows, cols, stdin=request.stdin)
    kernel = observe_with(terminal.fd, terminal.pid, marker=marker, inputs=_targets(request.stdin), clock=clock)
    return ShellStart(kind, setup, launch, terminal, kernel)


def run_setup(request: RunRequest, shell_path: str, workdir: Path) -> shells.RunSetup:
    """The files and settings of one start of the shell at `shell_path`, in `workdir`."""
    cwd = os.path.abspath(request.cwd or os.getcwd())
    return shells.RunSetup(shell_path, workdir, os.urandom(16).hex(), workdir / "command", cwd, request.load_rc,
                           _requested(request))


class KeptShell:
    """A shell started ahead of the run that will take it (see the module), with a private
    directory of its own that goes when it is closed, or with the run that took it."""

    def __init__(
        self, start: ShellStart, key: StartKey, directory: HeldDirectory, rc: list[tuple[str, int, int, int] | None],
    ) -> None:
        assert isinstance(start.terminal, Terminal), "a real terminal: its descriptors are kept (`descriptors`)"
        self.start = start
        self.key = key
        self._directory = directory
        self._terminal = start.terminal
        self._rc = rc  # the rc files as they were before the shell read them

    @classmethod
    def ahead_of(cls, request: RunRequest) -> KeptShell | None:
        """A shell for a run of `request` from this process's directory and variables; None where
        none can be started (no such shell, a directory gone, no room for a process): a run that
        comes then starts its own."""
        try:
            shell_path = shells.resolve_shell(request.shell, dict(os.environ))
            kind = kind_of(shell_path)
            if kind.launch is None:
                return None  # a shell without integration starts in no time anyway
            key, rc = start_key(request, shell_path), _stamps(kind, request.load_rc)
            directory = HeldDirectory.make()
        except Exception:  # noqa: BLE001
            return None
        try:
            start = start_shell(request, kind, run_setup(request, shell_path, directory.path))
        except Exception:  # noqa: BLE001
            directory.remove()
            return None
        return cls(start, key, directory, rc)

    def taken_for(self, key: StartKey) -> ShellStart | None:
        """The shell, for a run whose shell has `key`, when it is this one and still as started;
        otherwise None, and the caller closes it (after its answer: see `close`)."""
        if key == self.key and not self._terminal.exited() and _stamps(self.start.kind, self.key.load_rc) == self._rc:
            return self.start
        return None

    def descriptors(self) -> list[int]:
        """What it holds open, for a process that closes all but what it names."""
        return [*self._terminal.descriptors(), self._directory.lock]

    def close(self, taken: bool = False) -> None:
        """Its directory removed, once its run is over (`taken`: the run ended the shell and what it
        left). A shell no run took is hung up once its own work is done (bounded: a theme's first
        jobs, cut short, leave their files), then whatever its rc files started that outlived it
        is ended, as a run ends what it leaves. Hung up first, as a closed window: a prompt's
        worker ended while its shell lives is started again, and the hang-up would then cut that
        one's first job short."""
        ended = taken or self._directory.lock < 0
        self._directory.remove()  # first: whoever waits for this process may not wait long
        if not ended:
            reaper = Reaper(self._terminal, self.start.kernel, typed=NEVER_TYPED)
            reaper.let_idle_shell_work_end()
            self._terminal.close()
            reaper.kill_session()


def _stamps(kind: ShellKind, load_rc: bool) -> list[tuple[str, int, int, int] | None]:
    """What each start-up file the shell loads is now: an edited, replaced or new one differs."""
    if not load_rc:
        return []
    environ = dict(os.environ)
    home = environ.get("HOME") or os.path.expanduser("~")
    stamps: list[tuple[str, int, int, int] | None] = []
    for path in kind.doctor.rc_candidates(environ, home, environ.get("ZDOTDIR")):
        try:
            info = os.stat(path)
            stamps.append((path, info.st_ino, info.st_size, info.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return stamps


def _requested(request: RunRequest) -> dict[str, str]:
    """The variables the caller gives the command: the batch settings, then its own --env."""
    return {**BATCH_ENV, **request.env} if request.batch_env else dict(request.env)


def shell_environment(requested: dict[str, str], launch_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in CALLER_TERMINAL_VARS}
    env["TERM"] = TERM
    env.update(requested)
    env.update(launch_env)
    return env


def _targets(fd: int | None) -> frozenset[str]:
    """What the kernel shows a process's descriptor `fd` of this process as (a pipe's `pipe:[N]`)."""
    if fd is None:
        return frozenset()
    try:
        return frozenset({os.readlink(f"/proc/self/fd/{fd}")})
    except OSError:
        return frozenset()


def _launch(kind: ShellKind, setup: shells.RunSetup, strategy: str) -> shells.Launch:
    if strategy == "none":
        return kind.plain_launch(setup)
    if kind.launch is not None:
        return kind.launch(setup)
    if strategy in ("rich", "basic"):
        raise RunFailed(f"--strategy {strategy} needs shell integration, which {kind.name} does not have")
    return kind.plain_launch(setup)


def command_text(request: RunRequest, kind: ShellKind) -> str:
    """What the shell runs: the command, reading the caller's standard input where it gives one."""
    return request.command if request.stdin is None else kind.with_stdin(request.command, GIVEN_STDIN_FD)

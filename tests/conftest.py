"""Shared helpers: run the real `safe-run` in a subprocess with a private HOME and TMPDIR.

Each test gets its own HOME (so the machine's rc files neither slow nor steer it) and its own
TMPDIR (so a test can see that nothing was left behind). stdin is closed and TERM is dumb, as
for an agent or a CI step. JSON runs wait for the end (SAFE_RUN_YIELD_AFTER=never): the default
bound of agent runs has tests of its own, which set the variable themselves.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import fastcli
from throwaway_user import Unavailable, User, Users
from safe_run.cli.verbs import RUN, VERBS

SHELLS = ("bash", "zsh", "fish")
# What the tests start inherits this unless a test says otherwise: no warm process outlives a test.
os.environ["SAFE_RUN_WARM"] = "0"
# Unset by --real-cli (see fastcli.py): calls fork a pre-imported command line.
FAST_CLI = True


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-cli", action="store_true",
        help="start every call of safe-run's command line as a new Python, as the installed program starts "
             "(see tests/fastcli.py for what runs otherwise)",
    )


def pytest_configure(config: pytest.Config) -> None:
    global FAST_CLI
    FAST_CLI = fastcli.ENABLED = not config.getoption("--real-cli")
    # Each xdist process would otherwise rewrite every test module's asserts again when
    # PYTHONDONTWRITEBYTECODE is set (seconds of CPU per process): the suite keeps pytest's
    # rewrite cache, and Python's own, whatever that variable says.
    sys.dont_write_bytecode = False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest tests first: xdist deals the first tests out in turn, so each process starts
    one of them at once, rather than one process taking a minute-long test near the end while
    the others are done."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_unconfigure(config: pytest.Config) -> None:
    fastcli.stop()


@pytest.fixture(scope="session", autouse=True)
def no_warm_process_left(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    _end_warm_processes_of(tmp_path_factory.getbasetemp())


def _end_warm_processes_of(base: Path) -> None:
    """A warm process a test started and left (its lock file below `base`) is ended and named:
    none may outlive the run, and the test that left it has a bug."""
    for pid in (int(name) for name in os.listdir("/proc") if name.isdigit()):
        if b"safe-run warm" not in cmdline(pid):
            continue
        left = [t for t in opened(pid) if t.startswith(str(base)) and t.endswith(".lock")]
        if left:
            os.kill(pid, signal.SIGTERM)
            print(f"\nended a warm process a test left behind: {left[0]}", file=sys.stderr)


@dataclass
class Outcome:
    returncode: int
    stdout: str
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)


@dataclass
class SafeRun:
    home: Path
    tmpdir: Path
    shell: str | None = None
    # The test's own XDG_RUNTIME_DIR: its sessions and shells never meet the machine's (/run/user/UID).
    runtime: Path | None = None

    @property
    def store(self) -> Path:
        """Where this test's sessions, named shells and warm processes live."""
        if self.runtime is not None:
            return self.runtime / "safe-run"
        return self.home / ".local" / "state" / "safe-run" / "sessions"

    def __call__(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
                 timeout: float = 60) -> Outcome:
        # A run's option: a verb that takes none (`close`, `poll`) would refuse it, and do nothing.
        verb = bool(args) and args[0] in VERBS and args[0] != RUN
        shell_args = ["--shell", self.shell] if self.shell and not verb else []
        environment = self.environment(env)
        if FAST_CLI and fastcli.usable(environment):
            code, out, err = fastcli.run([*shell_args, *args], stdin, environment, timeout)
            return Outcome(code, out.decode("utf-8"), err.decode("utf-8"))
        proc = subprocess.run(
            [sys.executable, "-m", "safe_run", *shell_args, *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            env=environment,
            timeout=timeout,
        )
        return Outcome(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))

    def environment(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.home),
            "TMPDIR": str(self.tmpdir),
            **({"XDG_RUNTIME_DIR": str(self.runtime)} if self.runtime is not None else {}),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "SHELL": "/bin/sh",
            # JSON runs follow the command to its end unless a test asks for the default bound.
            "SAFE_RUN_YIELD_AFTER": "never",
            # Each call in its own process: warm processes have tests of their own (test_warm.py).
            "SAFE_RUN_WARM": "0",
        }
        env.update(extra or {})
        return env

    def leftovers(self) -> list[str]:
        return sorted(p.name for p in self.tmpdir.iterdir())


def program_on_path(directory: Path, name: str, script: str) -> str:
    """A PATH whose first entry holds an executable shell script called `name`."""
    bindir = directory / "bin"
    bindir.mkdir(exist_ok=True)
    program = bindir / name
    program.write_text(f"#!/bin/sh\n{script}\n")
    program.chmod(0o755)
    return f"{bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"


def release(fifo: Path, bound: float = 20.0) -> None:
    """Let a command waiting on `fifo` (`cat FIFO`, `read -r _ < FIFO`) go on, once it has opened it:
    a test's command that must still run while the test acts waits on this, not on a `sleep`."""
    end = writer_once_read(fifo, bound)
    os.write(end, b"go\n")
    os.close(end)


def writer_once_read(fifo: Path, bound: float = 20.0) -> int:
    """The FIFO's end to write to, once a command has opened it to read: the command runs by then,
    and goes on once a line is written there."""
    deadline = time.monotonic() + bound
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: the command has not opened it yet
            assert time.monotonic() < deadline, "the command never opened its FIFO"
            time.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether a process of that pid is there (a zombie counts: it is not collected yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def zombie(pid: int) -> bool:
    """Whether `pid` has ended and waits to be collected."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def children_of(pid: int) -> list[int]:
    """The processes `pid` started that still run, as /proc says now."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(child) for child in children if not zombie(int(child))]


def shells_of_holder_ahead(ahead: int) -> list[int]:
    """The shell a holder forked ahead started: its keeper's worker's, where the holder keeps its
    shell in a keeper (`processes.keeper`), a worker being a safe-run process."""
    found = []
    for child in children_of(ahead):
        found.extend(children_of(child) if _is_safe_run(child) else [child])
    return found


def workers_of(holder: int) -> list[int]:
    """The worker that serves for a holder that keeps its shell (`processes.keeper`), if one does now."""
    return [pid for pid in children_of(holder) if _is_safe_run(pid, b"safe-run worker")]


def _is_safe_run(pid: int, title: bytes = b"safe-run") -> bool:
    return cmdline(pid).startswith(title)


def cmdline(pid: int) -> bytes:
    """The process's command line as /proc has it (empty once it has ended)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def opened(pid: int) -> list[str]:
    """What the process has open, each descriptor read by itself: one closed meanwhile (the very
    listing of a process's own descriptors) leaves out only that one."""
    paths = []
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return []
    for fd in fds:
        try:
            paths.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return paths


def shell_path(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


@pytest.fixture
def ordinary_user() -> Iterator[User]:
    """An ordinary user made for the test (as root), removed with everything of theirs after it;
    the test is skipped where none can be made."""
    try:
        users = Users()
    except Unavailable as why:
        pytest.skip(str(why))
    try:
        yield users.make()
    finally:
        users.remove()


@pytest.fixture
def safe_run(tmp_path: Path) -> SafeRun:
    home = tmp_path / "home"
    tmpdir = tmp_path / "tmp"
    # fish generates completions from man pages in the background on its first start in a new
    # HOME; a HOME that has seen fish before does not, and that is the usual case.
    (home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
    tmpdir.mkdir()
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    return SafeRun(home=home, tmpdir=tmpdir, runtime=runtime)


@pytest.fixture(params=SHELLS)
def sr(request: pytest.FixtureRequest, safe_run: SafeRun) -> SafeRun:
    """safe-run bound to each installed shell in turn."""
    safe_run.shell = shell_path(request.param)
    return safe_run

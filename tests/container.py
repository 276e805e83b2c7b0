"""A stand-in for a container, built from kernel namespaces, and a `docker` that execs into it.

There is no container engine on a test machine, but what safe-run meets in a container is the
kernel's: a PID namespace whose PID 1 is the container's program (here `sleep`, which never
collects zombies, like a container started without an init), and calls that arrive through
`docker exec` with no terminal, in a new process whose parent is outside the namespace. The
namespace shares the host's file system, so the test's `safe-run` and its private HOME and
XDG_RUNTIME_DIR are the same inside. Killing the namespace's PID 1 kills everything in it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

START_TIMEOUT_S = 10.0
NSENTER_FLAGS = ("-U", "-p", "-n", "-m", "--preserve-credentials")


@dataclass(frozen=True)
class Process:
    """One process as seen from inside the namespace."""

    pid: int
    ppid: int
    state: str
    args: str

    @property
    def zombie(self) -> bool:
        return self.state.startswith("Z")


class StandInContainer:
    """A PID, network and mount namespace whose PID 1 is `sleep infinity`, named `name`."""

    def __init__(self, directory: Path, name: str = "c1") -> None:
        self.name = name
        self.directory = directory
        self.bindir = directory / "bin"
        self._unshare: subprocess.Popen[bytes] | None = None
        self.init_pid = 0  # PID 1 of the namespace, as the host numbers it

    def start(self) -> None:
        """Start the namespace, or skip the test with the kernel's reason."""
        for tool in ("unshare", "nsenter", "ps"):
            if shutil.which(tool) is None:
                pytest.skip(f"{tool} is not installed")
        self._unshare = subprocess.Popen(
            ["unshare", "--user", "--map-root-user", "--pid", "--net", "--mount", "--fork", "--mount-proc",
             "sleep", "infinity"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self.init_pid = self._wait_for_init()
        probe = subprocess.run(self.enter(["true"]), capture_output=True, timeout=START_TIMEOUT_S)
        if probe.returncode != 0:
            self.stop()
            pytest.skip(f"cannot enter the namespace: {probe.stderr.decode(errors='replace').strip()}")
        self._write_docker()

    def _wait_for_init(self) -> int:
        assert self._unshare is not None
        children = Path(f"/proc/{self._unshare.pid}/task/{self._unshare.pid}/children")
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._unshare.poll() is not None:
                reason = self._unshare.stderr.read().decode(errors="replace").strip() if self._unshare.stderr else ""
                pytest.skip(f"user namespaces are refused here: {reason or 'unshare failed'}")
            try:
                pids = children.read_text().split()
            except OSError:
                pids = []
            if pids:
                return int(pids[0])
            time.sleep(0.01)
        self.stop()
        pytest.skip("the namespace did not start in time")

    def enter(self, argv: list[str]) -> list[str]:
        """The command line that runs `argv` inside the namespace."""
        return ["nsenter", "-t", str(self.init_pid), *NSENTER_FLAGS, "--", *argv]

    def _write_docker(self) -> None:
        """`docker exec [-i] NAME CMD...` runs CMD inside; any other use is an error, as a typo would be."""
        self.bindir.mkdir(parents=True, exist_ok=True)
        docker = self.bindir / "docker"
        enter = " ".join(shlex.quote(part) for part in self.enter([]))
        docker.write_text(
            "#!/bin/sh\n"
            '[ "$1" = exec ] || { echo "docker: only exec is here" >&2; exit 125; }\n'
            "shift\n"
            '[ "$1" = -i ] && shift\n'
            f'[ "$1" = {shlex.quote(self.name)} ] || {{ echo "docker: no such container: $1" >&2; exit 1; }}\n'
            "shift\n"
            f'exec {enter} "$@"\n'
        )
        docker.chmod(0o755)

    def path(self) -> str:
        """A PATH whose `docker` is this stand-in's."""
        return f"{self.bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"

    def processes(self) -> list[Process]:
        """Every process in the namespace but PID 1 and the `ps` that lists them."""
        listing = subprocess.run(
            self.enter(["ps", "-eo", "pid=,ppid=,stat=,args="]), capture_output=True, text=True, timeout=30,
        )
        assert listing.returncode == 0, listing.stderr
        found = []
        for line in listing.stdout.splitlines():
            pid, ppid, state, *args = line.split(None, 3)
            found.append(Process(int(pid), int(ppid), state, args[0] if args else ""))
        return [p for p in found if p.pid != 1 and not p.args.startswith("ps -eo")]

    def settled(self, done: Callable[[list[Process]], bool], seconds: float = 10.0) -> list[Process]:
        """The processes once `done` holds for them, or when `seconds` have passed."""
        deadline = time.monotonic() + seconds
        while True:
            seen = self.processes()
            if done(seen) or time.monotonic() >= deadline:
                return seen
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill PID 1: the kernel kills every other process of the namespace with it."""
        if self.init_pid:
            try:
                os.kill(self.init_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._unshare is not None:
            if self._unshare.poll() is None and not self.init_pid:
                self._unshare.kill()
            self._unshare.wait(timeout=30)
            if self._unshare.stderr is not None:
                self._unshare.stderr.close()


"""The pseudo-terminal and the shell inside it: spawn, wait, read, write, hang up.

This is the only place that touches the PTY. It decides nothing: the tracker does. It waits on the
master side and on a pidfd of the shell together, so a shell that exits is noticed at once even
when a background child still holds the terminal open (the master sees no EOF until every holder
of the slave side is gone).
"""

from __future__ import annotations

import errno
import os
import select
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pexpect

READ_SIZE = 65536
# How long a hung-up shell gets to exit (and hang up its own jobs) before it is killed.
HANGUP_GRACE_S = 1.0
# How long a write waits for a terminal whose input is full (a command that does not read).
WRITE_TIMEOUT_S = 1.0


class TerminalError(Exception):
    """The PTY or the shell could not be started."""


@dataclass(frozen=True)
class Readiness:
    readable: bool
    exited: bool


class Terminal:
    """One shell in one PTY, driven by the run loop."""

    def __init__(self, child: pexpect.spawn) -> None:
        self._child = child
        self.fd: int = child.child_fd
        self.pid: int = child.pid
        self._pidfd = _open_pidfd(self.pid)
        self._status: int | None = None

    @classmethod
    def spawn(cls, argv: list[str], env: dict[str, str], cwd: str, rows: int, cols: int) -> Terminal:
        try:
            child = pexpect.spawn(
                argv[0], argv[1:], env=env, cwd=cwd, dimensions=(rows, cols), encoding=None, echo=True
            )
        except (OSError, pexpect.ExceptionPexpect) as exc:
            raise TerminalError(f"cannot start {argv[0]}: {exc}") from exc
        # pexpect would otherwise wait 50 ms before every send and 100 ms in close(); this module
        # does its own waiting, on the pidfd.
        child.delaybeforesend = None
        child.delayafterclose = child.ptyproc.delayafterclose = 0.0
        child.delayafterterminate = child.ptyproc.delayafterterminate = 0.0
        return cls(child)

    def wait(self, timeout: float | None, wake_fds: Sequence[int] = ()) -> Readiness:
        """Block until output arrives, the shell exits, one of `wake_fds` is readable or `timeout` passes."""
        watched = [fd for fd in (self.fd, self._pidfd, *wake_fds) if fd is not None]
        if self._pidfd is None:
            timeout = 0.05 if timeout is None else min(timeout, 0.05)
        ready, _, _ = select.select(watched, [], [], timeout)
        exited = (self._pidfd in ready) if self._pidfd is not None else not self._child.isalive()
        return Readiness(readable=self.fd in ready, exited=exited)

    def read(self) -> bytes:
        """One read of what is there; b"" once every holder of the slave side is gone."""
        try:
            return os.read(self.fd, READ_SIZE)
        except OSError as exc:
            if exc.errno == errno.EIO:
                return b""
            raise

    def drain(self) -> list[bytes]:
        """What is still buffered, without waiting for more (used once the shell has exited)."""
        chunks = []
        while select.select([self.fd], [], [], 0)[0]:
            chunk = self.read()
            if not chunk:
                break
            chunks.append(chunk)
        return chunks

    def write(self, data: bytes, timeout: float = WRITE_TIMEOUT_S) -> int:
        """Type `data`, waiting at most `timeout` seconds for room; how many bytes went in.

        A command that does not read its terminal fills it up, and then nothing more goes in:
        the caller decides what to do with the rest (0 means do not wait at all). Once every
        holder of the slave side is gone, nothing goes in either.
        """
        deadline = time.monotonic() + timeout
        written = 0
        os.set_blocking(self.fd, False)
        try:
            while written < len(data):
                try:
                    written += os.write(self.fd, data[written:])
                    continue
                except BlockingIOError:
                    pass
                except OSError as exc:
                    if exc.errno == errno.EIO:
                        break
                    raise
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([], [self.fd], [], remaining)[1]:
                    break
        finally:
            os.set_blocking(self.fd, True)
        return written

    def exit_status(self) -> int:
        """The shell's status the way a shell reports it: 128+N when killed by signal N."""
        if self._status is None:
            self._child.wait()
            signum = self._child.signalstatus
            self._status = 128 + signum if signum is not None else int(self._child.exitstatus or 0)
        return self._status

    def close(self, hang_up: bool = True) -> None:
        """Hang up like a closed terminal window, then make sure the shell is gone.

        Without `hang_up` the shell is killed outright, so that it cannot pass the hang-up on
        to background jobs the caller asked to keep.
        """
        if self._status is None and self._child.isalive():
            self._child.kill(signal.SIGHUP if hang_up else signal.SIGKILL)
            if not self._wait_exit(HANGUP_GRACE_S):
                self._child.kill(signal.SIGKILL)
            self.exit_status()
        self._child.close(force=True)
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def _wait_exit(self, timeout: float) -> bool:
        if self._pidfd is None:
            return not self._child.isalive()
        ready, _, _ = select.select([self._pidfd], [], [], timeout)
        return bool(ready)


def _open_pidfd(pid: int) -> int | None:
    """A pidfd turns "the shell exited" into something select can wait on (Linux 5.3+)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None

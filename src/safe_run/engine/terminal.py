"""The pseudo-terminal and the shell inside it: spawn, wait, read, write, hang up.

This is the only place that touches the PTY. It decides nothing: the tracker does. It waits on the
master side and on a pidfd of the shell together, so a shell that exits is noticed at once even
when a background child still holds the terminal open (the master sees no EOF until every holder
of the slave side is gone).
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from . import polling
from .exits import collected_status
from .spawn import SpawnError, spawn

READ_SIZE = 65536
# The kernel hands a terminal's output over in pieces of at most 4 KiB. A piece at least this big
# says output floods in, and then the pieces right behind it are taken in the same read, up to
# BATCH_BYTES: the loop's work per piece, not the kernel, is what a flood would otherwise cost.
FLOOD_PIECE = 2048
BATCH_BYTES = 65536
# How long a hung-up shell gets to exit (and hang up its own jobs) before it is killed.
HANGUP_GRACE_S = 1.0
# How long a write waits for a terminal whose input is full (a command that does not read).
WRITE_TIMEOUT_S = 1.0
# How long a shell another process collects (its keeper, see `exits`) may take to be collected
# once it has ended; its status is UNKNOWN_STATUS if it never is (nobody collects it).
COLLECTED_WAIT_S = 5.0
UNKNOWN_STATUS = 255 << 8
# Linux's ioctl (4.13 and later) that opens a terminal's other side from its master.
TIOCGPTPEER = 0x5441


class TerminalError(Exception):
    """The PTY or the shell could not be started."""


@dataclass(frozen=True)
class Readiness:
    readable: bool
    exited: bool
    # The other descriptors the wait watched (`wake_fds`) that were readable: what woke it besides
    # the terminal, so that nothing after it needs to ask the kernel again.
    woken: frozenset[int] = frozenset()


class TerminalLike(Protocol):
    """What a run needs of its shell's terminal: `Terminal`, or a stand-in that plays a shell."""

    @property
    def fd(self) -> int: ...

    @property
    def pid(self) -> int: ...

    def wait(
        self, timeout: float | None, wake_fds: Sequence[int] = (), typing: bool = False, wake_writers: Sequence[int] = (),
    ) -> Readiness: ...

    def read(self) -> bytes: ...

    def drain(self, at_most: int | None = None) -> list[bytes]: ...

    def write(self, data: bytes, timeout: float = WRITE_TIMEOUT_S) -> int: ...

    def exited(self) -> bool: ...

    def foreground(self) -> int | None: ...

    def exit_status(self) -> int: ...

    def killed_by_signal(self) -> bool: ...

    def end_shell(self) -> None: ...

    def close(self, hang_up: bool = True, meanwhile: Callable[[], None] | None = None) -> None: ...


class Terminal:
    """One shell in one PTY, driven by the run loop."""

    def __init__(self, pid: int, fd: int) -> None:
        self.fd: int = fd
        self.pid: int = pid
        self._pidfd = _open_pidfd(pid)
        self._status: int | None = None
        self._signalled = False
        self._closed = False

    @property
    def pidfd(self) -> int | None:
        """The shell's pidfd, where the kernel gives one."""
        return self._pidfd

    def descriptors(self) -> list[int]:
        """What this terminal holds open, for a process that closes all but what it names."""
        return [fd for fd in (self.fd, self._pidfd) if fd is not None]

    @classmethod
    def spawn(
        cls, argv: list[str], env: dict[str, str], cwd: str, rows: int, cols: int, stdin: int | None = None,
    ) -> Terminal:
        """The shell as a terminal window would start it (see `spawn`): its own session, a pristine
        state; with `stdin`, the descriptor its command reads as its standard input (`--stdin`)."""
        try:
            started = spawn(argv, env, cwd, rows, cols, stdin)
        except SpawnError as exc:
            raise TerminalError(str(exc)) from exc
        return cls(started.pid, started.master_fd)

    def wait(
        self, timeout: float | None, wake_fds: Sequence[int] = (), typing: bool = False, wake_writers: Sequence[int] = (),
    ) -> Readiness:
        """Block until output arrives, the shell exits, one of `wake_fds` is readable or one of
        `wake_writers` writable (an answer waits to go out to a slow reader), `timeout` passes, or
        (`typing`: text waits to go in) the terminal takes input again."""
        watched = [fd for fd in (self.fd, self._pidfd, *wake_fds) if fd is not None]
        if self._pidfd is None:
            timeout = 0.05 if timeout is None else min(timeout, 0.05)
        ready, _ = polling.wait(watched, timeout, [*([self.fd] if typing else []), *wake_writers])
        exited = (self._pidfd in ready) if self._pidfd is not None else self._reaped()
        return Readiness(readable=self.fd in ready, exited=exited, woken=frozenset(ready.intersection(wake_fds)))

    def read(self) -> bytes:
        """What is there (see FLOOD_PIECE); b"" once every holder of the slave side is gone."""
        first = self._read_once()
        if len(first) < FLOOD_PIECE:
            return first
        pieces, size = [first], len(first)
        while size < BATCH_BYTES and polling.readable([self.fd], 0):
            piece = self._read_once()
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
        return b"".join(pieces)

    def _read_once(self) -> bytes:
        try:
            return os.read(self.fd, READ_SIZE)
        except OSError as exc:
            if exc.errno == errno.EIO:
                return b""
            raise

    def drain(self, at_most: int | None = None) -> list[bytes]:
        """What is already buffered, without waiting for more: all of it once the shell has exited,
        at most `at_most` reads while it runs (a command that prints without pause always has more)."""
        chunks: list[bytes] = []
        while (at_most is None or len(chunks) < at_most) and polling.readable([self.fd], 0):
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
                if remaining <= 0 or not polling.wait((), remaining, [self.fd])[1]:
                    break
        finally:
            os.set_blocking(self.fd, True)
        return written

    def exited(self) -> bool:
        """Whether the shell has exited (never waits)."""
        return self._status is not None or self._reaped()

    def exit_status(self) -> int:
        """The shell's status the way a shell reports it: 128+N when killed by signal N."""
        if self._status is None:
            try:
                _, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # its keeper's child (see `exits`)
                status = self._collected_elsewhere()
            self._record(status)
        assert self._status is not None
        return self._status

    def killed_by_signal(self) -> bool:
        """Whether a signal ended the shell (its status is then 128+N, as for `exit 128+N`)."""
        self.exit_status()
        return self._signalled

    def end_shell(self) -> None:
        """Hang up the shell (SIGKILL if it stays) and collect it; the terminal stays open to read."""
        if not self._reaped():
            self._signal(signal.SIGHUP)
            if not self._wait_exit(HANGUP_GRACE_S):
                self._signal(signal.SIGKILL)
            self.exit_status()

    def foreground(self) -> int | None:
        """The terminal's foreground process group, as the kernel says now; None when it cannot
        say (the shell's session is gone)."""
        try:
            return os.tcgetpgrp(self.fd)
        except OSError:
            return None

    def close(self, hang_up: bool = True, meanwhile: Callable[[], None] | None = None) -> None:
        """Hang up like a closed terminal window, then make sure the shell is gone.

        Without `hang_up` the shell is killed outright, so that it cannot pass the hang-up on
        to background jobs the caller asked to keep. `meanwhile`: work that needs nothing of the
        shell, done while it goes (its traps and its end take a millisecond); not done when the
        shell had gone already.
        """
        if self._closed:
            return
        ending = not self._reaped()
        if ending:
            self._signal(signal.SIGHUP if hang_up else signal.SIGKILL)
        try:
            if ending and meanwhile is not None:
                meanwhile()
        finally:
            if ending:
                if not self._wait_exit(HANGUP_GRACE_S):
                    self._signal(signal.SIGKILL)
                self.exit_status()
            self._closed = True
            os.close(self.fd)
            if self._pidfd is not None:
                os.close(self._pidfd)
                self._pidfd = None

    def _signal(self, signum: int) -> None:
        """Signal the shell through its pidfd where there is one, so a reused pid is never hit."""
        try:
            if self._pidfd is not None:
                signal.pidfd_send_signal(self._pidfd, signum)
            else:
                os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def _reaped(self) -> bool:
        """Whether the shell has exited, collecting its status if it just did."""
        if self._status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # its keeper's child (see `exits`)
                collected = collected_status(self._pidfd)
                pid, status = (0, 0) if collected is None else (self.pid, collected)
            if pid != 0:
                self._record(status)
        return self._status is not None

    def _collected_elsewhere(self) -> int:
        """The status of a shell that is not this process's child, once its parent collected it."""
        deadline = time.monotonic() + COLLECTED_WAIT_S
        self._wait_exit(COLLECTED_WAIT_S)
        while (status := collected_status(self._pidfd)) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return UNKNOWN_STATUS if status is None else status

    def _record(self, status: int) -> None:
        code = os.waitstatus_to_exitcode(status)
        self._signalled = code < 0
        self._status = 128 - code if code < 0 else code

    def _wait_exit(self, timeout: float) -> bool:
        if self._pidfd is None:
            deadline = time.monotonic() + timeout
            while not self._reaped() and time.monotonic() < deadline:
                time.sleep(0.01)
            return self._reaped()
        return bool(polling.readable([self._pidfd], timeout))


def _open_pidfd(pid: int) -> int | None:
    """A pidfd turns "the shell exited" into something poll can wait on (Linux 5.3+)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def unread_input(master: int) -> int | None:
    """How many typed bytes wait in the terminal of `master` for a program to read them; None when
    the kernel cannot say. The other side is opened only for the question: held open, it would
    keep the master from seeing the shell hang up."""
    try:
        peer = fcntl.ioctl(master, TIOCGPTPEER, os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    try:
        return polling.unread(peer)
    except OSError:
        return None
    finally:
        os.close(peer)

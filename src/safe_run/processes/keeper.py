"""Runs in a named shell's holder process: it keeps the shell, and a child it forks serves it.

CPython writes to every object it touches (reference counts), so a forked holder that has run
commands holds some 5 MB of pages of its own even while its shell waits, where a fork that ran
nothing holds about 1 MB. So the holder process keeps, and its child, the worker, serves: the
keeper forks the worker at once and from then on runs nothing but this module's loop. Once the
shell has waited HIBERNATE_AFTER_S with nobody asking or attached, the worker hands the keeper its
state (pickled, `session.hibernation`) and its descriptors, and ends. The keeper then watches the
terminal, the listening socket, the shell's end, its own stop signals, the session's reach and
the shell's idle limit, and at the first of them forks a fresh worker, which picks the state up
where the last one left it.

The keeper's pid is the holder's, the one `sessions` lists and `stop` signals: a stop signal goes
on to its worker, or to the worker it wakes for it. It is a child subreaper, so the shell (once
its first worker is gone) and whatever its commands leave come to it; it collects each as it
ends, and a worker learns its shell's status from the kernel (`engine.exits`). Where the kernel
cannot tell, a holder serves in one process, as before. A worker ends with its keeper (SIGKILL):
a killed keeper's shell ends with its terminal, as a killed holder's does.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import NoReturn

from ..engine import polling
from ..engine.exits import kept_by_kernel
from ..engine.interrupts import STOP_SIGNALS
from ..process_title import name_holder
from ..session.adoption import adopt_orphans, ended_children, set_parent_death_signal
from ..session.hibernation import Watch
from ..session.holder_base import REACH_CHECK_S
from ..session.store import HOLDER_LOG, Session
from .forking import (
    close_all_but, frame_length, framed, receive_with_descriptors, send_with_descriptors, standard_descriptors_to, unframed,
)

# What a hand-over may pass: a holder holds a dozen descriptors.
MOST_DESCRIPTORS = 250
# How long each side of a hand-over waits for the other's next word.
HAND_OVER_WAIT_S = 10.0
ACCEPTED = b"k"
SERVING = b"S"


def possible() -> bool:
    """Whether a holder can keep its shell in a keeper: its worker must learn the shell's status."""
    return sys.platform.startswith("linux") and kept_by_kernel()


class Link:
    """A worker's end of its keeper's channel, and the keeper's own descriptors, which the worker
    keeps open (never reuses) so that what it hands over can take the same numbers there."""

    def __init__(self, channel: socket.socket, keepers: set[int], keeper_pid: int) -> None:
        self.channel = channel
        self._keepers = keepers
        self.keeper_pid = keeper_pid  # the holder's pid, as callers know it
        self.open = True  # until a hand-over fails: the keeper will take nothing more then

    def descriptors(self) -> list[int]:
        """What this worker keeps open for its keeper, whatever else it closes."""
        return [self.channel.fileno(), *self._keepers]

    def serving(self, session: Path) -> None:
        """Tell the keeper, forked ahead with this worker, which session they now hold (its
        directory; see `processes.keeper`)."""
        self.channel.sendall(b"%s%s\n" % (SERVING, os.fsencode(session)))

    def hand_over(self, state: bytes, watch: Watch, own: set[int], waiting: Callable[[], bool]) -> bool:
        """Give the keeper `state` and every descriptor but `own` (this worker's alone: its signal
        pipe), and end once it has them; False, with nothing given, when a stop signal waits to be
        acted on (`waiting`) or the keeper did not take them.

        Stop signals are held from the check on: one the keeper passed on before it took the
        state over is told back to it, for the worker it wakes."""
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        if waiting() or set(signal.sigpending()) & set(STOP_SIGNALS) or not self._handed(state, watch, own):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            return False
        try:
            waiting_signals = sorted(set(signal.sigpending()) & set(STOP_SIGNALS))
            self.channel.sendall(b"%s\n" % ",".join(str(s) for s in waiting_signals).encode())
        finally:
            os._exit(0)

    def _handed(self, state: bytes, watch: Watch, own: set[int]) -> bool:
        found = _open_descriptors()
        numbers = sorted(set(found) - own - self._keepers - {0, 1, 2, self.channel.fileno()})
        header = json.dumps({"fds": numbers, "inheritable": [found[fd] for fd in numbers]}).encode()
        self.channel.settimeout(HAND_OVER_WAIT_S)
        try:
            send_with_descriptors(self.channel, framed(framed(header) + framed(watch.encoded()) + state), numbers)
            if self.channel.recv(1) == ACCEPTED:
                return True
        except OSError:
            pass
        self.open = False
        return False


# What a worker runs: the first serves from the start, each later one picks up a state.
FirstWorker = Callable[[Link], int]
LaterWorker = Callable[[bytes, Link, list[int]], int]


@dataclass
class Held:
    """A state handed over, and its descriptors (in the keeper, at their own numbers)."""

    state: bytes
    watch: Watch
    fds: list[int]


def keep(first: FirstWorker, later: LaterWorker) -> int:
    """Be this holder's keeper: fork the worker that serves from the start (`first`), keep the
    shell whenever it is handed over, and wake a worker (`later`) for what comes; the exit status
    of the last worker, once one ends without handing over."""
    adopt_orphans()
    return Keeper(later).run(first)


class Keeper:
    """The loop of a holder's keeper (see the module)."""

    def __init__(self, later: LaterWorker) -> None:
        self._later = later
        self._wake_read, self._wake_write = os.pipe()
        for fd in (self._wake_read, self._wake_write):
            os.set_blocking(fd, False)
        self._channel: socket.socket | None = None  # to the worker, until it has handed over or ended
        self._worker: int | None = None
        self._status = 0
        self._held: Held | None = None
        self._signals: list[int] = []  # stop signals for the next worker
        self._reach_checked = time.monotonic()

    def run(self, first: FirstWorker) -> int:
        signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)  # first: no signal goes unread
        for signum in (*STOP_SIGNALS, signal.SIGCHLD):
            signal.signal(signum, _noted)
        self._fork(first)
        assert self._channel is not None
        close_all_but({0, 1, 2, self._channel.fileno(), self._wake_read, self._wake_write})
        while self._worker is not None or self._held is not None:
            if self._worker is not None:
                self._while_served()
            else:
                self._while_kept()
        return self._status

    # ---- a worker serves ----------------------------------------------------------------------

    def _while_served(self) -> None:
        channel = self._channel
        ready = polling.readable([self._wake_read, *([] if channel is None else [channel.fileno()])], None)
        if channel is not None and channel.fileno() in ready:
            self._heard(channel)
        if self._wake_read in ready:
            self._route_signals()

    def _heard(self, channel: socket.socket) -> None:
        """The worker says which session it serves (see `wait_to_hold`), or hands its state
        over; or its channel closed."""
        try:
            first = channel.recv(1, socket.MSG_PEEK)
        except OSError:
            first = b""
        if first == SERVING:
            try:
                self._serving(Path(os.fsdecode(_line(channel)[1:])))
            except OSError:  # a line cut short: the worker is gone, and its end is heard next
                pass
        elif first:
            self._take_over(channel)
        else:
            self._channel = None
            channel.close()

    def _serving(self, session: Path) -> None:
        """A keeper forked ahead with its worker is now a session's holder (`session`: its
        directory): it outlives the call that forked it, in a session of its own, keeps nothing of
        its caller's, and says whose holder it is."""
        set_parent_death_signal(0)
        try:
            os.setsid()
        except OSError:
            pass
        standard_descriptors_to(session / HOLDER_LOG)
        name_holder(session.name)

    def _take_over(self, channel: socket.socket) -> None:
        """The worker hands its state over: take it and its descriptors, say so, and hear the stop
        signals it was sent meanwhile. The channel is done with either way."""
        self._channel = None
        try:
            message, fds, _ = receive_with_descriptors(channel, frame_length, MOST_DESCRIPTORS, HAND_OVER_WAIT_S)
            header, rest = _split(unframed(message))
            watch, state = _split(rest)
            spec = json.loads(header)
            _place(fds, spec["fds"], spec["inheritable"])
            held = Held(state, Watch.decoded(watch), spec["fds"])
            channel.sendall(ACCEPTED)
            self._held = held
            told = _line(channel)
        except (ValueError, OSError):
            return  # it ended without handing over, and serves on or is gone
        finally:
            channel.close()
        self._signals.extend(int(s) for s in told.split(b",") if s)

    def _collect(self) -> None:
        """Collect every child that ended: the worker, the shell, what the commands left."""
        for pid, status in ended_children():
            if pid == self._worker:
                self._worker = None
                self._status = os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1

    # ---- the shell is kept --------------------------------------------------------------------

    def _while_kept(self) -> None:
        held = self._held
        assert held is not None
        watch = held.watch
        if not self._signals:
            now = time.monotonic()
            wait = REACH_CHECK_S if watch.wake_at is None else max(0.0, min(REACH_CHECK_S, watch.wake_at - now))
            ready = polling.readable([watch.master, watch.listener, watch.shell, self._wake_read], wait)
            if self._wake_read in ready:
                self._route_signals()
            if not (ready - {self._wake_read}) and not self._signals and not self._due(watch):
                return
        self._wake(held)

    def _due(self, watch: Watch) -> bool:
        """The idle limit has come, or callers may no longer reach the shell: a worker decides."""
        now = time.monotonic()
        if watch.wake_at is not None and now >= watch.wake_at:
            return True
        if now - self._reach_checked < REACH_CHECK_S:
            return False
        self._reach_checked = now
        path = Path(watch.session)
        return not Session(path.name, path).reachable(watch.identity)

    def _wake(self, held: Held) -> None:
        self._held = None
        signals, self._signals = self._signals, []
        self._fork(lambda link: self._later(held.state, link, signals))
        for fd in held.fds:
            os.close(fd)

    # ---- both ---------------------------------------------------------------------------------

    def _fork(self, work: Callable[[Link], int]) -> None:
        """A worker doing `work`, its stop signals held until it has its own handlers."""
        keeper = os.getpid()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.settimeout(HAND_OVER_WAIT_S)  # what the worker says comes whole, or not at all
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            pid = os.fork()
            if pid == 0:
                self._become_worker(keeper, work, Link(theirs, {ours.fileno(), self._wake_read, self._wake_write}, keeper))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            theirs.close()
        self._worker, self._channel = pid, ours

    def _become_worker(self, keeper: int, work: Callable[[Link], int], link: Link) -> NoReturn:
        status = 1
        try:
            signal.set_wakeup_fd(-1)
            for signum in (*STOP_SIGNALS, signal.SIGCHLD):
                signal.signal(signum, signal.SIG_DFL)
            set_parent_death_signal(signal.SIGKILL)
            if os.getppid() == keeper:
                status = work(link)
        except BaseException:  # nothing may return into the keeper's code
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(status)

    def _route_signals(self) -> None:
        """Collect what ended; pass a stop signal on to the worker that serves, or keep it for the
        worker woken next while the shell is held here."""
        for signum in self._signalled():
            if signum == signal.SIGCHLD:
                self._collect()
            elif self._held is None and self._worker is not None:
                _send(self._worker, signum)
            else:
                self._signals.append(signum)

    def _signalled(self) -> list[int]:
        try:
            return list(os.read(self._wake_read, 256))
        except BlockingIOError:
            return []


def _noted(signum: int, frame: FrameType | None) -> None:
    """Nothing: the signal's byte on the wake-up descriptor is what the keeper reads."""


def _send(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _place(received: list[int], numbers: list[int], inheritable: list[bool]) -> None:
    """Put each received descriptor at the number it had in the worker (none of which is the
    keeper's own: a worker never reuses those)."""
    if len(received) != len(numbers):
        for fd in received:
            os.close(fd)
        raise ValueError("descriptors lost on the way")
    above = max([*received, *numbers, 2]) + 1
    moved = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, above) for fd in received]
    for fd in received:
        os.close(fd)
    for fd, number, flag in zip(moved, numbers, inheritable):
        os.dup2(fd, number, inheritable=flag)
        os.close(fd)


def _split(data: bytes) -> tuple[bytes, bytes]:
    """The first framed part of `data`, and the rest."""
    length = frame_length(data)
    if length is None:
        raise ValueError("not a framed message")
    return unframed(data[:length]), data[length:]


def _line(channel: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        piece = channel.recv(64)
        if not piece:
            break
        data += piece
    return data.strip()


def _open_descriptors() -> dict[int, bool]:
    """This process's descriptors, each with whether an exec'd program would inherit it (the one
    the listing itself opened is gone by then)."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.get_inheritable(int(name))
        except OSError:
            pass
    return found

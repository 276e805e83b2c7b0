"""A named shell's worker hands its shell to its keeper (`processes.keeper`, which says why):
the worker's side of the hand-over, and the holder as bytes, for the next worker to pick up.

Everything a holder holds between commands pickles but its sockets and open files, whose
descriptors the keeper keeps at the numbers they had: those are written as their numbers, and
made again around the same descriptors, once each however often they are referred to.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import signal
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..engine.interrupts import STOP_SIGNALS
from ..processes.forking import framed, send_with_descriptors

# How long a named shell waits with nobody asking before its worker hands it to its keeper; a
# worker the keeper woke serves at least this long too, so that a wake the worker finds nothing
# to do for costs one fork in this time at most.
HIBERNATE_AFTER_S = 10.0
# How long each side of a hand-over waits for the other's next word.
HAND_OVER_WAIT_S = 10.0
ACCEPTED = b"k"
SERVING = b"S"


@dataclass(frozen=True)
class Watch:
    """What a keeper watches for the shell handed to it, by the worker's descriptor numbers."""

    master: int  # the shell's terminal
    listener: int  # the session's socket
    shell: int  # the shell's pidfd
    session: str  # the session's directory, which must stay the one it was (`identity`)
    identity: tuple[int, int]
    wake_at: float | None  # when the shell's idle limit ends it (time.monotonic)

    def encoded(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decoded(cls, data: bytes) -> Watch:
        fields = json.loads(data)
        return cls(**{**fields, "identity": tuple(fields["identity"])})


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


def frozen(state: object) -> bytes:
    """`state` as bytes, its sockets and files by their descriptors."""
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(state)
    return buffer.getvalue()


def thawed(data: bytes) -> Any:
    """What `frozen` was given, in a process that has the same descriptors at the same numbers."""
    return _Unpickler(io.BytesIO(data)).load()


class _Pickler(pickle.Pickler):
    def persistent_id(self, obj: Any) -> tuple[object, ...] | None:  # noqa: ANN401 - pickle's own signature
        if isinstance(obj, socket.socket):
            return ("socket", obj.fileno(), int(obj.family), int(obj.type))
        if isinstance(obj, io.FileIO):
            return ("file", obj.fileno(), obj.mode)
        if isinstance(obj, io.IOBase):
            raise pickle.PicklingError(f"a {type(obj).__name__} does not go over to the next worker")
        return None


class _Unpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file)
        self._made: dict[tuple[object, ...], object] = {}

    def persistent_load(self, pid: Any) -> object:  # noqa: ANN401 - pickle's own signature
        key = tuple(pid)
        if key not in self._made:
            self._made[key] = _remade(key)
        return self._made[key]


def _remade(key: tuple[object, ...]) -> object:
    kind, fd = key[0], key[1]
    assert isinstance(fd, int)
    if kind == "socket":
        family, kind_of_socket = key[2], key[3]
        assert isinstance(family, int) and isinstance(kind_of_socket, int)
        if fd < 0:  # closed before the hand-over
            closed = socket.socket(family, kind_of_socket)
            closed.close()
            return closed
        return socket.socket(family, kind_of_socket, fileno=fd)
    mode = key[2]
    assert isinstance(mode, str)
    return os.fdopen(fd, mode, buffering=0, closefd=True)

"""A named shell's worker hands its shell to its keeper (`processes.keeper`, which says why):
when, what the keeper watches, and the holder as bytes, for the next worker to pick up.

Everything a holder holds between commands pickles but its sockets and open files, whose
descriptors the keeper keeps at the numbers they had: those are written as their numbers, and
made again around the same descriptors, once each however often they are referred to.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

# How long a named shell waits with nobody asking before its worker hands it to its keeper; a
# worker the keeper woke serves at least this long too, so that a wake the worker finds nothing
# to do for costs one fork in this time at most.
HIBERNATE_AFTER_S = 10.0


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


class KeeperLink(Protocol):
    """A worker's way to its keeper, as a named shell's holder sees it (`processes.keeper.Link`)."""

    keeper_pid: int  # the holder's pid, as callers know it
    open: bool  # until a hand-over fails: the keeper will take nothing more then

    def hand_over(self, state: bytes, watch: Watch, own: set[int], waiting: Callable[[], bool]) -> bool: ...


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

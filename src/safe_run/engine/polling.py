"""Waiting on descriptors: poll(2), never select(2).

select() takes no descriptor numbered 1024 or more, and a host with many connections (an agent's
MCP host, a server using the library) has such numbers in use: there `safe_run.run("echo hi")`
failed with "filedescriptor out of range in select()". Every wait of safe-run goes through here.
"""

from __future__ import annotations

import fcntl
import os
import select
import struct
import termios
from collections.abc import Collection

_IN = select.POLLIN | select.POLLPRI
_OUT = select.POLLOUT
# The end of a descriptor (hang-up, an error, closed) is news to a reader and to a writer alike:
# the read or write that follows reports it.
_END = select.POLLHUP | select.POLLERR | select.POLLNVAL


def wait(
    readers: Collection[int], timeout: float | None, writers: Collection[int] = ()
) -> tuple[set[int], set[int]]:
    """Those of `readers` that can be read and those of `writers` that can be written, once one of
    them can or `timeout` seconds have passed (None: no limit; 0: look without waiting)."""
    wanted: dict[int, int] = {}
    for fd in readers:
        wanted[fd] = wanted.get(fd, 0) | _IN
    for fd in writers:
        wanted[fd] = wanted.get(fd, 0) | _OUT
    poller = select.poll()
    for fd, mask in wanted.items():
        poller.register(fd, mask)
    events = poller.poll(None if timeout is None else max(0.0, timeout) * 1000)
    readable = {fd for fd, got in events if wanted[fd] & _IN and got & (_IN | _END)}
    writable = {fd for fd, got in events if wanted[fd] & _OUT and got & (_OUT | _END)}
    return readable, writable


def readable(fds: Collection[int], timeout: float | None) -> set[int]:
    """Those of `fds` that can be read, once one can or `timeout` seconds have passed."""
    return wait(fds, timeout)[0]


def unread(fd: int) -> int:
    """How many bytes wait on `fd` (a pipe, a terminal) for its reader; OSError when the kernel
    cannot say."""
    return int(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, bytes(4)))[0])


def drain(fd: int) -> None:
    """Read a non-blocking wake-up pipe empty (a signal's byte, a stop request), so that the next
    wait sleeps until something new comes."""
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass

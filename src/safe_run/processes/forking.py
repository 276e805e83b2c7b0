"""Runs in whichever process forks a child ahead of its work (a warm process, a spare child, a fork
server, the command line) and in that child: the plumbing of forks and descriptors they share.

A child forked ahead waits on its end of a socket pair for what to do, and gets it there with the
descriptors it needs passed alongside (SCM_RIGHTS); it dies with the process that forked it until
it takes on a life of its own; and a process that serves another keeps none of its caller's
descriptors but those it is given.
"""

from __future__ import annotations

import array
import fcntl
import os
import signal
import socket
import struct
from collections.abc import Callable, Sequence
from pathlib import Path

from ..session.adoption import end_child, set_parent_death_signal

# How long a process forked ahead and let go gets to end before it is killed.
ABANDON_S = 1.0


def fork_with_channel(
    child: Callable[[socket.socket], None], private: Sequence[socket.socket] = (),
) -> tuple[int, socket.socket] | None:
    """A child running `child` with its end of a socket pair (it never returns into the caller's
    code), and the caller's end; None when no process can be made. `private`: the caller's own
    connections, which the child closes first."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None
    if pid == 0:
        ours.close()
        for conn in private:
            conn.close()
        try:
            child(theirs)
        finally:
            os._exit(1)
    theirs.close()
    return pid, ours


def let_go(child: tuple[int, socket.socket], within: float = ABANDON_S) -> None:
    """Let a child forked ahead (`fork_with_channel`) go unused: it ends once its end of the
    channel closes, and is collected here (killed if it has not ended `within` seconds), so that
    no zombie is left."""
    pid, channel = child
    channel.close()
    end_child(pid, within)


def die_with(parent: int, signum: int = signal.SIGKILL) -> bool:
    """Be sent `signum` when `parent` ends (killed, by default), as a child forked ahead is, until
    it has a life of its own; False when `parent` was already gone (this process then has nobody
    to work for)."""
    set_parent_death_signal(signum)
    return os.getppid() == parent


def framed(data: bytes) -> bytes:
    """`data` behind its length, for `receive_with_descriptors` to know where it ends."""
    return b"%d\n%s" % (len(data), data)


def frame_length(head: bytes) -> int | None:
    """The length of a whole `framed` message from its first bytes; None until its prefix is there."""
    size, newline, _ = head.partition(b"\n")
    if not newline:
        if len(head) > 12 or not head.isdigit():
            raise ValueError("not a framed message")
        return None
    if not size.isdigit():
        raise ValueError("not a framed message")
    return len(size) + 1 + int(size)


def unframed(message: bytes) -> bytes:
    """The data of a whole `framed` message."""
    return message.partition(b"\n")[2]


def send_with_descriptors(channel: socket.socket, data: bytes, fds: list[int]) -> None:
    """`data` to a child forked ahead, the descriptors `fds` passed with its first bytes.

    Nothing more is sent once all of it went: the child may have read it and closed its end by
    then, and even an empty send would find the channel broken (a hand-over that worked, taken
    for one that failed)."""
    sent = channel.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    if sent < len(data):
        channel.sendall(data[sent:])


def receive_with_descriptors(
    channel: socket.socket, length: Callable[[bytes], int | None], most: int, timeout: float | None = None,
) -> tuple[bytes, list[int], bytes]:
    """A message sent as `send_with_descriptors` sends it, whose `length` its first bytes tell;
    the descriptors passed with it (close-on-exec), and the bytes that followed it. ValueError
    when none came whole (the channel closed first: its sender went away)."""
    channel.settimeout(timeout)
    data, ancillary, _, _ = channel.recvmsg(1 << 16, socket.CMSG_SPACE(most * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % 4
            fds.extend(struct.unpack(f"{usable // 4}i", payload[:usable]))
    try:
        for fd in fds:
            fcntl.fcntl(fd, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
        message, rest = _whole(channel, data, length)
        return message, fds, rest
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _whole(channel: socket.socket, data: bytes, length: Callable[[bytes], int | None]) -> tuple[bytes, bytes]:
    total = length(data)
    while total is None or len(data) < total:
        chunk = channel.recv(1 << 20)
        if not chunk:
            raise ValueError("the message ended early")
        data += chunk
        total = total if total is not None else length(data)
    return data[:total], data[total:]


def standard_descriptors_to(log: Path) -> None:
    """Standard input and output from and to nowhere, errors to `log`: a holder keeps nothing of
    its caller's (a pipe its caller's caller reads to its end, a terminal)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    errors = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target, source in ((0, devnull), (1, devnull), (2, errors)):
        os.dup2(source, target)
    for fd in (devnull, errors):
        if fd > 2:
            os.close(fd)


def close_all_but(kept: set[int]) -> None:
    """Close every descriptor of this process but `kept`: nothing of its caller's (pipes, a
    terminal) stays open in a process that outlives it."""
    try:
        opened = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        opened = list(range(3, 256))
    for fd in opened:
        if fd not in kept:
            try:
                os.close(fd)
            except OSError:
                pass

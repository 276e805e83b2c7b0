"""Handing a message and descriptors to a child forked ahead, over a real socket pair."""

from __future__ import annotations

import os
import socket
from typing import Any

from safe_run.processes.forking import frame_length, framed, receive_with_descriptors, send_with_descriptors


class ReadAtOnce(socket.socket):
    """The sender's end of a channel whose reader takes each message as soon as it is sent and
    closes its end, before the sender's next step: as a child forked ahead does while its sender
    waits for the CPU on a busy machine."""

    def __init__(self, reader: socket.socket, fileno: int) -> None:
        super().__init__(fileno=fileno)
        self.reader = reader
        self.received: tuple[bytes, list[int], bytes] | None = None

    def sendmsg(self, *args: Any, **kwargs: Any) -> int:
        sent = super().sendmsg(*args, **kwargs)
        self.received = receive_with_descriptors(self.reader, frame_length, 2)
        self.reader.close()
        return sent


def test_a_message_taken_whole_and_its_channel_closed_at_once_was_handed_over() -> None:
    ours, theirs = socket.socketpair()
    sender = ReadAtOnce(theirs, ours.detach())
    read_end, write_end = os.pipe()
    try:
        send_with_descriptors(sender, framed(b"the job"), [read_end])
        assert sender.received is not None
        message, fds, rest = sender.received
        assert (message, rest, len(fds)) == (framed(b"the job"), b"", 1)
        os.write(write_end, b"x")
        assert os.read(fds[0], 1) == b"x"  # the descriptor passed is the pipe's
        os.close(fds[0])
    finally:
        sender.close()
        for fd in (read_end, write_end):
            os.close(fd)

"""Writing for a display without ever failing the run."""

from __future__ import annotations

import os
import stat
import time
from typing import TextIO

from ..engine import polling

# How long a summary for a person's terminal waits for the reader of a pipe on stdout to take the
# last of the output: `safe-run -- CMD | cat` shows the output's end before the summary, as the
# end of a pipeline comes before the next prompt.
READ_BY_S = 0.05
READ_POLL_S = 0.0005


class Out:
    """stdout for a display: a reader that went away (`| head`) marks it broken instead of raising."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write_bytes(self, data: bytes) -> None:
        if self.broken or not data:
            return
        try:
            self.stream.flush()
            self.stream.buffer.write(data)
            self.stream.buffer.flush()
        except BrokenPipeError:
            self._gone()
        except OSError:
            pass  # a write that cannot be done is dropped; the result still says everything

    def write_text(self, text: str) -> None:
        if self.broken or not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self._gone()
        except (OSError, UnicodeEncodeError):
            pass

    def wait_until_read(self, within: float = READ_BY_S) -> None:
        """Return once a pipe's reader has taken all that was written to it, or after `within`
        seconds: what it shows (`| cat`) then comes before what safe-run writes on its terminal
        next. Nothing to wait for when stdout is not a pipe, or its reader went away."""
        if self.broken:
            return
        try:
            fd = self.stream.fileno()
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return
            deadline = time.monotonic() + within
            while polling.unread(fd) and time.monotonic() < deadline:
                time.sleep(READ_POLL_S)
        except (OSError, ValueError):
            pass

    def _gone(self) -> None:
        """Nobody reads any more: send whatever else comes to /dev/null, so exiting is quiet too."""
        self.broken = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass


def write_err(text: str, stream: TextIO) -> None:
    """A line for the person on stderr; one that cannot be written is dropped."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError, UnicodeEncodeError):
        pass

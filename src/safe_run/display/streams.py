"""Writing for a display without ever failing the run."""

from __future__ import annotations

import os
from typing import TextIO


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

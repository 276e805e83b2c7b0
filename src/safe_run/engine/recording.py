"""A session's terminal, recorded in asciinema's asciicast v2 format.

One JSON header line (version 2, the terminal's size, when it began), then one JSON array per
event: seconds since the start, "o" for what the terminal showed, "i" for what was typed into it.
`asciinema play FILE` plays it. What is recorded is what the terminal showed without its OSC
sequences: the shell integration's marks carry the run's nonce, and the command, running as the
same user, could read the file while it runs. Typed text is recorded only while the terminal echoes
it: a password typed at a prompt with echo off is in no recording.

A recording is a convenience beside the result, like the --log transcript: it stops, without
failing anything, at its size limit or at the first write that fails.
"""

from __future__ import annotations

import codecs
import json
import os
import time
from collections.abc import Callable
from json.encoder import encode_basestring
from pathlib import Path

FILE_NAME = "recording.cast"


class Recording:
    """Appends events to one asciicast file until `limit` bytes, or a write fails."""

    def __init__(
        self, path: Path, columns: int, rows: int, limit: int, clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self._clock = clock
        self._limit = limit
        self._started = clock()
        self._unfinished = {"o": b"", "i": b""}  # the start of a character the next event ends
        self._fd: int | None = None
        self.written = 0
        header = {"version": 2, "width": columns, "height": rows, "timestamp": int(wall()), "env": {"TERM": "xterm-256color"}}
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        self._write(json.dumps(header))

    def output(self, data: bytes) -> None:
        self._event("o", data)

    def input(self, data: bytes) -> None:
        self._event("i", data)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _event(self, kind: str, data: bytes) -> None:
        """One line, written at once: a shell's every prompt and echo is an event, several per
        command, so the line is put together here rather than by `json.dumps` of a list (a few
        times as slow), and the text decoded by the codec's own function rather than through an
        incremental decoder's wrapper."""
        if self._fd is None or not data:
            return
        joined = self._unfinished[kind] + data
        text, used = codecs.utf_8_decode(joined, "replace", False)
        self._unfinished[kind] = joined[used:]
        if text:
            self._write(f'[{round(self._clock() - self._started, 6)!r}, "{kind}", {encode_basestring(text)}]')

    def _write(self, line: str) -> None:
        data = (line + "\n").encode("utf-8")
        if self._fd is None:
            return
        if self.written + len(data) > self._limit:
            self.close()  # full: what is recorded so far stays a well-formed recording
            return
        try:
            os.write(self._fd, data)
            self.written += len(data)
        except OSError:
            self.close()

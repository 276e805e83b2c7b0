"""The command's bytes as cleaned text, in pieces that end at line ends where they can."""

from __future__ import annotations

import re

from ..core.escapes import unfinished_length
from ..core.output import Chunks, clean

# Output events and cleaned output are written at most this often, so a command that prints a
# gigabyte produces at most ~10 writes a second, each at most --max-output bytes (the first and
# last halves of what came in that tenth of a second, the middle counted as dropped).
OUTPUT_INTERVAL = 0.1
# A line without its newline yet (a prompt, a progress bar) waits this long for the rest of it.
PARTIAL_HOLD = 1.0
# ... and is let through when it grows this long anyway.
PARTIAL_LIMIT = 64 * 1024
# What takes the cursor back along its line to draw over it: a carriage return, a backspace, a
# move to a column or to the left, an erase of the line, a saved position restored (spinners:
# npm's draws each frame after `ESC[1G`).
_OVERWRITES = re.compile(rb"[\r\x08]|\x1b\[[0-9;]*[GDK`]|\x1b[78]")


class Pieces:
    """Cleaned output in pieces that end at line ends where they can.

    Cleaning a piece on its own cannot see a carriage return's effect on the piece before it, so
    a line still being written waits for its newline. A plain partial line (a prompt, "Building...
    ") is let through after `hold` seconds; one that overwrites itself (`\r`, backspace, a move
    back along the line: a progress bar, a spinner) waits for its newline, up to `PARTIAL_LIMIT` bytes, so that only its last frame
    is written, as in the JSON output. When a line that was let through is overwritten after all,
    what it became is written whole on a line of its own: a pipe cannot take back what it carried.
    """

    def __init__(self, limit: int, hold: float = PARTIAL_HOLD) -> None:
        self._chunks = Chunks(limit)
        self._hold = hold
        self._partial = bytearray()  # the current line's bytes not yet let through
        self._partial_since: float | None = None
        self._overwrites = False  # the partial line holds a carriage return or a backspace
        self._shown = bytearray()  # the current line's bytes already let through
        self._ready = False

    def write(self, data: bytes, now: float) -> None:
        end = data.rfind(b"\n") + 1
        if end:
            first = data.find(b"\n") + 1
            self._end_line(bytes(self._partial) + data[:first])
            if first < end:
                self._chunks.write(data[first:end])
            self._partial.clear()
            self._partial_since = None
            self._overwrites = False
            self._ready = True
            data = data[end:]
        if data:
            if self._partial_since is None:
                self._partial_since = now
            self._partial += data
            self._overwrites = self._overwrites or _OVERWRITES.search(data) is not None
            if len(self._partial) > PARTIAL_LIMIT:
                self._release()

    def due(self) -> float | None:
        """When a piece can be taken (a time in the writer's clock), or None while there is none."""
        if self._ready:
            return float("-inf")
        if self._partial_since is None or self._overwrites:
            return None
        return self._partial_since + self._hold

    def take(self, now: float) -> tuple[str, int] | None:
        """The cleaned text of the lines that are complete (or held long enough) and bytes dropped."""
        if self._partial_since is not None and not self._overwrites and now >= self._partial_since + self._hold:
            self._release()
        if not self._ready:
            return None
        self._ready = False
        text, dropped = self._chunks.take()
        return (text, dropped) if text or dropped else None

    def take_rest(self, expected_output: str | None = None) -> tuple[str, int] | None:
        """Everything still held, at the end. A last line the result's output does not end with
        (a prompt that only the screen told apart from the output) is left out."""
        if self._partial:
            rest = clean(bytes(self._shown + self._partial))
            if expected_output is None or (rest and expected_output.endswith(rest)):
                self._end_line(bytes(self._partial))
                self._ready = True
            self._partial.clear()
            self._partial_since = None
            self._overwrites = False
        return self.take(float("-inf"))

    def _release(self) -> None:
        """Let the partial line through, except an unfinished sequence or character at its end."""
        data = bytes(self._partial)
        cut = len(data) - unfinished_length(data)
        if not cut:
            self._partial_since = None  # only an unfinished sequence: wait for the bytes that end it
            return
        self._end_line(data[:cut])
        self._shown += data[:cut]
        del self._partial[:cut]
        self._partial_since = None if not self._partial else self._partial_since
        self._overwrites = _OVERWRITES.search(self._partial) is not None
        self._ready = True

    def _end_line(self, rest: bytes) -> None:
        """Write the rest of the current line (or part of it): raw when nothing of the line was
        let through yet, else as what the whole line now shows beyond what was written."""
        if not self._shown:
            self._chunks.write(rest)
            return
        before = clean(bytes(self._shown))
        after = clean(bytes(self._shown) + rest)
        if rest.endswith(b"\n"):
            self._shown.clear()
        elif len(self._shown) > PARTIAL_LIMIT:
            self._shown = bytearray(self._shown[-PARTIAL_LIMIT:])  # memory stays bounded
        if after.startswith(before):
            self._chunks.write(after[len(before):].encode("utf-8"))
        else:
            self._chunks.write(b"\n" + after.encode("utf-8"))

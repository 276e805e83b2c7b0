"""Questions a program asks its terminal, and the answers a terminal gives.

Programs ask the terminal where the cursor is (a cursor position request, DSR 6), whether it is
in order (DSR 5), and what it is (primary and secondary device attributes, DA1 and DA2). xterm,
VS Code's terminal and tmux answer at once; prompt_toolkit, vim and fish ask and wait, and draw
late, or warn, when no answer comes. safe-run's terminal answers these, and only these:

    ESC [ 6 n    ->  ESC [ row ; column R     (row and column of the cursor, from 1)
    ESC [ ? 6 n  ->  ESC [ ? row ; column R
    ESC [ 5 n    ->  ESC [ 0 n                (in order)
    ESC [ c      ->  ESC [ ? 1 ; 2 c          (a VT100 with advanced video, as xterm can say)
    ESC [ > c    ->  ESC [ > 0 ; 0 ; 0 c      (a VT100, version 0)

An answer is the terminal's own, not input of safe-run's: it arrives where keys arrive, as on any
terminal, and is never a command line. Pure: the runner finds the questions in the output and
writes the answers, and only while the terminal is in raw (non-canonical) mode. A program that
waits for an answer sets raw mode first; in line mode nobody reads it, the line discipline would
echo it, and the shell would read it with the next command line.
"""

from __future__ import annotations

import re

# The questions; a parameter of 0 is the same question as none (`ESC [ 0 c`).
QUESTION = re.compile(rb"\x1b\[([?>]?)(0?|5|6)([nc])")
# The start of a question that the next chunk of output may finish.
_BEGUN = re.compile(rb"\x1b(\[([?>]?[056]?)?)?\Z")
_LONGEST = 5  # ESC [ > 0 c

CURSOR = "cursor"
CURSOR_EXTENDED = "cursor-extended"
STATUS = "status"
PRIMARY = "primary-attributes"
SECONDARY = "secondary-attributes"

_KINDS = {
    (b"", b"6", b"n"): CURSOR,
    (b"?", b"6", b"n"): CURSOR_EXTENDED,
    (b"", b"5", b"n"): STATUS,
    (b"", b"", b"c"): PRIMARY,
    (b"", b"0", b"c"): PRIMARY,
    (b">", b"", b"c"): SECONDARY,
    (b">", b"0", b"c"): SECONDARY,
}


class Questions:
    """Finds the questions in a stream of output, also one cut between two reads."""

    def __init__(self) -> None:
        self._begun = b""

    def find(self, data: bytes) -> list[str]:
        """The questions asked in `data` (with what an earlier chunk began), in order."""
        if self._begun:
            data = self._begun + data
            self._begun = b""
        if b"\x1b" not in data:
            return []
        asked = [
            kind for match in QUESTION.finditer(data)
            if (kind := _KINDS.get((match.group(1), match.group(2), match.group(3)))) is not None
        ]
        tail = data[-_LONGEST:]
        start = tail.rfind(b"\x1b")
        if start >= 0 and _BEGUN.match(tail, start):
            self._begun = tail[start:]
        return asked


def answer(kind: str, cursor: tuple[int, int]) -> bytes:
    """The terminal's answer to one question; `cursor` is its row and column, from 0."""
    row, column = cursor[0] + 1, cursor[1] + 1
    if kind == CURSOR:
        return b"\x1b[%d;%dR" % (row, column)
    if kind == CURSOR_EXTENDED:
        return b"\x1b[?%d;%dR" % (row, column)
    if kind == STATUS:
        return b"\x1b[0n"
    if kind == PRIMARY:
        return b"\x1b[?1;2c"
    return b"\x1b[>0;0;0c"

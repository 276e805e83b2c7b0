"""Turn what a command printed to its terminal into text a reader can use.

A person, an agent reading JSON and a CI log all want the output as the
terminal finally showed it, not the byte stream that drew it: colours and
other escape sequences are noise, and a progress bar redrawn with carriage
returns should leave only its last frame. Editing within the current line is
replayed as a line editor's model of it (carriage return, backspace, cursor
forward, back and to a column, erase in line, insert, delete and erase
characters), because that is what progress output, prompts and line editors
use; cursor movement between lines and full-screen redraws would need a whole
terminal emulator, so their sequences are simply removed and the text around
them is kept in the order it was written.

C1 controls come in two forms. As UTF-8 characters (U+0080-U+009F) they are
unambiguous and read as their 7-bit equivalents, ESC and one byte. As raw
bytes they are malformed UTF-8, which a UTF-8 terminal shows as a replacement
character, and so are they here (the 8-bit OSC, which shell integration may
use, is taken out earlier by the sequence parser, when complete). A string
control (OSC, DCS, SOS, PM, APC) begun by a C1 character is removed only when
it is complete, ended by BEL or ST with no other control inside; otherwise its
introducer shows as a replacement character and what follows it is kept: an
introducer with no end must not swallow the rest of the output.

Output can be arbitrarily large, so it is captured with bounded memory: the
start and the end are kept, the middle is counted and reported as omitted. It
is counted in the units of the text it would have added (bytes of cleaned
UTF-8), never in raw terminal bytes, so a reader can compare it with the text.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import Protocol

from . import escapes
from .escapes import c1_as_esc, partial_char

__all__ = ["Chunks", "HeadTail", "c1_as_esc", "clean", "cleaned_size"]

# Bytes that never print: checking for them on bytes is far cheaper than a
# regex scan, so text without them skips the removal pass entirely.
_DRAWS_NOTHING = bytes([*range(0x08), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
_DRAWS_NOTHING_OR_MOVES = _DRAWS_NOTHING + b"\r\x08"

# A C1 string introducer in UTF-8 (DCS, SOS, OSC, PM, APC), its body of printable
# characters, and its end if it has one: BEL or ST in any form.
_C1_STRING = re.compile(
    rb"\xc2[\x90\x98\x9d-\x9f]((?:[\x20-\x7e\x80-\xc1\xc3-\xff]|\xc2[\xa0-\xbf])*)(\x07|\xc2\x9c|\x1b\\)?"
)
_REPLACEMENT = "\ufffd".encode()
_C1_CHAR = re.compile(rb"\xc2[\x80-\x9f]")
# Escapes that change nothing shown on a line that is never overprinted: colours, erase to end.
_COLOUR_ONLY = re.compile(rb"\x1b\[[0-9;:]*m|\x1b\[0?K")

# Line editing survives this pass: its effect depends on the cursor, which only
# the line renderer knows. Everything else that does not print is removed.
# A string's ending BEL goes with the silent controls, its ST with the other escapes.
_NOISE = escapes.text(
    escapes.STRING,
    r"(?!\x1b\[(?:[012]?K|[0-9]*[@CDGPX`]))" + escapes.CSI,
    r"(?!\x1b\[)" + escapes.ESCAPE,
    escapes.SILENT_CONTROL,
)
# A line where the cursor leaves for another line, or jumps, cannot be replayed as one line:
# its moves along the line are removed with the other moves, the text kept in order.
_LEAVES_LINE = re.compile(r"\x1b\[[0-9;?]*[ABEFHfdLMSTsu]|\x1b[78DEM]")
_LEFT_LINE = re.compile(r"(?m)^[^\n]*(?:\x1b\[[0-9;?]*[ABEFHfdLMSTsu]|\x1b[78DEM])[^\n]*")
_MOVE_ALONG = re.compile(r"\x1b\[[0-9]*[@CDGPX`]")
# A character, backspace, character shows only the second wherever the cursor
# is, so overstrike (as man pages print bold) needs no per-character replay.
_OVERSTRUCK = re.compile(r"[^\n\r\x08\x1b]\x08(?=[^\n\r\x08\x1b])")
_OVERPRINT = re.compile(r"[\r\x08\x1b]")
_LINE_CONTROL = re.compile(r"(\r|\x08|\x1b\[[012]?K|\x1b\[[0-9]*[@CDGPX`])")

# NUL never reaches the renderer (the noise pass removes it), so it can stand
# for a cell that was erased rather than printed.
_ERASED = "\x00"

# The line model has no right margin, but hostile counts must not make it allocate without
# bound: moves and insertions stop at this column, or at the line's end if that is further.
_MARGIN = 4096


def clean(raw: bytes) -> str:
    """Text as the terminal would show it, always valid for JSON whatever the bytes were."""
    raw = _lines_ended_by_newlines(raw)
    if b"\xc2" in raw:
        raw = c1_as_esc(_C1_STRING.sub(_c1_string, raw))
    text = raw.decode("utf-8", errors="replace")
    if len(raw.translate(None, _DRAWS_NOTHING)) < len(raw):
        if _LEAVES_LINE.search(text):
            text = _LEFT_LINE.sub(_without_moves_along, text)
        text = _NOISE.sub("", text)
    if "\x08" in text:
        text = _OVERSTRUCK.sub("", text)
    if "\r" in text or "\x08" in text or "\x1b" in text:
        text = _render_overprinted(text)
    return text


def _lines_ended_by_newlines(raw: bytes) -> bytes:
    """`raw` with each CRLF a newline. When every CR is one of a CRLF (a terminal's output
    without overprinting), deleting every CR and counting the CRLFs takes about half the time of
    a replace, which costs 4 ms a megabyte when lines are short."""
    without_returns = raw.translate(None, b"\r")
    if len(raw) - len(without_returns) == raw.count(b"\r\n"):
        return without_returns
    return raw.replace(b"\r\n", b"\n")


def shown(raw: bytes, screen: tuple[int, int] | None) -> str:
    """`clean(raw)`, except that what a full-screen program drew on the alternate screen is its
    last screen there, as lines, on a terminal of `screen` (columns, rows): run together, its
    drawing would be one long line of what each redraw left (vim: thousands of characters)."""
    if screen is None or next(escapes.alternate_switches(raw), None) is None:
        return clean(raw)
    pieces: list[str] = []
    main_from: int | None = 0  # where the main screen's bytes began; None while on the alternate one
    drawn_from = 0
    for switch in escapes.alternate_switches(raw):
        if switch.group(1) == b"h" and main_from is not None:
            pieces.append(clean(raw[main_from:switch.start()]))
            main_from, drawn_from = None, switch.end()
        elif switch.group(1) == b"l" and main_from is None:
            pieces.append(_last_screen(raw[drawn_from:switch.start()], screen, pieces))
            main_from = switch.end()
    if main_from is None:
        pieces.append(_last_screen(raw[drawn_from:], screen, pieces))
    else:
        pieces.append(clean(raw[main_from:]))
    return "".join(pieces)


def _last_screen(drawn: bytes, screen: tuple[int, int], before: list[str]) -> str:
    from .emulator import screen_lines  # pyte: only for output that used the alternate screen

    lines = screen_lines(drawn, *screen)
    if not lines:
        return ""
    start = "\n" if before and before[-1] and not before[-1].endswith("\n") else ""
    return start + "\n".join(lines) + "\n"


def cleaned_size(raw: bytes) -> int:
    """Bytes of UTF-8 that `clean(raw)` gives, counted without cleaning where that is safe.

    Text whose only escapes are colours (and erasing after a cursor that is always at the end
    of the line) loses just those: the common case, counted at the speed of a few byte scans.
    """
    plain = _COLOUR_ONLY.sub(b"", raw) if b"\x1b" in raw else raw
    crlf = plain.count(b"\r\n")
    # Nothing but the CR of each CRLF may go: no other control, no overprinting.
    shown = len(plain.translate(None, _DRAWS_NOTHING_OR_MOVES))
    if shown == len(plain) - crlf and _shown_as_it_is(plain):
        return shown
    return len(clean(raw).encode("utf-8"))


def _shown_as_it_is(raw: bytes) -> bool:
    """Valid UTF-8 without C1 controls: decoding it changes nothing."""
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _C1_CHAR.search(raw) is None


def _without_moves_along(match: re.Match[str]) -> str:
    return _MOVE_ALONG.sub("", match[0])


def _c1_string(match: re.Match[bytes]) -> bytes:
    """A complete string control goes; an unfinished one leaves a visible mark and its text."""
    return b"" if match[2] else _REPLACEMENT + match[1]


def _render_overprinted(text: str) -> str:
    """Replay only the lines that overprint; every other line is copied as it is."""
    pieces: list[str] = []
    done = 0
    while match := _OVERPRINT.search(text, done):
        start = max(done, text.rfind("\n", done, match.start()) + 1)
        end = text.find("\n", match.end())
        if end < 0:
            end = len(text)
        pieces += (text[done:start], _render_line(text[start:end]))
        done = end
    pieces.append(text[done:])
    return "".join(pieces)


def _render_line(line: str) -> str:
    """Replay editing within one line; a tab counts as one column, as does every character."""
    cells: list[str] = []
    column = 0
    for index, part in enumerate(_LINE_CONTROL.split(line)):
        if index % 2 == 0:
            if column > len(cells):
                cells += _ERASED * (column - len(cells))
            cells[column : column + len(part)] = part
            column += len(part)
        elif part == "\r":
            column = 0
        elif part == "\x08":
            column = max(0, column - 1)
        else:
            column = _edit(cells, column, part[-1], part[2:-1])
    return "".join(cells).rstrip(_ERASED).replace(_ERASED, " ")


def _edit(cells: list[str], column: int, final: str, parameter: str) -> int:
    """One CSI that edits the line or moves along it; the cursor's column after it."""
    if final == "K":
        _erase(cells, column, parameter)
        return column
    # 0 means 1, as for a terminal; a number too long to read is past the margin anyway.
    count = _MARGIN if len(parameter) > 4 else min(max(1, int(parameter or 1)), _MARGIN)
    margin = max(_MARGIN, len(cells))
    if final == "C":
        return min(column + count, margin)
    if final == "D":
        return max(0, column - count)
    if final in "G`":
        return min(count - 1, margin)
    if final == "@" and column < len(cells):
        cells[column:column] = _ERASED * count
        del cells[margin:]
    elif final == "P":
        del cells[column : column + count]
    elif final == "X":
        cells[column : column + count] = _ERASED * len(cells[column : column + count])
    return column


def _erase(cells: list[str], column: int, mode: str) -> None:
    """Erase-in-line; erased cells print as spaces only if text follows them on the line."""
    if mode in ("", "0"):
        del cells[column:]
    elif mode == "1":
        cells[: column + 1] = _ERASED * min(column + 1, len(cells))
    else:
        cells[:] = _ERASED * len(cells)


# How much of the stream just before the kept tail is retained, so that a
# character or escape sequence cut by the tail's start can be recognised.
_SEAM = 256
# The tail keeps this much more, for a text worked out without the last bytes written (see
# `HeadTail.text_before`): an unfinished sequence (at most _SEAM) and a few bytes held back.
_LEFT_OUT = 2 * _SEAM
# The tail is trimmed once it holds this much more than it keeps, so that what is dropped is
# counted a block at a time.
_TRIM_STEP = 64 * 1024
# Writes smaller than this are gathered into pieces of the tail up to _TRIM_STEP.
_SMALL_WRITE = 4096



# The head and the tail are budgets of the result's text, but what is kept is the terminal's bytes,
# which say more: a line break is two bytes there and one in the text, colours are bytes that show
# nothing. This many raw bytes are kept per byte of budget, and the cleaned text cut to the budget.
_RAW_PER_TEXT_BYTE = 2
# A cut moves back (the head's end) or on (the tail's start) to a line break within this part of
# the budget, so that the kept text ends and begins with whole lines where they are short.
_NEAR_LINE_PART = 8

# Omitted bytes are counted a line at a time, because cleaning a line needs all of it; a line
# longer than this is counted in pieces, which can only miscount what it overprints.
_LONGEST_COUNTED_LINE = 64 * 1024


class _OmittedSize:
    """How much cleaned text the bytes dropped between head and tail would have added."""

    def __init__(self) -> None:
        self.size = 0
        self._line = b""  # the start of a line whose end has not been dropped yet

    def write(self, data: bytes) -> None:
        end = data.rfind(b"\n") + 1
        if end:
            self.size += cleaned_size(self._line + data[:end])
            self._line = data[end:]
        else:
            self._line += data
        if len(self._line) > _LONGEST_COUNTED_LINE:
            cut = len(self._line) - escapes.unfinished_length(self._line, _SEAM)
            self.size += cleaned_size(self._line[:cut])
            self._line = self._line[cut:]

    def total(self, rest: bytes) -> int:
        """The size so far, with `rest` (the last dropped bytes, not yet written) added."""
        return self.size + cleaned_size(self._line + rest)


class HeadTail:
    """Keep the first and last bytes of a stream of any size in bounded memory.

    `head_bytes` and `tail_bytes` are bytes of the cleaned text (what the result holds), kept from
    up to _RAW_PER_TEXT_BYTE times as many bytes of the stream. The head ends, and the tail
    begins, at a line break near the cut where there is one; otherwise at the first whole
    character: cutting further to a line could hide all of it when the output has very long lines.
    """

    def __init__(
        self, head_bytes: int, tail_bytes: int, raw_per_text: int = _RAW_PER_TEXT_BYTE,
        screen: tuple[int, int] | None = None,
    ) -> None:
        """`screen`: the terminal's columns and rows, for a full-screen program's last screen (`shown`)."""
        if head_bytes < 0 or tail_bytes < 0:
            raise ValueError("head_bytes and tail_bytes must not be negative")
        self._screen = screen
        self._head_text = head_bytes
        self._tail_text = tail_bytes
        self._head_limit = head_bytes * raw_per_text
        self._tail_limit = tail_bytes * raw_per_text
        self._head = bytearray()
        # The tail as the pieces it came in: appending to one buffer trimmed at its front made
        # CPython copy all of it to a fresh allocation every few writes (a megabyte per 64 KB of
        # a flood); pieces are dropped whole, and joined only when the tail is read.
        self._tail: deque[bytes | bytearray] = deque()
        self._tail_size = 0
        # The head as shown, worked out at the tail's first trim, when it can no longer change:
        # cleaning a megabyte takes milliseconds, better spent while the output still comes than
        # after the command has ended.
        self._head_shown: str | None = None
        self._total = 0
        self._omitted = _OmittedSize()
        self._split: tuple[int, str, str, int] | None = None  # (total, head, tail, dropped) as last worked out

    def write(self, data: bytes) -> None:
        """Take the next bytes of the stream; the tail is trimmed in steps, so cost stays linear."""
        self._total += len(data)
        view = memoryview(data)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += view[:room]
            view = view[room:]
            if len(self._head) == self._head_limit:  # a character or sequence it cuts is not shown
                cut = len(self._head) - escapes.unfinished_length(bytes(self._head), _SEAM)
                self._omitted.write(bytes(self._head[cut:]))
        if view:
            self._add_to_tail(view, data)
        keep = self._tail_limit + _SEAM + _LEFT_OUT
        if self._tail_size > keep + _TRIM_STEP:
            self._trim_tail(self._tail_size - keep)

    def _add_to_tail(self, view: memoryview, data: bytes) -> None:
        """A write of a terminal's read or more is kept as it came; smaller ones (a program that
        writes a few bytes at a time) are gathered into a piece, since a deque entry and a bytes
        object each would take many times their size."""
        last = self._tail[-1] if self._tail else None
        if len(view) >= _SMALL_WRITE:
            self._tail.append(bytes(data) if len(view) == len(data) else bytes(view))
        elif isinstance(last, bytearray) and len(last) < _TRIM_STEP:
            last += view
        else:
            self._tail.append(bytearray(view))
        self._tail_size += len(view)

    def _trim_tail(self, excess: int) -> None:
        """Drop `excess` bytes from the front of the tail, counting what they would have shown."""
        if self._head_shown is None:
            self._head_shown = self._shown_head()
        self._tail_size -= excess
        while excess:
            front = self._tail[0]
            if len(front) <= excess:
                self._tail.popleft()
                self._omitted.write(bytes(front))
                excess -= len(front)
            else:
                self._omitted.write(bytes(front[:excess]))
                self._tail[0] = front[excess:]
                excess = 0

    def _tail_bytes(self) -> bytearray:
        """The tail as one buffer, which it stays until the next write."""
        if len(self._tail) != 1 or not isinstance(self._tail[0], bytearray):
            self._tail = deque([bytearray().join(self._tail)])
        whole = self._tail[0]
        assert isinstance(whole, bytearray)
        return whole

    def retract(self, text: bytes, end: int) -> bool:
        """Take back `text` that ended at stream offset `end`, if it is still kept there whole.

        For bytes found afterwards not to be the command's output (a shell's own word on exit).
        """
        tail_start = self._total - self._tail_size
        if self._tail_size and end - len(text) >= tail_start:
            kept, stop = self._tail_bytes(), end - tail_start
        elif not self._tail_size:
            kept, stop = self._head, end
        else:
            return False
        if not text or stop > len(kept) or kept[stop - len(text) : stop] != text:
            return False
        del kept[stop - len(text) : stop]
        if kept is self._head:
            self._head_shown = None
        else:
            self._tail_size -= len(text)
        self._total -= len(text)
        self._split = None
        return True

    @property
    def total(self) -> int:
        """Bytes written so far."""
        return self._total

    @property
    def dropped(self) -> int:
        """Bytes of cleaned text (UTF-8) that the bytes between the kept head and tail would have shown."""
        return self._parts()[2]

    def text(self) -> str:
        """The cleaned output, with one marker line standing for whatever was dropped.

        The marker gives the exact count of dropped bytes. A character or
        escape sequence cut by either edge is left out whole, so the edges
        never show replacement characters or escape fragments.
        """
        return _joined(*self._parts())

    def text_before(self, left_out: int) -> tuple[str, int]:
        """`text()` and `dropped` as they were before the last `left_out` bytes were written (at
        most _LEFT_OUT of them; beyond that the kept tail is shorter than its budget)."""
        if not left_out:
            head, tail, dropped = self._parts()
        else:
            head, tail, dropped = _fit(*self._cut(left_out), self._head_text, self._tail_text)
        return _joined(head, tail, dropped), dropped

    def last(self, size: int) -> bytes:
        """The last `size` bytes written (fewer when fewer were): the tail keeps at least that many
        beyond its budget, and while it keeps less nothing was dropped before it."""
        tail = self._tail_bytes() if self._tail_size else bytearray()
        if len(tail) >= size:
            return bytes(tail[len(tail) - size:])
        return bytes(self._head[len(self._head) - (size - len(tail)):]) + bytes(tail)

    def _parts(self) -> tuple[str, str, int]:
        """Cleaned head and tail and the size of what lies between; worked out once per state."""
        if self._split is None or self._split[0] != self._total:
            self._split = (self._total, *_fit(*self._cut(), self._head_text, self._tail_text))
        return self._split[1:]

    def _cut(self, left_out: int = 0) -> tuple[str, str, int]:
        if self._total - left_out <= self._head_limit + self._tail_limit:
            whole = self._head + self._tail_bytes()
            return shown(bytes(whole[: len(whole) - left_out]), self._screen), "", 0
        kept_tail = self._tail_bytes()
        stop = len(kept_tail) - left_out
        cut = max(0, stop - self._tail_limit)
        window = bytes(kept_tail[cut:stop])
        before = (bytes(self._head[-_SEAM:]) + bytes(kept_tail[max(0, cut - _SEAM) : cut]))[-_SEAM:]
        start = _cut_fragment_length(before, window)
        head = self._head_shown if self._head_shown is not None else self._shown_head()
        omitted = bytes(kept_tail[:cut]) + window[:start]
        dropped = self._omitted.total(omitted)
        tail = shown(window[start:], self._screen)
        if tail.startswith("\n") and not (omitted or bytes(self._head)).endswith(b"\n"):
            tail, dropped = tail[1:], dropped + 1  # the end of the last line dropped, not a blank line
        return head, tail, dropped

    def _shown_head(self) -> str:
        return shown(_without_partial_char(bytes(self._head)), self._screen)


def _fit(head: str, tail: str, dropped: int, head_limit: int, tail_limit: int) -> tuple[str, str, int]:
    """The cleaned head and tail cut to their budgets of UTF-8 bytes, what they lose counted as dropped."""
    whole = head.encode("utf-8")
    if not tail and not dropped:
        if len(whole) <= head_limit + tail_limit:
            return head, "", 0
        first = _head_of(whole, head_limit)
        last = _tail_of(whole[len(first):], tail_limit)
        return first.decode("utf-8"), last.decode("utf-8"), len(whole) - len(first) - len(last)
    end = tail.encode("utf-8")
    kept_head, kept_tail = _head_of(whole, head_limit), _tail_of(end, tail_limit)
    dropped += len(whole) - len(kept_head) + len(end) - len(kept_tail)
    return kept_head.decode("utf-8"), kept_tail.decode("utf-8"), dropped


def _head_of(text: bytes, limit: int) -> bytes:
    """At most `limit` bytes from the start, ending with a line break near the cut if there is one."""
    if len(text) <= limit:
        return text
    cut = limit
    while cut > 0 and text[cut] & 0xC0 == 0x80:  # not inside a character
        cut -= 1
    line_end = text.rfind(b"\n", max(0, limit - limit // _NEAR_LINE_PART), cut) + 1
    return text[:line_end or cut]


def _tail_of(text: bytes, limit: int) -> bytes:
    """At most `limit` bytes from the end, starting a line near the cut if a line break is there."""
    if len(text) <= limit:
        return text
    start = len(text) - limit
    while start < len(text) and text[start] & 0xC0 == 0x80:
        start += 1
    if start and text[start - 1:start] == b"\n":
        return text[start:]
    line_start = text.find(b"\n", start, start + limit // _NEAR_LINE_PART) + 1
    return text[line_start or start:]


def _joined(head: str, tail: str, dropped: int) -> str:
    """The cleaned output, with one marker line standing for whatever was dropped."""
    return head + _omitted_marker(head, dropped) + tail if dropped else head + tail


def _omitted_marker(head: str, dropped: int) -> str:
    start = "\n" if head and not head.endswith("\n") else ""
    return f"{start}[... {dropped} bytes of output omitted ...]\n"


def _without_partial_char(data: bytes) -> bytes:
    present, _ = partial_char(data)
    return data[: len(data) - present]


def _cut_fragment_length(before: bytes, window: bytes) -> int:
    """Length of the fragment at the start of window that belongs to a sequence or character begun in before."""
    return escapes.overrun(before, window) or _char_overrun(before, window)


def _char_overrun(before: bytes, window: bytes) -> int:
    present, needed = partial_char(before)
    count = 0
    while count < needed - present and count < len(window) and 0x80 <= window[count] < 0xC0:
        count += 1
    return count


class FullScreen(Protocol):
    """The terminal's screen as an emulator keeps it (`screen.ScreenTail`)."""

    @property
    def alternate(self) -> bool: ...

    def lines(self) -> list[str]: ...


class Chunks:
    """The output since it was last taken, cleaned a piece at a time for callers who follow along.

    A piece never ends inside a character or an escape sequence: an unfinished one waits for the
    next write, so no piece shows replacement characters or escape fragments. Between takes at
    most `limit` bytes are kept, the first and last halves, like the whole output.

    With `screen` (the terminal's columns and rows) a full-screen program's drawing is its last
    screen, as lines (see `shown`); a piece that begins and ends on the alternate screen holds
    only what was redrawn since the last take, so it is the whole screen, as `current` (the
    terminal's emulated screen, which sees the same bytes) shows it.

    With `shared` (the whole output as kept elsewhere, of the same limit and screen, and how many
    of its last bytes were not written here yet), nothing is kept here until the first take: the
    first piece is all of that output, and is cut from it. A command nobody asks about while it
    runs (a one-shot call waiting for its end) then has its output kept and counted once, not
    twice: in a flood, counting what is dropped is most of the work per byte.
    """

    def __init__(
        self, limit: int, screen: tuple[int, int] | None = None, current: Callable[[], FullScreen | None] | None = None,
        shared: Callable[[], tuple[HeadTail, int]] | None = None,
    ) -> None:
        self._limit = limit
        self._screen = screen
        self._current = current
        self._shared = shared
        self._pending: HeadTail | None = None if shared is not None else self._fresh()  # None: it is `shared`'s
        self._carry = b""
        self._began_on_alternate = False  # the piece began on the alternate screen

    def write(self, data: bytes) -> None:
        if self._pending is None:
            return
        data = self._carry + data
        end = len(data) - escapes.unfinished_length(data, _SEAM)
        self._pending.write(data[:end])
        self._carry = data[end:]

    def take(self) -> tuple[str, int]:
        """The cleaned text since the last take, and how many bytes of it were dropped."""
        written, text = self._taken()
        now = self._current() if self._current is not None else None
        on = now is not None and now.alternate
        began, self._began_on_alternate = self._began_on_alternate, on
        if began and now is not None and on and written:
            lines = now.lines()
            return ("\n".join(lines) + "\n" if lines else ""), 0
        return text()

    def _taken(self) -> tuple[int, Callable[[], tuple[str, int]]]:
        """How many bytes the piece holds, and its text and dropped bytes, worked out if needed;
        a fresh piece starts."""
        pending, self._pending = self._pending, self._fresh()
        if pending is not None:
            return pending.total, lambda: (pending.text(), pending.dropped)
        assert self._shared is not None
        whole, unwritten = self._shared()
        end = whole.last(_SEAM + unwritten)
        written = end[: len(end) - unwritten]
        self._carry = written[len(written) - escapes.unfinished_length(written, _SEAM):]
        left_out = unwritten + len(self._carry)
        return whole.total - left_out, lambda: whole.text_before(left_out)

    def _fresh(self) -> HeadTail:
        return HeadTail(self._limit // 2, self._limit - self._limit // 2, screen=self._screen)

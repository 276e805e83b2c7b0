"""The grammar of terminal escape sequences, written once for every module that reads them.

ECMA-48 as terminals read it. ESC begins a sequence: `ESC [` a CSI (parameter bytes 0x30-0x3F,
intermediate bytes 0x20-0x2F, one final byte 0x40-0x7E); `ESC ]`, `ESC P`, `ESC X`, `ESC ^` and
`ESC _` a control string (OSC, DCS, SOS, PM, APC) whose body runs to BEL or ST (`ESC \\`), and
which any other ESC aborts; any other ESC takes intermediate bytes and one final byte (0x30-0x7E).
Every C1 control is the same as ESC and one byte (0x9B is `ESC [`). In UTF-8 C1 controls are the
characters U+0080-U+009F, unambiguous; as raw bytes they are also UTF-8 continuation bytes, so a
raw one is a control only where no character can contain it (`raw_c1`).

Reads end anywhere, so every pattern also matches a sequence cut short at the end of the data;
`unfinished_start` says whether the data ends inside one. The patterns are regex source in ASCII
so that one text builds both the str patterns of the cleaner (`text`) and the bytes patterns of
the parser and the capture (`binary`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

STRING = r"\x1b[\]PX^_][^\x07\x1b]*"
"""A control string up to, not including, its end; also one cut short or aborted."""

STRING_END = r"(?:\x07|\x1b\\)"
"""What ends a control string in 7-bit form: BEL or ST."""

CSI = r"\x1b\[[0-?]*[ -/]*[@-~]?"
"""A CSI, its final byte missing when cut short."""

ESCAPE = r"\x1b[ -/]*[0-~]?"
"""An escape that is neither a CSI nor a string (charset selection, keypad modes, resets)."""

SILENT_CONTROL = r"[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]"
"""C0 controls that draw nothing and move no cursor: all but BS, TAB, LF, CR and ESC."""

ALTERNATE_SWITCH = re.compile(rb"\x1b\[\?(?:\d*;)*(?:1049|1047|47)(?:;\d*)*([hl])")
"""A switch to the alternate screen (group 1 `h`) or back to the main one (`l`), among other modes."""


def alternate_switches(data: bytes | bytearray, start: int = 0) -> Iterator[re.Match[bytes]]:
    """The ALTERNATE_SWITCHes in `data` from `start` on, in order. Most output has no escape at
    all, and CPython finds that one byte is absent at memory speed, some thirty times as fast as
    the switch's first three bytes; those, in turn, are found faster than the regex engine finds
    the switch in coloured output (19 MB: 18 ms against 28)."""
    if data.find(b"\x1b", start) < 0:
        return iter(())
    first = data.find(b"\x1b[?", start)
    return ALTERNATE_SWITCH.finditer(data, first) if first >= 0 else iter(())


# The same grammar on undecoded bytes, with the C1 forms in UTF-8 (U+009B is CSI; U+0090, U+0098
# and U+009D-U+009F begin strings; a string's body stops at any C1 character).
_SEQUENCE = re.compile(
    rb"(?:\x1b\[|\xc2\x9b)[0-?]*[ -/]*[@-~]?"
    rb"|(?:\x1b[\]PX^_]|\xc2[\x90\x98\x9d-\x9f])(?:[^\x07\x1b\xc2]|\xc2(?![\x80-\x9f]))*"
    rb"|\x1b[ -/]*[0-~]?"
)
_C1_UTF8 = re.compile(rb"\xc2([\x80-\x9f])")

# Byte sequences after which a byte in 0x80-0x9f continues well-formed UTF-8, grouped by length
# because a look-behind must have a fixed width.
_UTF8_PREFIXES = (
    rb"[\xc2-\xdf\xe1-\xf3]",
    rb"\xe0[\xa0-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]|\xed[\x80-\x9f]"
    rb"|\xf0[\x90-\xbf]|[\xf1-\xf3][\x80-\xbf]|\xf4[\x80-\x8f]",
    rb"\xf0[\x90-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf]",
)

RAW_C1_LOOKBEHIND = 3
"""Bytes before a raw C1 byte that `raw_c1` needs to see."""


def text(*alternatives: str) -> re.Pattern[str]:
    """One pattern matching any of the alternatives, for decoded text."""
    return re.compile("|".join(alternatives))


def binary(*alternatives: str) -> re.Pattern[bytes]:
    """One pattern matching any of the alternatives, for bytes."""
    return re.compile("|".join(alternatives).encode("latin-1"))


def raw_c1(byte: bytes) -> bytes:
    """Pattern source matching the raw 8-bit control `byte` only where it cannot be part of a UTF-8
    character: 0x9c and 0x9d are C1 controls (ST, OSC) and common continuation bytes alike, and
    only the up to three bytes before them tell the two apart."""
    return byte + b"".join(b"(?<!(?:" + prefix + b")" + byte + b")" for prefix in _UTF8_PREFIXES)


def c1_as_esc(raw: bytes) -> bytes:
    """C1 controls in their UTF-8 form rewritten as ESC and one byte, so one grammar fits both."""
    if b"\xc2" not in raw:
        return raw
    return _C1_UTF8.sub(_esc_equivalent, raw)


def _esc_equivalent(match: re.Match[bytes]) -> bytes:
    return bytes((0x1B, match[1][0] - 0x40))


def unfinished_start(data: bytes, lookback: int) -> int | None:
    """Where a sequence begins that the end of `data` leaves unfinished, looking at most `lookback`
    bytes back; None when the data ends outside any sequence."""
    start = max(0, len(data) - lookback)
    if _introducer(data, start) < 0:  # nothing can begin one: no need for the regex
        return None
    last = None
    for last in _SEQUENCE.finditer(data, start):
        pass
    if last is not None and last.end() == len(data) and _unfinished(last.group()):
        return last.start()
    return None


UNFINISHED_LOOKBACK = 256
"""How far back from the end of a read an unfinished sequence is looked for, by default."""


def unfinished_length(data: bytes, lookback: int = UNFINISHED_LOOKBACK) -> int:
    """Bytes at the end of data that start a character or an escape sequence not yet complete,
    looking at most `lookback` bytes back for the sequence."""
    start = unfinished_start(data, lookback)
    if start is not None:
        return len(data) - start
    present, _ = partial_char(data)
    return present


def partial_char(data: bytes) -> tuple[int, int]:
    """Bytes present and bytes needed for a UTF-8 character left incomplete at the end of data."""
    for present in range(1, min(4, len(data)) + 1):
        byte = data[-present]
        if byte < 0x80:
            break
        if byte >= 0xC0:
            needed = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return (present, needed) if needed > present else (0, 0)
    return (0, 0)


def overrun(before: bytes, after: bytes) -> int:
    """How many bytes at the start of `after` belong to a sequence that began in `before`.

    Sequences are matched only where one can begin in `before` (every one begins with ESC or
    0xC2): a search for the next one would scan all of `after`, a megabyte of a flood's kept tail
    without one, at the pace of the regex engine (50 ms)."""
    begins = _introducer(before, 0)
    if begins < 0:
        return 0
    joined = before + after
    length = 0
    while begins >= 0:
        sequence = _SEQUENCE.match(joined, begins)
        if sequence is not None:
            length = sequence.end() - len(before)
        begins = _introducer(before, begins + 1 if sequence is None else sequence.end())
    return max(0, length)


def _introducer(data: bytes, start: int) -> int:
    """Where the first byte that can begin a sequence (ESC, or 0xC2 of a C1 control) lies at or
    after `start`, -1 if none. Two searches for one byte, which CPython makes at memory speed,
    take 0.6 us over the last 256 bytes of a chunk, where the grammar's regex took 14 us."""
    escape, c1 = data.find(b"\x1b", start), data.find(b"\xc2", start)
    return escape if c1 < 0 or 0 <= escape < c1 else c1


def _unfinished(sequence: bytes) -> bool:
    if sequence.startswith((b"\x1b[", b"\xc2\x9b")):
        return len(sequence) == 2 or not 0x40 <= sequence[-1] <= 0x7E
    if sequence.startswith(b"\x1b") and sequence[1:2] not in (b"]", b"P", b"X", b"^", b"_"):
        return len(sequence) == 1 or not 0x30 <= sequence[-1] <= 0x7E
    return True  # a string: its terminator is not part of the match


_SHOWS_NOTHING = binary(CSI, STRING + STRING_END + "?", ESCAPE)


def ends_line(data: bytes, before: bool) -> bool:
    """Whether writing `data` to a terminal leaves its cursor at the start of a line, for text
    (a summary) that must begin one; `before` when `data` shows nothing (only escape sequences).

    It runs on every chunk a person's terminal is shown, where cleaning a chunk of coloured lines
    whole took half a millisecond: only what follows the last newline is cleaned, unless that
    newline lies inside a control string (the one kind of sequence a newline can be part of).
    A carriage return moves the cursor to the start of its line, which it leaves empty only if it
    was (bc's readline ends with one after the last newline)."""
    last = data.rfind(b"\n")
    if last >= 0 and _within_string(data, last):
        shown = _SHOWS_NOTHING.sub(b"", data).rstrip(b"\r")
        return shown.endswith(b"\n") if shown else before
    if _SHOWS_NOTHING.sub(b"", data[last + 1:]).strip(b"\r"):
        return False
    return True if last >= 0 else before


def _within_string(data: bytes, at: int) -> bool:
    """Whether the byte at `at` is inside a control string begun before it: the last ESC before
    it begins one (any ESC ends a string), and no BEL has ended it since."""
    begun = data.rfind(b"\x1b", 0, at)
    return begun >= 0 and data[begun + 1 : begun + 2] in (b"]", b"P", b"X", b"^", b"_") \
        and data.find(b"\x07", begun + 2, at) < 0


FRESH_SCREEN = b"\x1b[0m\x1b[H\x1b[2J"
"""Plain colours, the cursor home, the screen cleared: where a drawing of a whole screen starts."""
ENTER_ALTERNATE = b"\x1b[?1049h"

MODES_OFF = (b"\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1l\x1b>"
             b"\x1b[?1004l\x1b[?2031l\x1b[?2048l")
"""Input modes a program turns on and, stopped or killed, may never turn off: mouse reports,
bracketed paste, application cursor keys and keypad, and the reports a terminal types on its own
(focus changes, colour scheme changes, resizes). A person's terminal left in them sends escape
sequences for every click, arrow key, change of window or theme, into whatever reads it next: the
person's shell; so they go off whenever it is given back (one that was off stays off)."""


# How much of a command its echo shows in a recording (see `as_typed`).
TYPED_SHOWN_MAX = 1000


def as_typed(command: str) -> bytes:
    """A command as a terminal shows it typed: its lines one under the other, its controls in caret
    notation (`^[`, never acted on), at most TYPED_SHOWN_MAX characters of it. A recording shows
    it where the shell echoed the short line safe-run types to run it."""
    shown = command if len(command) <= TYPED_SHOWN_MAX else command[:TYPED_SHOWN_MAX] + " …"
    return "".join(map(_caret, shown)).replace("\n", "\r\n").encode("utf-8", "replace")


def _caret(char: str) -> str:
    if char in "\n\t" or " " <= char < "\x7f" or char > "\x9f":
        return char
    return "^" + chr(ord(char) ^ 0x40) if char < "\x80" else "?"

"""Separate OSC control sequences from the rest of a terminal byte stream.

Shell integration reports prompt and command boundaries through OSC sequences
(families 133 and 633), interleaved with whatever the command prints.  PTY reads
end at arbitrary points, so the parser carries just enough state across reads to
recognise a sequence cut in two, and otherwise hands the bytes back untouched.

The 8-bit introducer (a raw 0x9d byte) is ambiguous in a UTF-8 stream: it is also a UTF-8
continuation byte, and a stray one turns up in binary or legacy-encoded output. So it begins an
OSC only where it cannot belong to a character, and the OSC counts only once it is complete: a
body of printable bytes ended by BEL or ST. Until then its bytes are held, and when the body
meets any other control, outgrows MAX_OSC_BODY, is aborted by ESC or is cut by the end of the
stream, they are handed back as output: a stray byte never swallows what follows it. The 7-bit
form (ESC ]) cannot be mistaken for text and keeps a terminal's reading: an ESC aborts it, and
an overlong body is dropped.
It sits on every byte of a command's output, so each read is scanned by C-level
regex searches rather than inspected byte by byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum, auto

from .escapes import RAW_C1_LOOKBEHIND, raw_c1

MAX_OSC_BODY = 64 * 1024
"""Longest OSC body kept; longer ones are dropped whole so memory stays bounded."""

_ESC = b"\x1b"

_OSC_START = re.compile(rb"\x1b\]|" + raw_c1(b"\x9d"))
# A lone ESC ends the OSC without being part of it (it aborts, as in xterm). ST may also come
# as U+009C in UTF-8, which no character contains.
_OSC_END = re.compile(rb"\x07|\x1b\\?|\xc2\x9c|" + raw_c1(b"\x9c"))
# In an OSC begun by a raw 0x9d, any control but a terminator shows the 0x9d was not one.
_OSC_8BIT_END = re.compile(rb"[\x00-\x1f\x7f]|\xc2\x9c|" + raw_c1(b"\x9c"))
_EIGHT_BIT_INTRODUCER = b"\x9d"
# A last byte whose meaning depends on the next: ESC (ST or abort?) and 0xc2 (U+009C, ST?).
_HELD = (_ESC, b"\xc2")

_LOOKBEHIND = RAW_C1_LOOKBEHIND
"""Bytes of earlier input the UTF-8 look-behinds may need to see."""


@dataclass(frozen=True)
class Osc:
    """An Operating System Command, without its introducer and terminator."""

    body: bytes

    def sequence(self) -> bytes:
        """The whole sequence again, ended by ST (what ended it in the output is not kept)."""
        return b"\x1b]" + self.body + b"\x1b\\"

    def is_mark(self) -> bool:
        """A shell-integration mark's number (OSC 133 or 633), whoever's and however it is made."""
        return self.body.startswith((b"133;", b"633;"))


@dataclass(frozen=True)
class Mark:
    """A shell-integration mark (OSC 133 or 633) such as prompt start or command end."""

    family: int
    kind: str
    args: tuple[str, ...]


_MARK = re.compile(rb"(133|633);([A-Za-z])(?:;(.*))?", re.DOTALL)


def decode_mark(osc: Osc) -> Mark | None:
    """Read `osc` as a shell-integration mark; None when it is any other OSC.

    Arguments keep the shell's own escaping (such as ``\\x3b``): callers compare
    them or show them, and neither needs them unescaped.
    """
    match = _MARK.fullmatch(osc.body)
    if match is None:
        return None
    family, kind, rest = match.groups()
    args = () if rest is None else tuple(field.decode("utf-8", "replace") for field in rest.split(b";"))
    return Mark(int(family), kind.decode("ascii"), args)


def _find_introducer(buf: bytes, pos: int, end: int) -> tuple[int, int] | None:
    """Span of the next OSC introducer in buf[pos:end], if any.

    Output without any 0x9d byte (most of it) is served by `bytes.find`, several
    times faster than the regex that 0x9d needs.
    """
    if buf.find(b"\x9d", pos, end) < 0:
        start = buf.find(b"\x1b]", pos, end)
        return None if start < 0 else (start, start + 2)
    match = _OSC_START.search(buf, pos, end)
    return None if match is None else match.span()


class _State(Enum):
    GROUND = auto()
    OSC = auto()
    OSC_8BIT = auto()  # inside an OSC begun by a raw 0x9d, not yet known to be one
    DISCARD = auto()  # inside an OSC whose body outgrew MAX_OSC_BODY


class SequenceParser:
    """Incrementally split a PTY byte stream into output bytes and `Osc` items, in order.

    Items do not depend on where the stream was cut into reads, except that
    adjacent output bytes may come as one item or several.  An OSC whose body is
    longer than MAX_OSC_BODY yields no item at all: a cut-down body could be
    mistaken for a different, valid sequence. An OSC begun by a raw 0x9d yields an
    item only when complete; otherwise its bytes come back as output.
    """

    def __init__(self) -> None:
        self._state = _State.GROUND
        self._body = bytearray()
        self._context = b""  # the last bytes seen before _pending, for the UTF-8 look-behinds
        self._pending = b""  # a trailing ESC or 0xc2, whose meaning depends on the byte after it

    def feed(self, data: bytes) -> list[bytes | Osc]:
        """Consume the next read; return what it completes, holding back only a trailing ESC or 0xc2."""
        if self._plain(data):  # most of a flood of output: no sequence can begin or end in it
            self._context = (self._context + data[-_LOOKBEHIND:])[-_LOOKBEHIND:]  # not a copy of all of it
            return [data] if data else []
        buf = self._context + self._pending + data
        pos = len(self._context)
        end = len(buf) - 1 if buf.endswith(_HELD) else len(buf)
        items: list[bytes | Osc] = []
        while pos < end:
            if self._state is _State.GROUND:
                pos = self._scan_output(buf, pos, end, items)
            elif self._state is _State.OSC_8BIT:
                pos = self._scan_8bit_osc(buf, pos, end, items)
            else:
                pos = self._scan_osc(buf, pos, end, items)
        self._context = buf[max(0, end - _LOOKBEHIND) : end]
        self._pending = buf[end:]
        return items

    def _plain(self, data: bytes) -> bool:
        return (
            self._state is _State.GROUND and not self._pending and not data.endswith(_HELD)
            and b"\x1b" not in data and b"\x9d" not in data
        )

    def flush(self) -> list[bytes | Osc]:
        """End the stream: an unterminated OSC ends as if aborted, a held-back ESC is output."""
        items: list[bytes | Osc] = []
        if self._state is _State.OSC_8BIT:
            self._give_back(items)
        elif self._state is not _State.GROUND:
            self._end_osc(items)
        if self._pending:
            items.append(self._pending)
        self._context = self._pending = b""
        return items

    def _scan_output(self, buf: bytes, pos: int, end: int, items: list[bytes | Osc]) -> int:
        introducer = _find_introducer(buf, pos, end)
        stop = end if introducer is None else introducer[0]
        if stop > pos:
            items.append(buf[pos:stop])
        if introducer is None:
            return end
        eight_bit = introducer[1] - introducer[0] == 1
        self._state = _State.OSC_8BIT if eight_bit else _State.OSC
        return introducer[1]

    def _scan_8bit_osc(self, buf: bytes, pos: int, end: int, items: list[bytes | Osc]) -> int:
        match = _OSC_8BIT_END.search(buf, pos, end)
        stop = end if match is None else match.start()
        if len(self._body) + stop - pos > MAX_OSC_BODY:
            self._give_back(items)
            return pos
        self._body += memoryview(buf)[pos:stop]
        if match is None:
            return end
        terminator = match.group()
        if terminator == _ESC and buf[stop + 1 : stop + 2] == b"\\":
            terminator = b"\x1b\\"
        elif terminator not in (b"\x07", b"\x9c", b"\xc2\x9c"):
            self._give_back(items)
            return stop
        self._state = _State.OSC
        self._end_osc(items)
        return stop + len(terminator)

    def _give_back(self, items: list[bytes | Osc]) -> None:
        """What looked like the start of an 8-bit OSC was not one: it is output, as it came."""
        items.append(_EIGHT_BIT_INTRODUCER + bytes(self._body))
        self._body = bytearray()
        self._state = _State.GROUND

    def _scan_osc(self, buf: bytes, pos: int, end: int, items: list[bytes | Osc]) -> int:
        match = _OSC_END.search(buf, pos, end)
        stop = end if match is None else match.start()
        self._collect(memoryview(buf)[pos:stop])
        if match is None:
            return end
        self._end_osc(items)
        return stop if match.group() == _ESC else match.end()

    def _collect(self, chunk: memoryview) -> None:
        if self._state is _State.OSC and len(self._body) + len(chunk) > MAX_OSC_BODY:
            self._body = bytearray()
            self._state = _State.DISCARD
        if self._state is _State.OSC:
            self._body += chunk

    def _end_osc(self, items: list[bytes | Osc]) -> None:
        if self._state is _State.OSC:
            items.append(Osc(bytes(self._body)))
        self._body = bytearray()
        self._state = _State.GROUND

"""A command's bytes passed on to a terminal that is not its own: all it draws, nothing that makes
that terminal answer.

Runs in: the caller that shows a person a run they do not type to (`attach` and `watch` of
another's session, a pretty run's live output with `--no-input`). A person's own command at their
own terminal gets none of this: there, as at a plain terminal, its questions are theirs to answer.

A terminal answers some sequences by typing the answer into its own input: where the cursor is,
what the terminal is, the state of a mode or setting, its title, its colours, the clipboard (and
ENQ has it type its answerback message). For the command's own terminal that input is the command,
which asked, and safe-run's terminal answers the questions programs wait for (`queries.py`).
Passed on to a person's terminal, the same question is answered again, into the person's input:
while attached to the command a second time, while watching into nothing, and after safe-run
returns into the person's own shell, which reads it as typed; a title report types back text the
command chose (the answerback injection of old terminals). So a sequence that may make a terminal
type is never passed on, as tmux, between its programs and the terminal outside, answers or drops
them; the rule is `asks`, and what it drops is listed in its tables.

What a terminal reads as something else is also put right: malformed UTF-8 goes on as U+FFFD (a
raw byte 0x80-0x9F is a C1 control to a terminal that reads 8-bit ones: 0x9B is CSI), C1 controls
written as UTF-8 characters go on as the 7-bit sequences they stand for, and a CSI or escape that a
control interrupts is dropped (a terminal runs the control and goes on reading the sequence). A
sequence cut by a read is held until the next read ends it; one that grows past HOLD_LIMIT without
an end is dropped whole, its end included.
"""

from __future__ import annotations

import codecs
import re

from . import escapes
from .escapes import c1_as_esc

HOLD_LIMIT = 64 * 1024
"""The longest unfinished sequence held for the next read; a longer one is dropped whole."""

ENQ = 0x05
ST = b"\x1b\\"  # alone, after a string that was dropped (or never begun): it ends nothing
_SEQUENCE = escapes.binary(
    escapes.CSI, escapes.STRING + escapes.STRING_END + "?", escapes.ESCAPE, chr(ENQ),
)
# What `_unasked` must look at: every string, each CSI whose final byte some question ends with,
# ESC Z, ST, ENQ, and any CSI or escape a byte outside its grammar interrupts (the next byte is no
# parameter, intermediate or final). Every ESC begins a sequence and no string's body holds one,
# so matching at ESCs alone keeps to the grammar, and colours and moves go on without a look.
_MAY_ASK = escapes.binary(
    escapes.STRING + escapes.STRING_END + "?",
    r"\x1b\[[<=>?]?[0-?]*[ -/]*[ncqpxSuwyv|R~t]",
    r"\x1b\[\?[0-?]*[ -/]*m",
    r"\x1b\[[0-?]*[ -/]*(?![ -~])",
    r"\x1bZ|\x1b\\",
    r"\x1b[ -/]*(?![ -~])",
    chr(ENQ),
)
_CSI = re.compile(rb"\x1b\[([<=>?]?)([0-?]*)([ -/]*)([@-~])\Z")
_STRINGS = (b"]", b"P", b"X", b"^", b"_")  # after ESC: OSC, DCS, SOS, PM, APC
_C0 = re.compile(rb"[\x00-\x1f]")

# (private marker, intermediates, final) of each CSI a terminal answers, or that only a terminal sends.
_CSI_QUESTIONS = frozenset({
    (b"", b"", b"n"), (b"?", b"", b"n"),  # DSR: status, cursor position, and the private reports
    (b"", b"", b"c"), (b">", b"", b"c"), (b"=", b"", b"c"),  # device attributes, primary to tertiary
    (b">", b"", b"q"),  # XTVERSION: name and version
    (b"", b"$", b"p"), (b"?", b"$", b"p"),  # DECRQM: a mode's state
    (b"", b"", b"x"),  # DECREQTPARM: terminal parameters
    (b"?", b"", b"S"),  # XTSMGRAPHICS: graphics limits
    (b"?", b"", b"m"),  # XTQMODKEYS: key modifier options
    (b"?", b"", b"u"),  # the keyboard protocol's flags (kitty)
    (b"", b"$", b"w"), (b"", b"$", b"u"), (b"", b"&", b"u"),  # DECRQPSR, DECRQTSR, DECRQUPSS: state reports
    (b"", b"*", b"y"),  # DECRQCRA: a checksum of what the screen shows
    (b"", b'"', b"v"), (b"", b"'", b"|"),  # DECRQDE, DECRQLP: displayed extent, locator position
    (b"", b"#", b"|"), (b"", b"#", b"R"),  # XTREPORTSGR, XTREPORTCOLORS
    (b"", b"", b"~"),  # not a question but input, never drawing: a function key, a paste's start or end
})
# CSI Ps t reports: window state, position and sizes, icon label and title.
_WINDOW_REPORTS = frozenset({b"11", b"13", b"14", b"15", b"16", b"18", b"19", b"20", b"21"})

# OSC numbers that only carry text: titles, the working directory, links, prompt marks.
_OSC_TEXT = frozenset({b"0", b"1", b"2", b"7", b"8", b"133", b"633"})
# OSC numbers that set a colour or the pointer's shape: a "?" in place of a value asks for it.
_OSC_SETTINGS = frozenset({
    b"4", b"5", b"22", b"104", b"105", *(b"%d" % n for n in (*range(10, 20), *range(110, 120))),
})
# The DCS bodies that draw: sixel images, and the marks of a synchronized update.
_DCS_DRAWING = re.compile(rb"[0-9;]*q|=[12]s\Z")


def asks(sequence: bytes) -> bool:
    """Whether passing `sequence` (one whole, 7-bit) on may make a terminal type: a question, or
    a string that makes it act on its own.

    Every OSC, DCS, APC, PM and SOS not known to draw is taken to ask (the clipboard, iTerm2's
    reports, kitty's graphics and remote control all answer, and a DCS to tmux carries anything to
    the terminal beyond it); a CSI asks when its table says so; ESC Z is DECID, the primary device
    attributes' older name. Controls inside a string's body are left out first, as terminals skip
    them there."""
    if sequence == bytes((ENQ,)) or sequence == b"\x1bZ":
        return True
    if sequence.startswith(b"\x1b["):
        return _csi_asks(sequence)
    kind = sequence[1:2]
    if kind not in _STRINGS:
        return False
    body = _C0.sub(b"", sequence[2:].removesuffix(ST))
    if kind == b"]":
        return _osc_asks(body)
    return kind != b"P" or not _DCS_DRAWING.match(body)


def _csi_asks(sequence: bytes) -> bool:
    parsed = _CSI.match(sequence)
    if parsed is None:
        return False  # cut short: `_unasked` drops it as interrupted
    marker, parameters, intermediates, final = parsed.groups()
    if (marker, intermediates, final) == (b"", b"", b"t"):
        return parameters.split(b";")[0] in _WINDOW_REPORTS
    return (marker, intermediates, final) in _CSI_QUESTIONS


def _osc_asks(body: bytes) -> bool:
    number, _, values = body.partition(b";")
    if number in _OSC_TEXT:
        return False
    return number not in _OSC_SETTINGS or any(value.startswith(b"?") for value in values.split(b";"))


class Relay:
    """The bytes to pass on, fed the command's bytes read by read."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = b""
        self._dropping = False  # the held sequence outgrew HOLD_LIMIT: none of it goes on

    def feed(self, data: bytes) -> bytes:
        """What of `data` (after what earlier reads left unfinished) may go on now."""
        data = c1_as_esc(self._held + self._decoder.decode(data).encode("utf-8"))
        self._held = b""
        if self._dropping and _unfinished_start(data) != 0:
            data, self._dropping = _after_first(data), False
        start = _unfinished_start(data)
        if start is not None:
            data, held = data[:start], data[start:]
            self._dropping = self._dropping or len(held) > HOLD_LIMIT
            # Its first two bytes and its last say what may follow it: enough to find its end.
            self._held = held[:2] + held[-1:] if self._dropping else held
        return _MAY_ASK.sub(_unasked, data) if b"\x1b" in data or bytes((ENQ,)) in data else data


def _unfinished_start(data: bytes) -> int | None:
    """Where the sequence begins that `data` ends inside of; None when it ends outside any. Any
    ESC begins a sequence, so it is the last ESC's, or a string's that a last lone ESC may end."""
    last = data.rfind(b"\x1b")
    if last < 0:
        return None
    sequence = _whole(data, last)
    if last + len(sequence) < len(data) or not _open(sequence):
        return None
    if last == len(data) - 1:
        begun = data.rfind(b"\x1b", 0, last)
        if begun >= 0 and data[begun + 1 : begun + 2] in _STRINGS and len(_whole(data, begun)) == last - begun:
            return begun
    return last


def _whole(data: bytes, start: int) -> bytes:
    """The sequence beginning at `start`, as far as `data` goes."""
    found = _SEQUENCE.match(data, start)
    return found[0] if found is not None else b""


def _open(sequence: bytes) -> bool:
    """Whether more may follow: what a sequence that ends the data lacks to be whole."""
    if sequence[1:2] in _STRINGS:
        return not sequence.endswith((b"\x07", ST))
    return _interrupted(sequence)


def _after_first(data: bytes) -> bytes:
    """`data` without the sequence it starts with."""
    first = _SEQUENCE.match(data)
    return data[first.end():] if first is not None else data


def _unasked(match: re.Match[bytes]) -> bytes:
    sequence = match[0]
    return b"" if sequence == ST or _interrupted(sequence) or asks(sequence) else sequence


def _interrupted(sequence: bytes) -> bool:
    """A CSI or escape whose final byte a control (or a byte outside the grammar) came before."""
    if sequence.startswith(b"\x1b["):
        return len(sequence) == 2 or not 0x40 <= sequence[-1] <= 0x7E
    if sequence[:1] == b"\x1b" and sequence[1:2] not in _STRINGS:
        return len(sequence) == 1 or not 0x30 <= sequence[-1] <= 0x7E
    return False

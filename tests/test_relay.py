"""What of a command's bytes goes on to a terminal that is not its own: every question a terminal
answers by typing is dropped, whole or cut between reads; what draws goes on as it came."""

from __future__ import annotations

import random

import pytest

from safe_run.core.relay import HOLD_LIMIT, Relay, asks

REPLACEMENT = "\ufffd".encode()

QUESTIONS = {
    "title report": b"\x1b[21t",
    "icon label report": b"\x1b[20t",
    "window state": b"\x1b[11t",
    "window position": b"\x1b[13t",
    "size in pixels": b"\x1b[14t",
    "size in pixels, of the text area": b"\x1b[14;2t",
    "size in characters": b"\x1b[18t",
    "screen size": b"\x1b[19t",
    "cursor position": b"\x1b[6n",
    "cursor position, private": b"\x1b[?6n",
    "status": b"\x1b[5n",
    "printer status": b"\x1b[?15n",
    "colour scheme": b"\x1b[?996n",
    "primary attributes": b"\x1b[c",
    "primary attributes, 0": b"\x1b[0c",
    "secondary attributes": b"\x1b[>c",
    "tertiary attributes": b"\x1b[=c",
    "terminal version": b"\x1b[>q",
    "mode state": b"\x1b[?2004$p",
    "ANSI mode state": b"\x1b[4$p",
    "terminal parameters": b"\x1b[x",
    "graphics limits": b"\x1b[?1;1;0S",
    "key modifier options": b"\x1b[?4m",
    "keyboard protocol flags": b"\x1b[?u",
    "presentation state": b"\x1b[1$w",
    "screen checksum": b"\x1b[1;1;1;1;24;80*y",
    "colours of a region": b"\x1b[1;1;5;5#|",
    "paste end": b"\x1b[201~",
    "paste start": b"\x1b[200~",
    "DECRQSS": b"\x1bP$qm\x1b\\",
    "DECRQSS ended by BEL": b"\x1bP$q\"p\x07",
    "XTGETTCAP": b"\x1bP+q544e\x1b\\",
    "user-defined keys": b"\x1bP0;1|17/72726d202d7266\x1b\\",
    "passed through tmux": b"\x1bPtmux;\x1b\x1b[6n\x1b\\",
    "kitty graphics (answers OK)": b"\x1b_Gi=1,a=q;\x1b\\",
    "background colour": b"\x1b]11;?\x07",
    "foreground colour": b"\x1b]10;?\x1b\\",
    "cursor colour": b"\x1b]12;?\x07",
    "palette entry": b"\x1b]4;1;?\x07",
    "palette entries": b"\x1b]4;1;rgb:00/00/00;2;?\x07",
    "clipboard read": b"\x1b]52;c;?\x07",
    "clipboard write": b"\x1b]52;c;cm0gLXJmIH4K\x07",
    "iTerm2 report": b"\x1b]1337;ReportCellSize\x07",
    "xterm's allowed features": b"\x1b]60\x07",
    "answerback": b"\x05",
    "DECID": b"\x1bZ",
    "8-bit CSI as a character": "\u009b6n".encode(),
    "8-bit DCS as a character": "\u0090$qm\u009c".encode(),
    "8-bit OSC as a character": "\u009d11;?\u0007".encode(),
    "DECID as a character": "\u009a".encode(),
    "controls inside a string": b"\x1bP$\x00q\x01m\x1b\\",
}

DRAWING = {
    "colours": b"\x1b[1;31mred\x1b[0m",
    "256 colours": b"\x1b[38;5;208mo\x1b[m",
    "cursor moves": b"\x1b[H\x1b[10;5H\x1b[2A\x1b[3C",
    "erase": b"\x1b[2J\x1b[K",
    "scroll region and scroll": b"\x1b[1;20r\x1b[3S",
    "alternate screen": b"\x1b[?1049h\x1b[?1049l",
    "hidden cursor": b"\x1b[?25l\x1b[?25h",
    "cursor shape": b"\x1b[2 q",
    "window title": b"\x1b]0;make: building\x07",
    "window title asking nothing": b"\x1b]2;?\x1b\\",
    "hyperlink": b"\x1b]8;;https://example.com/?q=1\x1b\\link\x1b]8;;\x1b\\",
    "palette set": b"\x1b]4;1;rgb:ff/00/00\x07",
    "prompt mark": b"\x1b]133;A\x07",
    "synchronized update": b"\x1bP=1s\x1b\\x\x1bP=2s\x1b\\",
    "sixel image": b"\x1bPq#0;2;0;0;0~-\x1b\\",
    "save and restore the cursor": b"\x1b7\x1b8",
    "charset": b"\x1b(B\x1b(0q\x1b(B",
    "keypad mode": b"\x1b=\x1b>",
    "text": "plain text, accents é and wide 漢字\r\n\ttab\x08\x07".encode(),
    "NEL as a character": "a\u0085b".encode(),
}


@pytest.mark.parametrize("sequence", QUESTIONS.values(), ids=QUESTIONS.keys())
def test_a_question_goes_nowhere(sequence: bytes) -> None:
    assert Relay().feed(b"before" + sequence + b"after") == b"beforeafter"


@pytest.mark.parametrize("data", DRAWING.values(), ids=DRAWING.keys())
def test_what_draws_goes_on_as_it_came(data: bytes) -> None:
    expected = data.replace("\u0085".encode(), b"\x1bE")  # C1 as a character: its 7-bit form
    assert Relay().feed(data) == expected


def test_a_question_cut_anywhere_by_reads_goes_nowhere_and_the_drawing_around_it_goes_on() -> None:
    stream = b"".join([DRAWING["colours"], *QUESTIONS.values(), DRAWING["cursor moves"], DRAWING["text"]])
    whole = Relay().feed(stream)
    assert whole == DRAWING["colours"] + DRAWING["cursor moves"] + DRAWING["text"]
    for cut in range(1, len(stream)):
        relay = Relay()
        assert relay.feed(stream[:cut]) + relay.feed(stream[cut:]) == whole, cut
    relay = Relay()
    assert b"".join(relay.feed(stream[at:at + 1]) for at in range(len(stream))) == whole


def test_questions_mixed_with_drawing_in_any_order_and_reads_leave_only_the_drawing() -> None:
    pieces = [*((True, sequence) for sequence in QUESTIONS.values()), *((False, data) for data in DRAWING.values())]
    chance = random.Random(7)
    for _ in range(300):
        chosen = chance.choices(pieces, k=12)
        stream = b"".join(data for _, data in chosen)
        expected = Relay().feed(b"".join(data for asked, data in chosen if not asked))
        cuts = sorted(chance.sample(range(1, len(stream)), 5))
        relay = Relay()
        shown = b"".join(relay.feed(stream[a:b]) for a, b in zip([0, *cuts], [*cuts, len(stream)]))
        assert shown == expected, (chosen, cuts)


def test_malformed_utf8_goes_on_as_replacement_characters() -> None:
    assert Relay().feed(b"a\xff\xfeb") == b"a" + REPLACEMENT * 2 + b"b"
    assert Relay().feed(b"\x9b6n") == REPLACEMENT + b"6n", "a raw 8-bit CSI is no CSI any more"
    assert Relay().feed(b"\xed\xa0\x80") == REPLACEMENT * 3, "an encoded surrogate is malformed too"
    relay = Relay()
    assert relay.feed(b"caf\xc3") == b"caf", "a character cut by a read waits for its end"
    assert relay.feed(b"\xa9!") == "é!".encode()


def test_a_sequence_a_control_interrupts_is_dropped() -> None:
    """A terminal runs a control inside a CSI or escape and goes on reading it: `ESC [ 6 BEL n` is
    a bell and a cursor position question, so the sequence goes, the control and the rest stay."""
    assert Relay().feed(b"\x1b[6\x07n") == b"\x07n"
    assert Relay().feed(b"\x1b\x07Z") == b"\x07Z"
    assert Relay().feed(b"\x1b\x1b[c!") == b"!"


def test_an_unfinished_sequence_longer_than_the_limit_is_dropped_whole() -> None:
    relay = Relay()
    assert relay.feed(b"x\x1bP$q" + b"a" * (HOLD_LIMIT + 1)) == b"x"
    assert relay.feed(b"a" * HOLD_LIMIT) == b"", "its body goes nowhere"
    assert relay.feed(b"m\x1b\\after") == b"after", "nor does its end; what follows goes on"
    relay = Relay()
    assert relay.feed(b"\x1b[" + b"0" * (HOLD_LIMIT + 1)) == b""
    assert relay.feed(b"6n\x1b[1mbold") == b"\x1b[1mbold"


def test_the_rule_on_single_sequences() -> None:
    assert asks(b"\x1b[6n") and asks(b"\x1b[?6n") and asks(b"\x1b[21t") and asks(b"\x1b[14;2t")
    assert not asks(b"\x1b[>4n"), "a modifier setting, not a question"
    assert not asks(b"\x1b[22;0t") and not asks(b"\x1b[8;24;80t"), "title stack and window size: no answers"
    assert not asks(b"\x1b[2 q") and not asks(b"\x1b[3S"), "cursor shape, scroll: drawing"
    assert not asks(b"\x1b]2;what?\x07") and not asks(b"\x1b]0;?\x07"), "a title is text, whatever it says"
    assert asks(b"\x1b]777;notify;a;b\x07"), "an OSC not known to draw"
    assert asks(b"\x1bX\x1b\\") and asks(b"\x1b^pm\x1b\\"), "SOS and PM draw nothing"

import random
import re

import pytest

from safe_run.core import escapes


@pytest.mark.parametrize(
    ("data", "start"),
    [
        (b"text", None),
        (b"text\x1b", 4),
        (b"text\x1b[3", 4),
        (b"text\x1b[31m", None),
        (b"text\x1b]0;title", 4),
        (b"text\x1b]0;title\x07", None),
        (b"text\x1b(", 4),
        (b"text\x1b(B", None),
        ("text\u009b3".encode(), 4),
    ],
)
def test_unfinished_start(data: bytes, start: int | None) -> None:
    assert escapes.unfinished_start(data, 256) == start


def test_overrun_counts_the_rest_of_a_sequence_begun_before() -> None:
    assert escapes.overrun(b"ab\x1b[3", b"1mred") == 2
    assert escapes.overrun(b"ab", b"\x1b[31mred") == 0


PIECES = (b"\x1b", b"\x1b[", b"31", b";", b"m", b"\x1b]0;", b"\x07", b"\xc2", b"\xc2\x9b", b"\xc2\x9d", b"(", b"B",
          b"x", "\u00e9".encode(), b"\n")


def test_overrun_is_where_the_first_sequence_begun_before_ends_in_a_scan_of_the_whole() -> None:
    """Against the plain definition: every sequence found scanning `before + after` from the start,
    the last one begun in `before`."""
    rng = random.Random(7)
    for _ in range(3000):
        before = b"".join(rng.choices(PIECES, k=rng.randrange(6)))
        after = b"".join(rng.choices(PIECES, k=rng.randrange(6)))
        expected = 0
        for found in escapes._SEQUENCE.finditer(before + after):
            if found.start() < len(before):
                expected = found.end() - len(before)
        assert escapes.overrun(before, after) == max(0, expected), (before, after)


def test_one_grammar_for_text_and_bytes() -> None:
    parts = (escapes.STRING, escapes.CSI, escapes.ESCAPE, escapes.SILENT_CONTROL)
    raw = b"a\x1b]0;t\x07b\x1b[1;31mc\x1b(Bd\x00e"
    assert escapes.binary(*parts).sub(b"", raw) == b"abcde"
    assert escapes.text(*parts).sub("", raw.decode()) == "abcde"


def test_raw_c1_only_where_no_character_contains_it() -> None:
    osc = re.compile(escapes.raw_c1(b"\x9d"))
    assert osc.search(b"a\x9d") is not None
    assert osc.search("\u015d".encode()) is None  # U+015D ends in 0x9d
    assert escapes.c1_as_esc("\u009b31m".encode()) == b"\x1b[31m"


@pytest.mark.parametrize(
    ("data", "length"),
    [
        (b"text", 0),
        (b"text\x1b[3", 3),
        ("text\u00e9".encode()[:-1], 1),  # the first byte of a two-byte character
        ("text\u20ac".encode()[:-1], 2),
        ("text\u20ac".encode(), 0),
        (b"text\x1b]0;caf\xc3", 8),  # inside a string, the sequence is what is held
    ],
)
def test_unfinished_length_holds_a_cut_character_or_sequence(data: bytes, length: int) -> None:
    assert escapes.unfinished_length(data) == length


def test_alternate_switch_among_other_modes() -> None:
    found = [m[1] for m in escapes.ALTERNATE_SWITCH.finditer(b"\x1b[?1049h\x1b[?25l\x1b[?1;47l\x1b[?1047;1h")]
    assert found == [b"h", b"l", b"h"]


@pytest.mark.parametrize(("data", "before", "expected"), [
    (b"abc", True, False),
    (b"abc\r\n", False, True),
    (b"x\r\n\x1b[0m\x1b]0;title\x07", False, True),  # only sequences after the line end
    (b"\x1b[31m", True, True),  # shows nothing: as before
    (b"\x1b[31m", False, False),
    (b"a\n\x1b[31mb", True, False),
    (b"a\x1b]0;two\nlines\x07", True, False),  # that newline is the title's, not the screen's
    (b"a\x1b]0;unfinished\n", False, False),
    (b"quit\r\n\x1b[?2004l\r", False, True),  # bc's readline: a return on the empty line after
    (b"\r", True, True),
    (b"abc\r", True, False),  # back at the start of a line that has text
    (b"\x1b[?2004l\r", False, False),
])
def test_ends_line_looks_at_what_the_terminal_shows_last(data: bytes, before: bool, expected: bool) -> None:
    assert escapes.ends_line(data, before) is expected


def test_alternate_switches_are_found_in_order_and_none_where_there_is_no_escape() -> None:
    data = b"a\x1b[?1049hdrawn\x1b[31m\x1b[?1049lb"
    assert [m[1] for m in escapes.alternate_switches(data)] == [b"h", b"l"]
    assert [m[1] for m in escapes.alternate_switches(data, data.index(b"drawn"))] == [b"l"]
    assert list(escapes.alternate_switches(b"\x1b[31mred\x1b[0m" * 100)) == []
    assert list(escapes.alternate_switches(b"plain text\r\n" * 100)) == []


@pytest.mark.parametrize(("command", "shown"), [
    ("echo hi", b"echo hi"),
    ("a\x1b[31mb\nc\x7f\td", b"a^[[31mb\r\nc^?\td"),  # a control is shown, never acted on
    ("x\u009by é", b"x?y \xc3\xa9"),
    ("y" * (escapes.TYPED_SHOWN_MAX + 5), b"y" * escapes.TYPED_SHOWN_MAX + " …".encode()),
])
def test_a_command_is_shown_as_a_terminal_shows_it_typed(command: str, shown: bytes) -> None:
    assert escapes.as_typed(command) == shown

import re

import pytest

from safe_run import escapes


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

import tracemalloc
from collections.abc import Iterable

import pytest

from safe_run.core.sequences import MAX_OSC_BODY, Mark, Osc, SequenceParser, decode_mark

Item = bytes | Osc


def merged(items: Iterable[Item]) -> list[Item]:
    result: list[Item] = []
    for item in items:
        if isinstance(item, bytes) and result and isinstance(result[-1], bytes):
            result[-1] += item
        else:
            result.append(item)
    return result


def parse(*chunks: bytes) -> list[Item]:
    parser = SequenceParser()
    items = [item for chunk in chunks for item in parser.feed(chunk)]
    items += parser.flush()
    assert b"" not in items
    return merged(items)


def frame(items: list[Item], introducer: bytes, terminator: bytes) -> bytes:
    return b"".join(item if isinstance(item, bytes) else introducer + item.body + terminator for item in items)


BASH_SESSION: list[Item] = [
    Osc(b"633;A;n0nce"),
    b"\x1b[1;32muser@host\x1b[0m:~$ ",
    Osc(b"633;B;n0nce"),
    b"echo hi\r\n",
    Osc(b"633;C;n0nce"),
    b"h",
    Osc(b"0;title"),
    b"i\r\n",
    Osc(b"633;D;0;n0nce"),
    Osc(b"633;A;n0nce"),
    b"$ ",
]

UTF8_SESSION: list[Item] = [
    Osc(b"633;A;n0nce"),
    "ŝ😝 café 😜\r\n".encode(),
    Osc("0;ŝ😜😝".encode()),
    "😝".encode(),
    Osc(b"633;D;0;n0nce"),
    "ĝŝ".encode(),
]

SESSIONS = [
    (BASH_SESSION, b"\x1b]", b"\x07"),
    (BASH_SESSION, b"\x1b]", b"\x1b\\"),
    (BASH_SESSION, b"\x9d", b"\x9c"),
    (BASH_SESSION, b"\x9d", b"\x07"),
    (BASH_SESSION, b"\x1b]", b"\x9c"),
    (UTF8_SESSION, b"\x9d", b"\x9c"),
    (UTF8_SESSION, b"\x1b]", b"\x1b\\"),
]


@pytest.mark.parametrize(("session", "introducer", "terminator"), SESSIONS)
def test_session_parses_the_same_however_it_is_split(
    session: list[Item], introducer: bytes, terminator: bytes
) -> None:
    stream = frame(session, introducer, terminator)
    assert parse(stream) == session
    for i in range(len(stream) + 1):
        assert parse(stream[:i], stream[i:]) == session, i
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == session


def test_every_osc_number_is_taken_out_of_the_output() -> None:
    stream = b"\x1b]8;;https://x.org\x07link\x1b]8;;\x07\x1b]7;file://h/tmp\x1b\\\x1b]52;c;aGk=\x07"
    assert parse(stream) == [Osc(b"8;;https://x.org"), b"link", Osc(b"8;;"), Osc(b"7;file://h/tmp"), Osc(b"52;c;aGk=")]


def test_other_escape_sequences_and_8_bit_st_outside_an_osc_are_output() -> None:
    stream = b"\x1b[31mred\x1b[0m\x1b(B\x1b\x1b\\\x9c\x1bP1$r\x1b\\"
    assert parse(stream) == [stream]


def test_all_of_unicode_passes_through_byte_for_byte() -> None:
    text = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF).encode()
    assert parse(text) == [text]
    assert parse(*(text[i : i + 4093] for i in range(0, len(text), 4093))) == [text]


@pytest.mark.parametrize("before", [b"a", b"\xc5\x9d", b"\x80", b"\xe0\x80", b"\xf4\x90\x80"])
def test_8_bit_introducer_after_anything_but_an_utf8_prefix(before: bytes) -> None:
    assert parse(before + b"\x9d633;D;0\x9cz") == [before, Osc(b"633;D;0"), b"z"]
    assert parse(before, b"\x9d633;D;0\x9cz") == [before, Osc(b"633;D;0"), b"z"]


@pytest.mark.parametrize("prefix", [b"\xc5", b"\xe1\x80", b"\xed\x9f", b"\xf0\x9f\x98", b"\xf3\xbf"])
def test_9c_and_9d_continuing_an_utf8_prefix_are_not_controls(prefix: bytes) -> None:
    assert parse(prefix + b"\x9d633;A\x07") == [prefix + b"\x9d633;A\x07"]
    assert parse(b"\x1b]0;" + prefix + b"\x9c\x07") == [Osc(b"0;" + prefix + b"\x9c")]


def test_esc_aborts_an_osc_and_then_counts_as_the_start_of_what_follows() -> None:
    stream = b"\x1b]0;ti\x1b[31mred\x1b]0;a\x1b]633;B\x07\x1b]0;b\x1b\x1b]633;C\x07"
    expected = [Osc(b"0;ti"), b"\x1b[31mred", Osc(b"0;a"), Osc(b"633;B"), Osc(b"0;b"), b"\x1b", Osc(b"633;C")]
    assert parse(stream) == expected
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == expected


def test_stray_8_bit_introducer_is_output_with_everything_after_it() -> None:
    stream = b"a\x9db\r\nc\r\n\x1b]633;D;0;n\x07"
    expected = [b"a\x9db\r\nc\r\n", Osc(b"633;D;0;n")]
    assert parse(stream) == expected
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == expected


@pytest.mark.parametrize(
    "after", [b"0;b\x1b[0m", b"0;b\x1bx", b"0;b\x1b", b"0;b", b"0;b\x00c", b"0;b\tc\x07"]
)
def test_8_bit_osc_aborted_cut_or_with_controls_in_its_body_is_output(after: bytes) -> None:
    assert parse(b"x\x9d" + after) == [b"x\x9d" + after]
    assert parse(b"x\x9d", after) == [b"x\x9d" + after]


@pytest.mark.parametrize("terminator", [b"\x07", b"\x9c", b"\x1b\\", "\u009c".encode()])
def test_complete_8_bit_osc_is_taken_out_with_any_terminator(terminator: bytes) -> None:
    stream = b"x\x9d0;t\xc3\xa9" + terminator + b"y"
    assert parse(stream) == [b"x", Osc("0;té".encode()), b"y"]
    assert parse(*(stream[i : i + 1] for i in range(len(stream)))) == [b"x", Osc("0;té".encode()), b"y"]


def test_8_bit_osc_over_the_limit_is_output() -> None:
    body = b"A" * (MAX_OSC_BODY + 10)
    stream = b"x\x9d" + body + b"\x07y"
    chunks = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    assert parse(stream) == parse(*chunks) == [stream]


def test_body_up_to_the_limit_is_kept() -> None:
    body = b"52;c;" + b"A" * (MAX_OSC_BODY - 5)
    assert parse(b"\x1b]" + body + b"\x07") == [Osc(body)]


@pytest.mark.parametrize(
    ("terminator", "output"), [(b"\x07", b""), (b"\x1b\\", b""), (b"\x9c", b""), (b"\x1b[0m", b"\x1b[0m")]
)
def test_body_over_the_limit_is_dropped_up_to_its_terminator(terminator: bytes, output: bytes) -> None:
    body = b"52;c;" + b"A" * (MAX_OSC_BODY - 4)
    stream = b"before\x1b]" + body + terminator + b"after\x1b]133;A\x07"
    chunks = [stream[i : i + 4096] for i in range(0, len(stream), 4096)]
    assert parse(stream) == parse(*chunks) == [b"before" + output + b"after", Osc(b"133;A")]


def test_unterminated_osc_memory_stays_bounded() -> None:
    parser = SequenceParser()
    parser.feed(b"\x1b]52;c;")
    chunk = b"A" * 4096
    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        for _ in range(1024):
            assert parser.feed(chunk) == []
        held = tracemalloc.get_traced_memory()[0] - baseline
    finally:
        tracemalloc.stop()
    assert held < 2 * MAX_OSC_BODY
    assert merged(parser.feed(b"\x07ok") + parser.flush()) == [b"ok"]


def test_lone_trailing_esc_is_held_until_the_next_byte_or_flush() -> None:
    parser = SequenceParser()
    assert parser.feed(b"ab\x1b") == [b"ab"]
    assert parser.flush() == [b"\x1b"]
    assert parser.feed(b"\x1b") == []
    assert merged(parser.feed(b"[0m")) == [b"\x1b[0m"]


def test_flush_ends_an_unterminated_osc_like_an_abort() -> None:
    assert parse(b"x\x1b]633;D;0") == [b"x", Osc(b"633;D;0")]
    assert parse(b"x\x1b]633;D;0\x1b") == [b"x", Osc(b"633;D;0"), b"\x1b"]


@pytest.mark.parametrize(
    ("body", "mark"),
    [
        (b"633;D;0;n0nce", Mark(633, "D", ("0", "n0nce"))),
        (b"133;A", Mark(133, "A", ())),
        (b"633;E;echo \\x3b hi;n", Mark(633, "E", ("echo \\x3b hi", "n"))),
        (b"633;P;Cwd=/tmp/\xc3\xa9\xff", Mark(633, "P", ("Cwd=/tmp/é\ufffd",))),
        (b"133;D;", Mark(133, "D", ("",))),
        (b"0;title", None),
        (b"633", None),
        (b"633;", None),
        (b"633;AB;x", None),
        (b"633;1", None),
        (b"1633;A", None),
    ],
)
def test_decode_mark(body: bytes, mark: Mark | None) -> None:
    assert decode_mark(Osc(body)) == mark

import json
import random
import tracemalloc
from dataclasses import dataclass

import pytest

from safe_run.core.output import Chunks, HeadTail, clean, cleaned_size, shown


def marker(dropped: int) -> str:
    return f"[... {dropped} bytes of output omitted ...]\n"


# clean: escape sequences


def test_colour_codes_are_removed() -> None:
    assert clean(b"\x1b[1;31mred\x1b[0m and \x1b[38;2;10;20;30mrgb\x1b[m\n") == "red and rgb\n"


def test_eight_bit_csi_is_removed() -> None:
    assert clean("\u009b31mred\u009b0m text".encode()) == "red text"


def test_private_and_intermediate_csi_are_removed() -> None:
    assert clean(b"\x1b[?25lhidden cursor\x1b[?25h\x1b[2 q") == "hidden cursor"


def test_osc_title_and_hyperlink_leftovers_are_removed() -> None:
    raw = b"\x1b]0;my title\x07before \x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ after"
    assert clean(raw) == "before link after"


def test_dcs_pm_apc_and_eight_bit_strings_are_removed() -> None:
    raw = b"a\x1bPq#0;2;0;0;0\x1b\\b\x1b^private\x1b\\c\x1b_app\x07d" + "\u009d0;t\u009ce".encode()
    assert clean(raw) == "abcde"


def test_string_without_terminator_stops_at_next_escape() -> None:
    assert clean(b"\x1b]0;title\x1b[31mred") == "red"


def test_charset_and_short_escapes_are_removed() -> None:
    assert clean(b"\x1b(Babc\x1b)0\x1b=\x1b>\x1b7def\x1b8\x1bM\x1bc") == "abcdef"


@pytest.mark.parametrize(
    "raw",
    [b"done\x1b", b"done\x1b[", b"done\x1b[38;5", b"done\x1b]0;tit", b"done\x1b(", b"done\xc2\x9b3"],
)
def test_truncated_sequence_at_end_is_removed(raw: bytes) -> None:
    assert clean(raw) == "done"


def test_cursor_movement_and_screen_redraw_are_stripped_in_order() -> None:
    assert clean(b"\x1b[H\x1b[2Jtop\x1b[2A\x1b[10Cnext\x1b[3;4Hlast") == "topnextlast"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"abcdef\x1b[3Dxy", "abcxyf"),
        (b"abcdef\x1b[2Dx\x1b[0Dy", "abcdyf"),
        (b"> \r\x1b[12Canswer", "> " + " " * 10 + "answer"),
        (b"ab\x1b[3Cc", "ab   c"),
        (b"ab\x1b[3C\n", "ab\n"),
        (b"abcdef\r\x1b[2C\x1b[2@XY", "abXYcdef"),
        (b"abcdef\r\x1b[2C\x1b[2P", "abef"),
        (b"abcdef\r\x1b[2C\x1b[3X", "ab   f"),
        (b"abcdef\x1b[3G!", "ab!def"),
        (b"abcdef\r\x1b[1C\x1b[K!", "a!"),
    ],
)
def test_moves_and_edits_along_the_line_are_replayed(raw: bytes, shown: str) -> None:
    assert clean(raw) == shown


def test_fish_read_prompt_redrawn_over_its_answer() -> None:
    # What fish 3 sends for `read -P 'name> ' x` answered with "bob".
    raw = b"\x1b[30m\x1b(B\x1b[m\rname> \x1b[K\r\x1b[6Cbob\r\x1b[9C\r\n\x1b[30m\x1b(B\x1b[mgot bob\r\n"
    assert clean(raw) == "name> bob\ngot bob\n"


def test_moves_along_a_line_that_left_for_another_line_are_only_removed() -> None:
    assert clean(b"top\x1b[2A\x1b[10Cnext\nabcdef\x1b[3Dxy\n") == "topnext\nabcxyf\n"


def test_hostile_counts_stay_within_a_margin() -> None:
    assert len(clean(b"a\x1b[99999999Cb")) <= 4098
    assert len(clean(b"ab" + b"\r\x1b[9999@" * 1000)) <= 4098
    assert clean(b"ab\x1b[" + b"9" * 6000 + b"D!") == "!b"


# clean: line endings and overprinting


def test_crlf_becomes_lf() -> None:
    assert clean(b"one\r\ntwo\r\n") == "one\ntwo\n"


def test_carriage_return_overwrites_from_column_zero() -> None:
    assert clean(b"abcdef\rXY") == "XYcdef"


def test_progress_frames_keep_the_last_one() -> None:
    assert clean(b"  0%\r 50%\r100%\n") == "100%\n"


def test_trailing_carriage_return_leaves_line_unchanged() -> None:
    assert clean(b"abc\r\ndef\r\r\nlast\r") == "abc\ndef\nlast"


def test_overprinting_stays_within_its_line() -> None:
    assert clean(b"first line\nab\rX\nthird\n") == "first line\nXb\nthird\n"


def test_backspace_overwrites_previous_character() -> None:
    assert clean(b"ab\bc") == "ac"


def test_backspaces_move_back_several_columns_but_not_past_zero() -> None:
    assert clean(b"abc\b\b\bXY") == "XYc"
    assert clean(b"\b\bx\b\b\by") == "y"


def test_backspace_at_end_leaves_text() -> None:
    assert clean(b"abc\b\n") == "abc\n"


def test_overstrike_bold_shows_plain_text() -> None:
    assert clean(b"N\bNA\bAM\bME\bE\n_\bu_\bl\n") == "NAME\nul\n"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        (b"abcdef\r\x1b[Kxy", "xy"),
        (b"abcdef\rab\x1b[0Kz", "abz"),
        (b"abcdef\rabc\x1b[1K", "    ef"),
        (b"abcdef\rabc\x1b[1KZ", "   Zef"),
        (b"abcdef\x1b[1K", ""),
        (b"abc\x1b[2K", ""),
        (b"abc\x1b[2Kde", "   de"),
        (b"step 1\r\x1b[Kstep 2\n", "step 2\n"),
        (b"long progress\r\x1b[2Kok\n", "ok\n"),
        ("abc\rx\u009bK".encode(), "x"),
    ],
)
def test_erase_in_line(raw: bytes, shown: str) -> None:
    assert clean(raw) == shown


def test_erase_in_line_affects_only_its_own_line() -> None:
    assert clean(b"keep\nabc\x1b[2K\nalso kept\n") == "keep\n\nalso kept\n"


def test_grep_style_colour_with_erase_to_end() -> None:
    assert clean(b"\x1b[35m\x1b[Kfile.py\x1b[m\x1b[K:\x1b[01;31m\x1b[Kmatch\x1b[m\x1b[K here\n") == "file.py:match here\n"


def test_escape_between_carriage_return_and_newline() -> None:
    assert clean(b"text\r\x1b[0m\nnext\r\x1b[K\n") == "text\n\n"


# clean: control characters, whitespace, encoding


def test_other_control_characters_are_removed() -> None:
    assert clean(b"a\x07b\x00c\x7fd\x0ce\x0bf\x1ag") == "abcdefg"


def test_c1_controls_are_removed() -> None:
    assert clean("a\u0085b\u0084c\u0080d".encode()) == "abcd"


def test_stray_c1_string_introducer_shows_and_keeps_what_follows() -> None:
    assert clean("a\u009db\nc\n\u009d0;t\u009cd".encode()) == "a\ufffdb\nc\nd"
    assert clean("a\u0090q\x07b\u009fx\x1b[31mc".encode()) == "ab\ufffdxc"


def test_stray_raw_c1_bytes_show_as_replacement_characters() -> None:
    assert clean(b"a\x9db\nc\x9b31md\n") == "a\ufffdb\nc\ufffd31md\n"


def test_tabs_are_kept() -> None:
    assert clean(b"col1\tcol2\t\tcol3\n") == "col1\tcol2\t\tcol3\n"


def test_tab_counts_as_one_column_when_overprinting() -> None:
    assert clean(b"a\tbc\rX") == "X\tbc"


def test_blank_lines_are_kept_exactly() -> None:
    assert clean(b"\n\na\n\n\nb\n\n") == "\n\na\n\n\nb\n\n"


def test_trailing_spaces_and_missing_final_newline_are_kept() -> None:
    assert clean(b"a  \nb ") == "a  \nb "
    assert clean(b"") == ""


def test_unicode_text_is_kept() -> None:
    text = "héllo ✓ 日本語 🚀 ©°±\n"
    assert clean(text.encode()) == text


def test_invalid_utf8_becomes_replacement_characters() -> None:
    result = clean(b"ok \xff\xfe bad \xc3(")
    assert result == "ok \ufffd\ufffd bad \ufffd("
    assert json.loads(json.dumps(result)) == result


def test_binary_bytes_give_json_safe_text_without_controls() -> None:
    result = clean(bytes(range(256)) * 4)
    assert isinstance(result, str)
    assert json.loads(json.dumps(result)) == result
    assert not [ch for ch in result if ord(ch) < 0x20 and ch not in "\n\t" or 0x7F <= ord(ch) < 0xA0]


def test_plain_text_passes_through_unchanged() -> None:
    text = "".join(f"{n}\n" for n in range(1, 5000))
    assert clean(text.replace("\n", "\r\n").encode()) == text


# HeadTail


def raw_cut(head: int, tail: int) -> HeadTail:
    """A head and tail of one byte of the stream per byte of text: what these tests pin is where a
    cut falls among the terminal's bytes (in a sequence, in a character, at a line break)."""
    return HeadTail(head, tail, raw_per_text=1)


def write_in_chunks(capture: HeadTail, data: bytes, sizes: list[int]) -> None:
    start = 0
    for size in sizes:
        capture.write(data[start : start + size])
        start += size
    capture.write(data[start:])


def test_nothing_dropped_equals_clean() -> None:
    data = b"\x1b[31mred\x1b[0m\n  0%\r100%\n\xc3\xa9t\xc3\xa9\nab\bc\n"
    capture = raw_cut(10, len(data) - 10)
    write_in_chunks(capture, data, [3, 1, 7, 2])
    assert capture.dropped == 0
    assert capture.total == len(data)
    assert capture.text() == clean(data)


def test_sequence_across_head_and_tail_is_whole_when_nothing_dropped() -> None:
    capture = raw_cut(4, 6)
    capture.write(b"ab\x1b[31mred")
    assert capture.dropped == 0
    assert capture.text() == "abred"


def test_small_output_with_large_limits() -> None:
    capture = raw_cut(1000, 1000)
    capture.write(b"hello\n")
    assert (capture.total, capture.dropped, capture.text()) == (6, 0, "hello\n")


def test_head_and_tail_kept_exactly_with_dropped_count() -> None:
    data = b"".join(b"line%d\n" % n for n in range(10))
    capture = raw_cut(12, 14)
    capture.write(data)
    assert capture.total == 60
    assert capture.dropped == 60 - 12 - 14
    assert capture.text() == "line0\nline1\n" + marker(34) + "7\nline8\nline9\n"


def test_marker_starts_its_own_line_when_head_is_cut_mid_line() -> None:
    capture = raw_cut(8, 4)
    capture.write(b"first\nsecond\nthird\n")
    assert capture.text() == "first\nse\n" + marker(7) + "ird\n"


@pytest.mark.parametrize(
    ("data", "head", "tail"), [(b"aaa\nbbb\nccc\nddd\n", 4, 5), (b"aaa\r\nbbb\r\nccc\r\nddd\r\n", 5, 6)],
)
def test_the_newline_of_the_last_line_dropped_is_counted_not_kept_as_a_blank_line(data: bytes, head: int, tail: int) -> None:
    capture = raw_cut(head, tail)  # the tail's window starts at the newline that ends ccc
    capture.write(data)
    assert capture.text() == "aaa\n[... 8 bytes of output omitted ...]\nddd\n"
    assert capture.dropped == 8


def test_a_blank_line_right_after_the_cut_stays() -> None:
    capture = raw_cut(4, 5)
    capture.write(b"aaa\nbbb\nccc\n\nddd\n")
    assert capture.text() == "aaa\n[... 8 bytes of output omitted ...]\n\nddd\n"


def test_only_marker_when_limits_are_zero() -> None:
    capture = raw_cut(0, 0)
    capture.write(b"abc")
    capture.write(b"def")
    assert (capture.total, capture.dropped, capture.text()) == (6, 6, marker(6))


def test_tail_only() -> None:
    capture = raw_cut(0, 3)
    capture.write(b"0123456789")
    assert capture.text() == marker(7) + "789"


def test_head_cut_inside_utf8_character() -> None:
    capture = raw_cut(3, 3)
    capture.write("ab€".encode() + b"-" * 10 + b"xyz")
    assert capture.text() == "ab\n" + marker(len("€".encode()) + 10) + "xyz"


def test_tail_cut_inside_utf8_character() -> None:
    capture = raw_cut(3, 5)
    capture.write(b"abc" + b"-" * 10 + "€z".encode() + b"end")
    assert capture.text() == "abc\n" + marker(10 + len("€".encode())) + "zend"


@pytest.mark.parametrize("tail", [5, 6, 7])
def test_tail_cut_inside_four_byte_character_after_long_gap(tail: int) -> None:
    capture = raw_cut(2, tail)
    capture.write(b"ab" + b"." * 5000 + "🚀🚀".encode())
    assert capture.text() == "ab\n" + marker(5000 + len("🚀".encode())) + "🚀"


def test_stray_continuation_bytes_at_tail_start_are_not_hidden() -> None:
    capture = raw_cut(2, 5)  # the replacement character is three bytes of text
    capture.write(b"ab----\x80xy")
    assert capture.text() == "ab\n" + marker(4) + "\ufffdxy"


def test_head_cut_inside_colour_sequence() -> None:
    capture = raw_cut(5, 3)
    capture.write(b"ab\x1b[31mred\x1b[0m------end")
    assert capture.text() == "ab\n" + marker(len("red------")) + "end"


def test_tail_cut_inside_colour_sequence_after_long_gap() -> None:
    capture = raw_cut(3, 9)
    capture.write(b"abc" + b"-" * 5000 + b"\x1b[31mred\x1b[0m")
    assert capture.text() == "abc\n" + marker(5000) + "red"


@pytest.mark.parametrize("cut", range(1, 5))
def test_tail_cut_at_every_point_of_colour_sequence(cut: int) -> None:
    prefix = b"abc" + b"-" * 20
    data = prefix + b"\x1b[31mred"
    capture = raw_cut(3, len(data) - len(prefix) - cut)
    capture.write(data)
    assert capture.text() == "abc\n" + marker(20) + "red"


def test_same_colour_sequence_cut_at_both_edges_drops_nothing_shown() -> None:
    capture = raw_cut(3, 5)
    capture.write(b"ab\x1b[31mred")
    assert (capture.text(), capture.dropped) == ("abred", 0)


def test_tail_cut_inside_eight_bit_csi() -> None:
    data = b"abc" + b"-" * 10 + b"\xc2\x9b31mred"
    capture = raw_cut(3, len(b"\x9b31mred"))
    capture.write(data)
    assert capture.text() == "abc\n" + marker(10) + "red"


def test_tail_cut_inside_osc_string() -> None:
    capture = raw_cut(3, 12)
    capture.write(b"abc" + b"-" * 50 + b"\x1b]0;a long title\x07shown")
    assert capture.text() == "abc\n" + marker(50) + "shown"


def test_tail_starting_with_whole_sequence() -> None:
    capture = raw_cut(3, 8)
    capture.write(b"abc" + b"-" * 10 + b"\x1b[31mred")
    assert capture.text() == "abc\n" + marker(10) + "red"


def test_tail_starting_with_digits_after_complete_sequence_keeps_them() -> None:
    capture = raw_cut(3, 4)
    capture.write(b"abc" + b"-" * 10 + b"\x1b[31m31mx")
    assert capture.text() == "abc\n" + marker(10) + "31mx"


def mixed_output(rng: random.Random, size: int) -> bytes:
    pieces = [b"plain text\n", b"\x1b[32mok\x1b[0m\n", "é✓🚀".encode(), b"  0%\r100%\n", b"\x1b]0;t\x07", b"ab\bc", b"\r\x1b[K", b"\n\n"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(pieces)
    return bytes(out)


@pytest.mark.parametrize("seed", range(6))
def test_many_small_writes_match_one_big_write(seed: int) -> None:
    rng = random.Random(seed)
    data = mixed_output(rng, 6000)
    head, tail = rng.randrange(0, 200), rng.randrange(0, 200)
    whole = raw_cut(head, tail)
    whole.write(data)
    pieces = raw_cut(head, tail)
    write_in_chunks(pieces, data, [rng.randrange(0, 40) for _ in range(400)])
    assert (pieces.total, pieces.dropped) == (whole.total, whole.dropped)
    assert pieces.total == len(data) and 0 < whole.dropped < len(data) - head - tail
    assert pieces.text() == whole.text()
    assert whole.text().count(marker(whole.dropped)) == 1


def test_dropped_counts_the_text_that_was_not_shown() -> None:
    data = b"".join(b"%d\r\n" % n for n in range(1, 5001))
    text = clean(data)
    capture = raw_cut(512, 512)
    write_in_chunks(capture, data, [4096] * 10)
    shown = capture.text()
    head, tail = shown.split(marker(capture.dropped))
    assert len(head) + capture.dropped + len(tail) in (len(text), len(text) + 1)  # + the marker's own newline
    assert text.startswith(head.rstrip("\n")) and text.endswith(tail)


def test_dropped_text_is_counted_in_utf8_bytes_without_escapes() -> None:
    capture = raw_cut(2, 2)
    capture.write(b"ab" + "\x1b[1mé\x1b[0m\r\n".encode() * 100 + b"yz")
    assert capture.dropped == len("é\n".encode()) * 100


def test_long_overprinted_line_is_counted_by_its_last_frame() -> None:
    capture = raw_cut(2, 2)
    capture.write(b"ab" + b"".join(b"\r%5d%%" % n for n in range(10000)) + b"\ryz")
    assert capture.dropped < 10 * 1000


@pytest.mark.parametrize("seed", range(3))
def test_cleaned_size_is_the_size_of_the_cleaned_text(seed: int) -> None:
    rng = random.Random(seed)
    pieces = [b"plain\r\n", b"\x1b[32mok\x1b[0m\r\n", "é✓".encode(), b"  0%\r100%\n", b"ab\bc", b"\r\x1b[K",
              b"\x1b[1K", "\u009dx".encode(), b"\xff", b"\x1b[3D", b"\x1b[0K"]
    for _ in range(500):
        raw = b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 8)))
        assert cleaned_size(raw) == len(clean(raw).encode()), raw


def test_retract_takes_back_text_only_where_it_ended() -> None:
    capture = raw_cut(100, 100)
    capture.write(b"working\r\nexit\r\n")
    end = capture.total
    capture.write(b"bye\r\n")
    assert not capture.retract(b"exit\r\n", end - 1)
    assert capture.retract(b"exit\r\n", end)
    assert capture.text() == "working\nbye\n"


def test_retract_in_the_tail_and_not_once_it_was_dropped() -> None:
    capture = raw_cut(4, 20)
    capture.write(b"0123456789exit\r\n")
    end = capture.total
    assert capture.retract(b"exit\r\n", end)
    assert capture.text() == "0123456789"
    capture.write(b"exit\r\n" + b"x" * 100)
    assert not capture.retract(b"exit\r\n", end + 6)


def test_the_budget_is_bytes_of_the_result_not_of_the_terminal() -> None:
    """`yes`: a terminal line is three bytes, a result line two. N bytes of text are kept, not
    two thirds of them, and the head and the tail are whole lines."""
    capture = HeadTail(32768, 32768)
    lines = 1_000_000
    for _ in range(lines // 1000):
        capture.write(b"y\r\n" * 1000)
    head, _, tail = capture.text().partition(marker(capture.dropped))
    kept = len(head.encode()) + len(tail.encode())
    assert 0.95 * 65536 <= kept <= 65536 + 1, kept
    assert head.endswith("y\n") and tail == "y\n" * (len(tail) // 2)
    assert kept + capture.dropped == 2 * lines, "every byte of text is kept or counted"


def test_a_long_output_keeps_the_same_head_tail_and_count_however_it_arrives() -> None:
    """The tail is kept as the pieces it came in, trimmed a block at a time: any split of the
    stream (pieces far smaller and far larger than a trim) gives what one write gives."""
    lines = [b"\x1b[32m%06d\x1b[0m \xc3\xa9t\xc3\xa9\r\n" % n if n % 7 else b"  0%%\r%d%%\r\n" % n for n in range(12_000)]
    data = b"".join(lines)
    whole = HeadTail(2000, 3000)
    whole.write(data)
    rng = random.Random(3)
    for _ in range(5):
        pieces = HeadTail(2000, 3000)
        start = 0
        while start < len(data):
            size = rng.choice((1, 17, 4096, 70_000, 300_000))
            pieces.write(data[start : start + size])
            start += size
        assert (pieces.total, pieces.dropped, pieces.text()) == (whole.total, whole.dropped, whole.text())


def test_a_program_that_writes_two_bytes_at_a_time_costs_no_more_memory_than_its_output() -> None:
    """A deque entry and a bytes object for each write would take some twenty times the bytes."""
    tracemalloc.start()
    try:
        capture = HeadTail(100, 10_000)
        for n in range(30_000):
            capture.write(bytes(bytearray(b"x\n" if n % 40 == 0 else b"ab")))  # each a new object, as a read's
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capture.total == 60_000 and capture.dropped > 0
    assert peak < 500_000, peak


def test_retract_across_the_tails_pieces() -> None:
    capture = raw_cut(4, 20)
    capture.write(b"0123456789ex")
    capture.write(b"it\r\n")
    assert capture.retract(b"exit\r\n", capture.total)
    capture.write(b"more")
    assert capture.text() == "0123456789more"


def test_output_that_fits_the_budget_as_text_is_kept_whole() -> None:
    capture = HeadTail(32768, 32768)
    capture.write(b"y\r\n" * 30_000)  # 90,000 bytes of terminal, 60,000 of text
    assert capture.text() == "y\n" * 30_000 and capture.dropped == 0


def test_the_head_ends_and_the_tail_begins_at_a_line_break_near_the_cut() -> None:
    capture = HeadTail(1000, 1000)
    for number in range(200):
        capture.write(b"%05d " % number + b"x" * 93 + b"\r\n")  # 100 bytes of text a line
    head, _, tail = capture.text().partition(marker(capture.dropped))
    assert head.endswith("x\n") and len(head) <= 1000 and len(head) % 100 == 0
    assert tail.startswith("00") and tail.endswith("x\n") and len(tail) % 100 == 0


def test_negative_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        raw_cut(-1, 10)
    with pytest.raises(ValueError):
        raw_cut(10, -1)


def test_tail_cut_inside_eight_bit_string_terminator() -> None:
    capture = raw_cut(3, 6)
    capture.write(b"abc" + b"-" * 10 + "\u009d0;t\u009c".encode() + b"shown")
    assert capture.text() == "abc\n" + marker(10) + "shown"


# ---- Chunks: the output since the last take, for callers who follow along -------------------------


def test_chunks_are_taken_piece_by_piece() -> None:
    chunks = Chunks(1 << 20)
    chunks.write(b"one\r\n")
    assert chunks.take() == ("one\n", 0)
    assert chunks.take() == ("", 0)
    chunks.write(b"two\r\n")
    assert chunks.take() == ("two\n", 0)


@pytest.mark.parametrize(
    "pieces",
    [
        [b"red \x1b[3", b"1mtext\x1b[0m"],
        [b"red \x1b", b"[31mtext\x1b[0m"],
        [b"title \x1b]0;na", b"me\x07text"],
        [b"tick \xe2\x9c", b"\x93 text"],
    ],
    ids=["csi", "bare-esc", "osc", "utf8"],
)
def test_a_piece_never_ends_inside_a_sequence_or_character(pieces: list[bytes]) -> None:
    chunks = Chunks(1 << 20)
    texts = []
    for piece in pieces:
        chunks.write(piece)
        texts.append(chunks.take()[0])
    assert "\ufffd" not in "".join(texts) and "\x1b" not in "".join(texts)
    assert "".join(texts).endswith("text")
    assert "".join(texts) == clean(b"".join(pieces))


def test_chunks_keep_head_and_tail_between_takes() -> None:
    chunks = Chunks(1024)
    chunks.write(b"x" * 10_000)
    text, dropped = chunks.take()
    assert dropped == 10_000 - 1024 and "omitted" in text


class Run:
    """A command's output as a run keeps it (`capture`) and passes it on (to `apart`, which keeps
    its own, and to `cut`, which is cut from the capture until its first take); `held`: its last
    bytes that are not passed on yet, as the shell's possible word on exit is not."""

    def __init__(self, limit: int) -> None:
        self.capture = HeadTail(limit // 2, limit - limit // 2)
        self.held = b""
        self.apart = Chunks(limit)
        self.cut = Chunks(limit, shared=lambda: (self.capture, len(self.held)))

    def output(self, data: bytes, hold: bytes = b"") -> None:
        self.capture.write(data + hold)
        passed = self.held + data
        self.held = hold
        if passed:
            self.apart.write(passed)
            self.cut.write(passed)

    def takes(self) -> tuple[tuple[str, int], tuple[str, int]]:
        return self.apart.take(), self.cut.take()


FLOOD = b"".join(b"%d\r\n" % n for n in range(30000))  # more than a trim of the tail


@pytest.mark.parametrize(
    "pieces",
    [
        [b"one\r\n", b"two\r\n"],
        [FLOOD[:9000], FLOOD[9000:]],
        [b"red \x1b[3", b"1mtext\x1b[0m\r\n"],
        [FLOOD + b"tick \xe2\x9c", b"\x93 text"],
        [b"x" * 3000 + b"\x1b]0;ti", b"tle\x07 more"],
    ],
    ids=["lines", "flood", "csi", "flood-utf8", "osc"],
)
def test_chunks_cut_from_the_whole_output_are_the_chunks_kept_apart(pieces: list[bytes]) -> None:
    run = Run(2048)
    for piece in pieces:
        run.output(piece)
        apart, cut = run.takes()
        assert cut == apart
    run.output(FLOOD)
    apart, cut = run.takes()
    assert cut == apart and cut[1] > 0


def test_bytes_not_passed_on_yet_are_in_no_chunk_until_they_are() -> None:
    run = Run(2048)
    run.output(FLOOD, hold=b"exit\r\n")
    apart, cut = run.takes()
    assert cut == apart and not cut[0].endswith("exit\n")
    run.output(b"more\r\n")
    apart, cut = run.takes()
    assert cut == apart == ("exit\nmore\n", 0)


# ---- a full-screen program's drawing, as its screen ----------------------------------------------

FULL_SCREEN = b"\x1b[?1049h\x1b[H\x1b[2Jtitle\x1b[3;1Hthird row\x1b[1;1Hfirst\x1b[3;7Hrow!"


def test_a_full_screen_drawing_is_its_last_screen_as_lines() -> None:
    assert shown(b"before\r\n" + FULL_SCREEN, (20, 5)) == "before\nfirst\n\nthird row!\n"
    assert shown(b"before" + FULL_SCREEN + b"\x1b[?1049lafter\r\n", (20, 5)) == "before\nfirst\n\nthird row!\nafter\n"
    assert shown(b"no screen\r\n", (20, 5)) == clean(b"no screen\r\n")


@dataclass
class Emulated:
    """The terminal's emulated screen, as the tests set it."""

    rows: list[str]
    alternate: bool = False

    def lines(self) -> list[str]:
        return self.rows


def test_a_piece_on_the_full_screen_is_the_whole_screen_not_what_was_redrawn() -> None:
    screen = Emulated(["first", "", "third row!"])
    chunks = Chunks(1000, (20, 5), lambda: screen)
    chunks.write(b"before\r\n" + FULL_SCREEN)
    screen.alternate = True
    assert chunks.take() == ("before\nfirst\n\nthird row!\n", 0)
    assert chunks.take() == ("", 0), "nothing new: nothing to show"
    chunks.write(b"\x1b[3;1HTHIRD")
    screen.rows[2] = "THIRD row!"
    assert chunks.take() == ("first\n\nTHIRD row!\n", 0)
    chunks.write(b"\x1b[?1049lback\r\n")
    screen.alternate = False
    assert chunks.take()[0].endswith("back\n")

"""The terminal's questions and answers, without a terminal."""

from __future__ import annotations

import pytest

from safe_run.core.queries import CURSOR, CURSOR_EXTENDED, PRIMARY, SECONDARY, STATUS, Questions, answer


@pytest.mark.parametrize(
    ("asked", "kinds"),
    [
        (b"\x1b[6n", [CURSOR]),
        (b"text\x1b[?6nmore", [CURSOR_EXTENDED]),
        (b"\x1b[5n\x1b[c\x1b[0c\x1b[>c\x1b[>0c", [STATUS, PRIMARY, PRIMARY, SECONDARY, SECONDARY]),
        (b"\x1b[15n\x1b[?25h\x1b[1;31m\x1b[2J\x1b[>4;1m", []),  # not questions, or not ones answered
        (b"plain output", []),
    ],
)
def test_questions_are_found_and_nothing_else(asked: bytes, kinds: list[str]) -> None:
    assert Questions().find(asked) == kinds


@pytest.mark.parametrize("cut", range(1, 4))
def test_a_question_cut_between_two_reads_is_found_once(cut: int) -> None:
    questions = Questions()
    whole = b"abc\x1b[6n"
    at = len(whole) - cut
    assert questions.find(whole[:at]) == []
    assert questions.find(whole[at:]) == [CURSOR]
    assert questions.find(b"after") == []


def test_the_answers() -> None:
    assert answer(CURSOR, (0, 0)) == b"\x1b[1;1R"
    assert answer(CURSOR_EXTENDED, (23, 79)) == b"\x1b[?24;80R"
    assert answer(STATUS, (5, 5)) == b"\x1b[0n"
    assert answer(PRIMARY, (0, 0)) == b"\x1b[?1;2c"
    assert answer(SECONDARY, (0, 0)) == b"\x1b[>0;0;0c"

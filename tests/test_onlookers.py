"""The frames between a holder and the people attached to it, and the keys that leave, without a terminal."""

from __future__ import annotations

from safe_run.session.attach import Keys
from safe_run.session.onlookers import KEYS, OUTPUT, frame, frames


def test_frames_come_out_whole_and_in_order_however_they_arrive() -> None:
    stream = frame(OUTPUT, b"hello") + frame(KEYS, b"") + frame(OUTPUT, b"x" * 70000)
    buffer = bytearray()
    seen = []
    for at in range(0, len(stream), 4096):
        buffer += stream[at : at + 4096]
        seen += frames(buffer)
    assert seen == [(OUTPUT, b"hello"), (KEYS, b""), (OUTPUT, b"x" * 70000)] and not buffer


def test_ctrl_backslash_d_leaves_and_everything_else_is_typed() -> None:
    keys = Keys(watch=False)
    assert keys.feed(b"ls\r") == (b"ls\r", False)
    assert keys.feed(b"\x1c") == (b"", False), "the first half of the way out waits for the second"
    assert keys.feed(b"\x1c") == (b"\x1c", False), "twice types one"
    assert keys.feed(b"\x1cq") == (b"\x1cq", False), "followed by anything else, both are typed"
    assert keys.feed(b"ab\x1cd") == (b"ab", True)


def test_a_watch_passes_nothing_and_ctrl_c_leaves_it() -> None:
    keys = Keys(watch=True)
    assert keys.feed(b"rm -rf /\r") == (b"", False)
    assert keys.feed(b"\x03") == (b"", True)

"""The frames between a holder and the people attached to it, and the keys that leave, without a terminal."""

from __future__ import annotations

from safe_run.session.attach import Keys
from safe_run.session.onlookers import FRAME_MAX, KEYS, OUTPUT, KeysAhead, frame, frames


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


def test_ctrl_z_is_a_key_for_the_command_unless_it_stops_the_call() -> None:
    attached = Keys(watch=False)
    assert attached.feed(b"a\x1a") == (b"a\x1a", False) and not attached.suspended
    called = Keys(watch=False, suspends=True)
    assert called.feed(b"ab\x1acd") == (b"ab", True) and called.suspended


def test_keys_ahead_wait_for_the_command_to_read_and_then_go_in_order() -> None:
    keys = KeysAhead()
    keys.add(b"ls")
    keys.add(b"\r")
    assert keys.due(command_reads=False) == b"" and keys.pending == b"ls\r"
    assert keys.due(command_reads=True) == b"ls\r" and keys.pending == b""


def test_a_signal_key_goes_at_once_and_discards_what_was_typed_before_it() -> None:
    keys = KeysAhead()
    keys.add(b"rm -rf build\r\x03\x03y")
    assert keys.due(command_reads=False) == b"\x03\x03", "each Ctrl-C, and none of the line"
    assert keys.pending == b"y", "what came after the Ctrl-C waits on"
    keys.put_back(b"\x1a")
    assert keys.due(command_reads=False) == b"\x1a" and keys.pending == b"y"


def test_keys_ahead_keep_only_the_newest_frame_of_keys() -> None:
    keys = KeysAhead()
    keys.add(b"a" * FRAME_MAX)
    keys.add(b"b")
    assert len(keys.pending) == FRAME_MAX and keys.pending.endswith(b"ab")

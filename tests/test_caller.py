"""A caller's place (variables, directory, umask) as a holder or a warm call's child takes it: the
same whichever way it came, by its encoding or built from a warm call."""

from __future__ import annotations

import json
import os
from pathlib import Path

from safe_run.processes.caller import Caller
from safe_run.processes.warm_call import caller_of
from safe_run.warm.wire import Call


def in_a_child(caller: Caller) -> tuple[str, bytes | None, int]:
    """Where a forked child is once it has taken `caller`'s place: its directory, X, its umask."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            caller.take()
            mask = os.umask(0)
            os.write(write, json.dumps([os.getcwd(), os.environb.get(b"X", b"").hex(), mask]).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        where, x, mask = json.loads(answer.read())
    os.waitpid(pid, 0)
    return where, bytes.fromhex(x), mask


def test_a_caller_survives_its_encoding_whatever_bytes_its_variables_hold(tmp_path: Path) -> None:
    caller = Caller([os.fsdecode(b"X=\xff\x01 two\nlines"), "HOME=/nowhere"], str(tmp_path), 0o027)
    again = Caller.decoded(json.loads(json.dumps(caller.encoded())))
    assert again == caller
    assert in_a_child(again) == (str(tmp_path), b"\xff\x01 two\nlines", 0o027)


def test_a_directory_passed_as_a_descriptor_stands_for_its_path(tmp_path: Path) -> None:
    """The descriptor is followed even once the path no longer leads there."""
    (tmp_path / "a").mkdir()
    caller = Caller(["X=1"], str(tmp_path / "a"), 0o022)
    fd = caller.directory_descriptor()
    try:
        (tmp_path / "a").rename(tmp_path / "b")
        passed = Caller.decoded(caller.encoded(), directory=fd)
        assert in_a_child(passed) == (str(tmp_path / "b"), b"1", 0o022)
    finally:
        os.close(fd)


def test_a_warm_call_is_taken_as_any_caller_is(tmp_path: Path) -> None:
    call = Call(b"context", 0, 0, [0, 1, 2], [b"safe-run"], [b"X=\xfe", b"PATH=/bin"])
    fd = os.open(tmp_path, os.O_PATH | os.O_DIRECTORY)
    try:
        caller = caller_of(call, fd)
        assert in_a_child(caller) == (str(tmp_path), b"\xfe", caller.umask)
    finally:
        os.close(fd)

"""Typing into a terminal never waits longer than asked, even when nothing reads it."""

from __future__ import annotations

import os
import shutil
import termios
from collections.abc import Iterator

import pytest

from safe_run.engine.terminal import Terminal


@pytest.fixture
def busy() -> Iterator[Terminal]:
    """A terminal whose program never reads (sleep), with echo on, as a shell's would be."""
    sleep = shutil.which("sleep")
    if sleep is None:
        pytest.skip("no sleep")
    terminal = Terminal.spawn([sleep, "30"], dict(os.environ), os.getcwd(), 24, 80)
    yield terminal
    terminal.close(hang_up=False)


def test_a_terminal_nobody_reads_takes_what_fits_and_no_more(busy: Terminal) -> None:
    # Character at a time, as a shell's line editor reads: in line mode the kernel drops what
    # overflows a line, so a busy machine's flushes would make room for ever.
    modes = termios.tcgetattr(busy.fd)
    modes[3] &= ~termios.ICANON
    termios.tcsetattr(busy.fd, termios.TCSANOW, modes)
    # Far more than a terminal holds: its buffers take some tens of kilobytes.
    flood = b"x" * (1024 * 1024) + b"\r"
    taken = busy.write(flood, timeout=0.0)
    assert 0 < taken < len(flood), "a full terminal takes part, and write returns instead of waiting"
    # The line discipline may still move up to a line buffer (4 KiB) of it on, sooner or later
    # on a busy machine; each try offers more than that, so once it is full nothing more goes in.
    for _ in range(100):
        if busy.write(b"x" * 8192, timeout=0.0) == 0:
            break
    else:
        pytest.fail("a terminal nobody reads kept taking input")


def test_a_terminal_with_room_takes_it_all(busy: Terminal) -> None:
    assert busy.write(b"hello\r") == len(b"hello\r")


def test_a_wait_says_which_other_descriptors_woke_it(busy: Terminal) -> None:
    """What woke a wait besides the terminal is named, so the loop needs no second look at it."""
    read_end, write_end = os.pipe()
    quiet_read, quiet_write = os.pipe()
    try:
        os.write(write_end, b"\0")
        ready = busy.wait(5.0, [read_end, quiet_read])
        assert ready.woken == frozenset({read_end})
        assert not ready.readable and not ready.exited
        assert busy.wait(0.0, [quiet_read]).woken == frozenset()
    finally:
        for fd in (read_end, write_end, quiet_read, quiet_write):
            os.close(fd)


def test_a_hang_up_does_what_is_given_meanwhile_and_still_sees_the_program_gone(busy: Terminal) -> None:
    """The work given is done once, after the hang-up and before the wait for the end; failing,
    it does not stop that wait, and the terminal is closed all the same."""
    done: list[bool] = []
    master = os.fstat(busy.fd)

    def meanwhile() -> None:
        done.append(busy.exited())
        raise OSError("the work failed")

    with pytest.raises(OSError, match="the work failed"):
        busy.close(hang_up=True, meanwhile=meanwhile)
    assert len(done) == 1 and busy.exited()
    try:
        now = os.fstat(busy.fd)
    except OSError:
        now = None
    assert now is None or (now.st_dev, now.st_ino) != (master.st_dev, master.st_ino), "the terminal was left open"
    busy.close(meanwhile=lambda: done.append(True))  # closed already: nothing is done again
    assert len(done) == 1

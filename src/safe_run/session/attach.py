"""Runs in `safe-run attach` and `safe-run watch`, at a person's terminal: their terminal joins a
session's.

The holder draws the screen as it is (a full-screen program appears as it is), then sends what
the terminal prints; the person's keys go to the command (attach) or nowhere (watch), and their
terminal's size goes with them. Ctrl-\\ then d leaves the command running (Ctrl-\\ twice types one
Ctrl-\\; in a watch Ctrl-C leaves too). The command's end ends the attach with its result.

The attached screen is drawn on the person's alternate screen, as tmux draws a session: their own
screen is left as it was, and is theirs again when they leave or the command ends (the caller then
shows the command's last lines and its summary below it). The command's own switches between its
screens are the attached screen's alone: each starts it afresh, and the person's terminal stays
on its alternate screen until the attach ends.

The terminal's bytes reach the person's through a `relay.Relay`, which drops every question a
terminal answers by typing (where the cursor is, what the terminal is, its title): the holder's
terminal answers the command's, and the person's would answer them again, into the command as keys
or, watching, into nothing and then the person's own shell. Malformed UTF-8 shows as U+FFFD.

The person's terminal is in raw mode while attached and is given back as it was, whatever ends it:
its modes, the main screen, a visible cursor, the keyboard modes a program may have set, its title.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import termios
import tty
from dataclasses import dataclass
from types import FrameType

from ..engine import polling
from ..core.escapes import ALTERNATE_SWITCH, ENTER_ALTERNATE, FRESH_SCREEN, MODES_OFF
from ..core.relay import Relay
from ..core.request import sized
from ..core.result import Result
from . import SessionError, wire
from .onlookers import ENDED, KEYS, LEAVE, OUTPUT, SCREEN, SIZE, frame, frames
from .store import Session

LEAVE_PREFIX = 0x1C  # Ctrl-\
LEAVE_KEY = ord("d")
CTRL_C = 0x03
CTRL_Z = 0x1A
CONNECT_S = 5.0
# What a person's terminal gets back on leaving: the main screen, a visible cursor, no mouse
# reports, bracketed paste and keypad modes off, and the window title it had.
GIVE_BACK = b"\x1b[0m\x1b[?1049l\x1b[?25h" + MODES_OFF + b"\x1b[23;0t"
# What the attached screen starts on: the person's alternate screen, blank.
TAKE = ENTER_ALTERNATE + FRESH_SCREEN
# A push or a pop of the window title's stack (XTPUSHTITLE, XTPOPTITLE), with its parameters.
TITLE_STACK = re.compile(rb"\x1b\[2[23](?:;[0-9]*)*t")


@dataclass(frozen=True)
class Left:
    """The person left (or was let go); the command goes on."""

    why: str


@dataclass(frozen=True)
class Suspended:
    """The person pressed Ctrl-Z where it stops the call, not the command (see `join`)."""


def title(session_id: str, watch: bool) -> bytes:
    """The window title while attached (the terminal's own is saved first and given back after)."""
    what = "watching" if watch else "attached to"
    return b"\x1b[22;0t\x1b]2;safe-run: %s %s - Ctrl-\\ d leaves it running\x07" % (what.encode(), session_id.encode())


def join(
    session: Session, watch: bool, stdin: int = 0, stdout: int = 1, about: str | None = None, suspends: bool = False,
) -> Result | Left | Suspended:
    """Join the session's terminal until the person leaves or the command ends (`about`: the
    named shell's command whose end ends it, see `wire.Attach`). `suspends`: Ctrl-Z is the
    person's, to stop their call (which joins again when taken up), not a key for the command:
    a command of a named shell stopped by it would be a stopped job of that shell, which no
    shell of the person's can bring back."""
    rows, columns = _size(stdout)
    try:
        conn = session.connect(CONNECT_S)
    except TimeoutError:
        raise SessionError(f"session {session.id}'s holder does not take callers (stopped, or stuck)") from None
    if conn is None:
        raise SessionError(f"session {session.id} has ended: nothing runs there to attach to")
    with conn:
        conn.sendall(wire.encode_request(wire.Attach(watch=watch, rows=rows, columns=columns, about=about)))
        saved = termios.tcgetattr(stdin)
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        previous_wakeup = signal.set_wakeup_fd(wake_w)
        previous_winch = signal.signal(signal.SIGWINCH, _resized)
        try:
            tty.setraw(stdin, termios.TCSANOW)  # keys typed ahead are the command's: not flushed
            _write(stdout, title(session.id, watch) + TAKE)
            return _follow(conn, Keys(watch, suspends), stdin, stdout, wake_r)
        finally:
            termios.tcsetattr(stdin, termios.TCSADRAIN, saved)
            _write(stdout, GIVE_BACK)
            signal.signal(signal.SIGWINCH, previous_winch)
            signal.set_wakeup_fd(previous_wakeup)
            os.close(wake_r)
            os.close(wake_w)


def _resized(signum: int, frame: FrameType | None) -> None:
    """Nothing: the signal's byte on the wake-up descriptor is what tells the loop."""


def _follow(conn: socket.socket, keys: Keys, stdin: int, stdout: int, wake: int) -> Result | Left | Suspended:
    received = bytearray()
    relay = Relay()
    # False once the holder no longer takes what this terminal sends: it ended the session and
    # closed its side, and what it sent before (the rest of the screen, the result) is still read.
    heard = True
    while True:
        ready = polling.readable([conn.fileno(), *((stdin, wake) if heard else ())], None)
        if wake in ready:
            polling.drain(wake)
            if not keys.watch:
                rows, columns = _size(stdout)
                heard = _tell(conn, frame(SIZE, b"%d %d" % (rows, columns)))
        if stdin in ready:
            typed = os.read(stdin, 4096)
            passed, leaving = keys.feed(typed)
            if passed:
                heard = _tell(conn, frame(KEYS, passed))
            if leaving or not typed:
                _tell(conn, frame(LEAVE, b""))
                return Suspended() if keys.suspended else Left("left")
        if conn.fileno() in ready:
            try:
                data = conn.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                return Left("the session's holder let go of this terminal (it fell too far behind)")
            received += data
            for kind, payload in frames(received):
                if kind in (SCREEN, OUTPUT):
                    _write(stdout, on_attached_screen(relay.feed(payload)))
                elif kind == ENDED:
                    return Result.from_dict(json.loads(payload))


def _tell(conn: socket.socket, data: bytes) -> bool:
    """Send to the holder; False when it has closed its side (the session ended as this was sent)."""
    try:
        conn.sendall(data)
    except OSError:
        return False
    return True


class Keys:
    """What the person types, with Ctrl-\\ d taken out as the way to leave (and Ctrl-Z, when it
    `suspends` the call: the way to leave for now)."""

    def __init__(self, watch: bool, suspends: bool = False) -> None:
        self.watch = watch
        self._suspends = suspends
        self._prefix = False
        self.suspended = False  # the person left with Ctrl-Z

    def feed(self, typed: bytes) -> tuple[bytes, bool]:
        """The keys to pass on, and whether the person asked to leave."""
        passed = bytearray()
        for byte in typed:
            if self._prefix:
                self._prefix = False
                if byte == LEAVE_KEY:
                    return bytes(passed), True
                passed += bytes([LEAVE_PREFIX]) if byte == LEAVE_PREFIX else bytes([LEAVE_PREFIX, byte])
            elif byte == LEAVE_PREFIX:
                self._prefix = True
            elif self.watch and byte == CTRL_C:
                return b"", True
            elif self._suspends and byte == CTRL_Z:
                self.suspended = True
                return (b"" if self.watch else bytes(passed)), True
            else:
                passed.append(byte)
        return (b"" if self.watch else bytes(passed)), False


def on_attached_screen(data: bytes) -> bytes:
    """The terminal's bytes with the command's screen switches kept off the person's terminal,
    which stays on its alternate screen while attached: each is a fresh start of the attached screen.

    The command's pushes and pops of the window title (CSI 22 t, CSI 23 t) are left out too: the
    person joined it after some pushes and maybe before their pops (vim pushes as it starts and
    pops as it ends), and each pop the person's terminal got beyond its pushes took one of the
    person's own titles off its stack. The attach keeps their title once and gives it back."""
    if b"\x1b[2" in data:
        data = TITLE_STACK.sub(b"", data)
    return ALTERNATE_SWITCH.sub(FRESH_SCREEN, data) if b"\x1b[?" in data else data


def last_lines(output: str, count: int) -> str:
    """The command's last `count` lines, shown below the person's screen once it is given back."""
    lines = output.rstrip("\n").split("\n")[-count:] if output.strip() else []
    return "".join(line + "\n" for line in lines)


def _size(fd: int) -> tuple[int, int]:
    size = os.get_terminal_size(fd)
    return sized(size.lines, size.columns)


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]

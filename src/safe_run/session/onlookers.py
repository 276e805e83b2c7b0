"""People attached to a session's terminal (`safe-run attach`, `safe-run watch`), from the holder's side.

An attached connection stops being a caller with one request: it carries frames both ways until
the person leaves or the session ends. A frame is a kind byte, a 4-byte big-endian length, and
that many bytes:

    holder -> person   S  the current screen, drawn (first, once)
                       O  what the terminal printed since
                       E  the session ended: its final result, as JSON
    person -> holder   K  keys typed (attach only; a watch's are not taken)
                       W  the person's terminal size, "ROWS COLUMNS"
                       Q  the person leaves; the command goes on

Nothing here waits: a person's connection is read and written only as far as it goes at once,
and one that falls behind by more than BACKLOG_MAX bytes is let go, so that a stalled terminal
never holds up the command or the agent's calls.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from ..engine.recording import Recording

HEADER = struct.Struct(">cI")
SCREEN, OUTPUT, ENDED = b"S", b"O", b"E"
KEYS, SIZE, LEAVE = b"K", b"W", b"Q"
# What a person's connection may hold unsent before it is let go.
BACKLOG_MAX = 4 * 1024 * 1024
# How long the last frame, with the session's result, may take to reach a person.
END_S = 1.0
# The longest frame a person may send (keys pasted at once, a size).
FRAME_MAX = 64 * 1024


# Keys the terminal itself turns into signals (Ctrl-C, Ctrl-\\, Ctrl-Z), whatever the command reads.
SIGNAL_KEYS = frozenset(b"\x03\x1c\x1a")


@dataclass
class KeysAhead:
    """Keys people attached typed, held until the command reads its terminal, as a person's own
    are at their terminal. Typed into a command that does not read it (a `sleep`, a build), they
    would wait in the terminal's input and, once the command ended, be read by the shell as a
    command line. A key the terminal turns into a signal goes at once and, as a terminal does,
    discards what was typed before it. At most FRAME_MAX bytes wait; older ones give way."""

    pending: bytes = b""

    def add(self, keys: bytes) -> None:
        self.pending = (self.pending + keys)[-FRAME_MAX:]

    def due(self, command_reads: bool) -> bytes:
        """What goes to the terminal now: everything while the command reads it, else the signal
        keys typed (each one: a second Ctrl-C may be what ends a stubborn program), with only
        what came after the last of them kept."""
        if command_reads:
            keys, self.pending = self.pending, b""
            return keys
        last = max((i for i, key in enumerate(self.pending) if key in SIGNAL_KEYS), default=-1)
        keys = bytes(key for key in self.pending[:last + 1] if key in SIGNAL_KEYS)
        self.pending = self.pending[last + 1:]
        return keys

    def put_back(self, keys: bytes) -> None:
        """Keys the terminal did not take (its input is full): first in line again."""
        self.pending = keys + self.pending

    def drop(self) -> None:
        self.pending = b""


def frame(kind: bytes, payload: bytes) -> bytes:
    return HEADER.pack(kind, len(payload)) + payload


def frames(buffer: bytearray) -> list[tuple[bytes, bytes]]:
    """The whole frames at the start of `buffer`, taken out of it."""
    found = []
    while len(buffer) >= HEADER.size:
        kind, length = HEADER.unpack_from(buffer)
        if len(buffer) < HEADER.size + length:
            break
        found.append((kind, bytes(buffer[HEADER.size : HEADER.size + length])))
        del buffer[: HEADER.size + length]
    return found


@dataclass
class Onlooker:
    conn: socket.socket
    watch: bool  # sees, but its keys are not taken
    about: str | None = None  # the command whose end lets it go (see `wire.Attach`)
    unread: bytearray = field(default_factory=bytearray)
    unsent: bytearray = field(default_factory=bytearray)


@dataclass
class Actions:
    """What the people attached asked for in one turn."""

    keys: bytes = b""
    size: tuple[int, int] | None = None
    left: bool = False  # someone left: the size may go back


class Onlookers:
    """The people attached to one holder's terminal, and its recording: what the terminal shows
    goes to all of them; what is typed, to the recording while the terminal echoes it."""

    def __init__(self, recording: Recording) -> None:
        self.recording = recording
        self._people: list[Onlooker] = []

    @property
    def count(self) -> int:
        return len(self._people)

    @property
    def typing(self) -> int:
        """How many are attached with their keys taken (not watching)."""
        return sum(1 for person in self._people if not person.watch)

    def output(self, data: bytes, command: bool = True) -> None:
        """What the terminal printed: all of it recorded, and the command's shown to the people
        (the shell's prompt after a command would be drawn on their screen, the summary on it)."""
        self.recording.output(data)
        if command:
            for person in list(self._people):
                self._send(person, frame(OUTPUT, data))

    def input(self, data: bytes) -> None:
        self.recording.input(data)

    def join(
        self, conn: socket.socket, watch: bool, screen: bytes, about: str | None = None, early: bytes = b"",
    ) -> None:
        """`early`: what the person sent after their request, read with it; taken at the next `serve`."""
        conn.setblocking(False)
        person = Onlooker(conn, watch, about, bytearray(early))
        self._people.append(person)
        self._send(person, frame(SCREEN, screen))

    def fds(self) -> list[int]:
        return [person.conn.fileno() for person in self._people]

    def writers(self) -> list[int]:
        """The people whose terminals fell behind: the holder wakes when they take more."""
        return [person.conn.fileno() for person in self._people if person.unsent]

    def serve(self) -> Actions:
        """Read what each person sent, and send what is still unsent; what they asked for."""
        actions = Actions()
        for person in list(self._people):
            self._flush(person)
            for kind, payload in self._read(person):
                if kind == KEYS and not person.watch:
                    actions.keys += payload
                elif kind == SIZE and not person.watch:
                    actions.size = _size(payload) or actions.size
                elif kind == LEAVE:
                    self._let_go(person)
                    actions.left = True
        return actions

    def end(self, result_json: bytes, about: str | None = None) -> None:
        """The session ended, or (`about`) a named shell's command did: each person there for it
        gets what is still unsent and its result, within END_S, and is let go."""
        for person in list(self._people):
            if about is not None and person.about != about:
                continue
            try:
                person.conn.settimeout(END_S)
                person.conn.sendall(bytes(person.unsent) + frame(ENDED, result_json))
            except OSError:
                pass
            self._let_go(person)

    def _read(self, person: Onlooker) -> list[tuple[bytes, bytes]]:
        try:
            data: bytes | None = person.conn.recv(FRAME_MAX)
        except BlockingIOError:
            data = None  # nothing new: what came with the request may still wait (see `join`)
        except OSError:
            data = b""
        if data == b"":
            self._let_go(person)
            return [(LEAVE, b"")]
        person.unread += data or b""
        taken = frames(person.unread)
        if len(person.unread) > FRAME_MAX + HEADER.size:
            self._let_go(person)  # not a frame any safe-run sends
        return taken

    def _send(self, person: Onlooker, data: bytes) -> None:
        person.unsent += data
        if len(person.unsent) > BACKLOG_MAX:
            self._let_go(person)
            return
        self._flush(person)

    def _flush(self, person: Onlooker) -> None:
        if not person.unsent or person not in self._people:
            return
        try:
            sent = person.conn.send(person.unsent)
        except BlockingIOError:
            return
        except OSError:
            self._let_go(person)
            return
        del person.unsent[:sent]

    def _let_go(self, person: Onlooker) -> None:
        if person in self._people:
            self._people.remove(person)
            person.conn.close()


def _size(payload: bytes) -> tuple[int, int] | None:
    words = payload.split()
    if len(words) != 2 or not all(word.isdigit() for word in words):
        return None
    rows, columns = int(words[0]), int(words[1])
    return (rows, columns) if 1 <= rows <= 1000 and 1 <= columns <= 1000 else None

"""What `send` types, and when: text only into a command that is reading its terminal.

Text typed while the command is busy waits in the terminal, and if the command ends without
reading it, the shell reads it as its next command line: `send ID 'touch x'` would run `touch x`.
So text is typed only when the command reads its terminal (the rule of `reading`, which a person's
keys follow too), otherwise refused, or kept with `--queue` until the command reads and thrown away, and said so, if
it ends first. A terminal in line mode takes one line per read, at most MAX_LINE bytes: a longer
line would be cut without a word, and a second line would wait where the shell could read it.
Keys (`--key`) are typed at once: Ctrl-C is meant for a busy command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.reading import Reading

# The longest line a terminal in canonical (line) mode accepts; it keeps one byte for the line break.
MAX_LINE = 4095
# How much text one session holds for its command at a time: typed but not yet taken, and queued.
TYPE_AHEAD_MAX = 64 * 1024
# How often a session with text to type looks whether its command reads.
RETRY_S = 0.05
LINE_BREAKS = (b"\r", b"\n")
SHOWN_CHARS = 40


@dataclass(frozen=True)
class Outcome:
    typed: bool  # something was typed or queued: the answer may wait for its effect
    note: str


def refusal(text: bytes, canonical: bool) -> str | None:
    """Why `text` cannot be typed into a terminal in this mode, or None when it can."""
    if not canonical:
        return None
    body = text[:-1] if text.endswith(LINE_BREAKS) else text
    if any(brk in body for brk in LINE_BREAKS):
        return (
            "the command reads its terminal line by line and this text holds several lines; "
            "send one line per call, each once an answer says input_required"
        )
    if len(body) > MAX_LINE:
        return (
            f"the line is {len(body)} bytes and a terminal in line mode takes at most {MAX_LINE}; "
            "the rest would be cut off (give long input through a file instead)"
        )
    return None


def shown(text: bytes, secret: bool = False) -> str:
    """Text as a person reads it in a message: quoted, short, Enter named; a secret only counted,
    since the message goes into results, logs and an agent's context."""
    enter = text.endswith(b"\r")
    body = (text[:-1] if enter else text).decode("utf-8", "replace")
    if secret:
        return f"{len(body)} characters (a secret: not shown)" + (" and Enter" if enter else "")
    if len(body) > SHOWN_CHARS:
        body = body[:SHOWN_CHARS] + "..."
    return repr(body) + (" and Enter" if enter else "")


@dataclass
class Typist:
    """Types into one session's command: now, when it next reads, or not at all, with a note each time."""

    look: Callable[[], Reading]
    write: Callable[[bytes], int]  # what the terminal takes now, without waiting
    clock: Callable[[], float]
    pending: bytearray = field(default_factory=bytearray)  # accepted, not yet taken by the terminal
    queued: list[bytes] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what became of queued text, for the next answer
    _looked_at: float = field(default=float("-inf"), init=False)

    @property
    def busy(self) -> bool:
        return bool(self.pending or self.queued)

    def send(self, text: bytes, keys: bytes, queue: bool) -> Outcome:
        held = len(self.pending) + sum(map(len, self.queued))
        if held + len(text) + len(keys) > TYPE_AHEAD_MAX:
            return Outcome(False, f"nothing was typed: {len(text) + len(keys)} bytes is more than the "
                                  f"{TYPE_AHEAD_MAX} a session holds for its command at a time")
        if not text:
            self._type(keys)
            return Outcome(True, f"pressed {shown(keys)}")
        now = self.look()
        if now.reading:
            problem = refusal(text, now.canonical)
            if problem is not None:
                return Outcome(False, f"nothing was typed: {problem}")
            self._type(text + keys)
            return Outcome(True, f"typed {shown(text, now.secret)}")
        busy = f"the command{_named(now.command)} is running and not reading its terminal"
        if queue:
            self.queued.append(text + keys)
            return Outcome(True, f"queued {shown(text)}: {busy}; it is typed when the command reads "
                                 "its terminal, and thrown away if it ends first")
        return Outcome(False, f"nothing was typed: {busy}, so the text would wait there and could run as "
                              "a shell command once it ends; send it when an answer says input_required, "
                              "or add --queue to have it typed at the command's next read")

    def tick(self) -> None:
        """Type what waits, if the command reads now; looks at most every RETRY_S."""
        if not self.busy or self.clock() - self._looked_at < RETRY_S:
            return
        self._looked_at = self.clock()
        now = self.look()
        if not now.reading:
            return
        if self.pending:
            self._type(b"")
            return
        text = self.queued.pop(0)
        problem = refusal(text, now.canonical)
        if problem is None:
            self._type(text)
            self.notes.append(f"typed the queued {shown(text, now.secret)}")
        else:
            self.notes.append(f"the queued {shown(text, now.secret)} was thrown away: {problem}")

    def take_notes(self) -> str | None:
        notes, self.notes = self.notes, []
        return "; ".join(notes) if notes else None

    def discard(self) -> str | None:
        """The command ended: what was never typed goes, and the answer says so."""
        lost = [shown(text) for text in self.queued]
        if self.pending:
            lost.append(f"the last {len(self.pending)} bytes of a text being typed")
        self.pending.clear()
        self.queued.clear()
        if lost:
            self.notes.append("never typed, the command ended first: " + ", ".join(lost))
        return self.take_notes()

    def _type(self, data: bytes) -> None:
        self.pending += data
        taken = self.write(bytes(self.pending))
        del self.pending[:taken]


def _named(command: str | None) -> str:
    return f" ({command})" if command else ""

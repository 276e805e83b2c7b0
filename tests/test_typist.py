"""What `send` types and when, decided from what the kernel sees: tested with a fake terminal."""

from __future__ import annotations

from dataclasses import dataclass, field


from safe_run.core.reading import Reading
from safe_run.session.typist import MAX_LINE, TYPE_AHEAD_MAX, Outcome, Typist, refusal


def test_line_mode_takes_one_line_of_at_most_max_line_bytes() -> None:
    assert refusal(b"x" * MAX_LINE + b"\r", canonical=True) is None
    assert refusal(b"yes", canonical=True) is None
    assert refusal(b"x" * (MAX_LINE + 1) + b"\r", canonical=True) == (
        f"the line is {MAX_LINE + 1} bytes and a terminal in line mode takes at most {MAX_LINE}; "
        "the rest would be cut off (give long input through a file instead)"
    )
    assert refusal(b"one\ntwo\r", canonical=True) == (
        "the command reads its terminal line by line and this text holds several lines; "
        "send one line per call, each once an answer says input_required"
    )


def test_a_program_reading_keys_takes_any_text() -> None:
    assert refusal(b"one\ntwo\r" + b"x" * 10000, canonical=False) is None


@dataclass
class FakeTerminal:
    look: Reading = field(default_factory=lambda: Reading(reading=False, canonical=True, command="sleep"))
    room: int = 1 << 20
    typed: bytearray = field(default_factory=bytearray)
    now: float = 0.0

    def write(self, data: bytes) -> int:
        taken = data[: self.room]
        self.room -= len(taken)
        self.typed += taken
        return len(taken)

    def typist(self) -> Typist:
        return Typist(look=lambda: self.look, write=self.write, clock=lambda: self.now)

    def later(self, look: Reading) -> None:
        self.look = look
        self.now += 1.0


def test_text_for_a_busy_command_is_refused_and_nothing_is_typed() -> None:
    terminal = FakeTerminal()
    outcome = terminal.typist().send(b"touch x\r", b"", queue=False)
    assert not outcome.typed and terminal.typed == b""
    assert outcome.note == (
        "nothing was typed: the command (sleep) is running and not reading its terminal, so the text would wait "
        "there and could run as a shell command once it ends; send it when an answer says input_required, or "
        "add --queue to have it typed at the command's next read"
    )


def test_keys_are_pressed_whatever_the_command_does() -> None:
    terminal = FakeTerminal()
    outcome = terminal.typist().send(b"", b"\x03", queue=False)
    assert outcome.typed and terminal.typed == b"\x03" and outcome.note == "pressed '\\x03'"


def test_text_for_a_reading_command_is_typed_with_its_keys() -> None:
    terminal = FakeTerminal(look=Reading(reading=True, canonical=True))
    outcome = terminal.typist().send(b"bob\r", b"\t", queue=False)
    assert outcome.typed and terminal.typed == b"bob\r\t" and outcome.note == "typed 'bob' and Enter"


def test_queued_text_is_typed_at_the_next_read_and_said_so() -> None:
    terminal = FakeTerminal()
    typist = terminal.typist()
    assert typist.send(b"yes\r", b"", queue=True).typed
    typist.tick()
    assert terminal.typed == b"" and typist.busy
    terminal.later(Reading(reading=True, canonical=True))
    typist.tick()
    assert terminal.typed == b"yes\r" and not typist.busy
    assert typist.take_notes() == "typed the queued 'yes' and Enter"
    assert typist.take_notes() is None, "a note is given once"


def test_queued_text_is_thrown_away_and_reported_when_the_command_ends() -> None:
    terminal = FakeTerminal()
    typist = terminal.typist()
    typist.send(b"touch x\r", b"", queue=True)
    assert typist.discard() == "never typed, the command ended first: 'touch x' and Enter"
    assert terminal.typed == b"" and not typist.busy


def test_what_the_terminal_does_not_take_waits_for_the_next_read() -> None:
    terminal = FakeTerminal(look=Reading(reading=True, canonical=False), room=3)
    typist = terminal.typist()
    assert typist.send(b"abcdef", b"", queue=False).typed
    assert terminal.typed == b"abc" and typist.busy
    terminal.room = 100
    terminal.later(Reading(reading=False, canonical=False))
    typist.tick()
    assert terminal.typed == b"abc", "nothing goes in while the command does not read"
    terminal.later(Reading(reading=True, canonical=False))
    typist.tick()
    assert terminal.typed == b"abcdef" and not typist.busy


def test_a_session_holds_a_bounded_amount_of_text() -> None:
    terminal = FakeTerminal(look=Reading(reading=True, canonical=False), room=0)
    typist = terminal.typist()
    outcome = typist.send(b"x" * (TYPE_AHEAD_MAX + 1), b"", queue=False)
    assert not outcome.typed and outcome.note == (
        f"nothing was typed: {TYPE_AHEAD_MAX + 1} bytes is more than the {TYPE_AHEAD_MAX} a session holds for "
        "its command at a time"
    )
    assert typist.send(b"x" * TYPE_AHEAD_MAX, b"", queue=False).typed
    assert not typist.send(b"y", b"", queue=False).typed


def test_text_typed_at_a_password_read_is_counted_never_quoted() -> None:
    """The note goes into the result, the holder's log and an agent's context."""
    terminal = FakeTerminal(look=Reading(reading=True, canonical=True, command="sudo", secret=True))
    outcome = terminal.typist().send(b"hunter2\r", b"", queue=False)
    assert outcome == Outcome(True, "typed 7 characters (a secret: not shown) and Enter")
    assert terminal.typed == b"hunter2\r"

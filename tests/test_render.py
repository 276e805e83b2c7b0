"""The pure parts of following a run: presentation choice, the summary, events, annotations, filters.

Nothing here starts a shell or needs a terminal; time is a clock the test moves by hand.
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import time
from dataclasses import replace

import pytest

from safe_run.core import events
from safe_run.core.output import clean
from safe_run.display import make_display
from safe_run.display.jsonl import JsonlDisplay
from safe_run.display.lines import LineDisplay
from safe_run.display.pieces import OUTPUT_INTERVAL, PARTIAL_LIMIT, Pieces
from safe_run.display.streams import Out
from safe_run.display.terminal import TerminalDisplay
from safe_run.display.terminal_filter import TerminalFilter
from safe_run.environment import Environment, Presentation, choose_presentation
from safe_run.core.render import print_summary, render_sessions, summary_style, summary_text
from safe_run.core.result import Downgrade, Killed, Reason, Result, ShellInfo, Status, Strategy, exit_sentence

SGR = re.compile(r"\x1b\[[0-9;]*m")
BASH = ShellInfo("bash", "/bin/bash")
DOWNGRADE = Downgrade("rich", "none", "shell integration did not start: no marks", 0.52)


def result(**changes: object) -> Result:
    fields: dict[str, object] = dict(
        status=Status.COMPLETED, exit_code=0, strategy=Strategy.RICH, completion_reason=Reason.SHELL_INTEGRATION,
        command="make check", shell=BASH, output="ok\n", duration_s=1.234,
    )
    fields.update(changes)
    return Result(**fields)  # type: ignore[arg-type]


FALLBACK = result(strategy=Strategy.NONE, completion_reason=Reason.SENTINEL, downgrades=(DOWNGRADE,),
                  message="no shell integration: the end came from a marked status echo")
TIMEOUT = result(status=Status.TIMEOUT, exit_code=None, completion_reason=Reason.TIMEOUT,
                 message="the command did not finish within --timeout 2 s")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def byte_stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)


def fake_env(
    environ: dict[str, str] | None = None, stdout: io.TextIOBase | None = None, stderr: io.TextIOBase | None = None,
    stdout_isatty: bool = False, stderr_isatty: bool = False,
) -> Environment:
    """An environment as a call could find it: the given streams, terminals and variables."""
    return Environment(
        environ={"TERM": "xterm", "LANG": "C.UTF-8"} if environ is None else environ,
        stdin=io.StringIO(),
        stdout=stdout or io.StringIO(),  # type: ignore[arg-type]
        stderr=stderr or io.StringIO(),  # type: ignore[arg-type]
        stdout_isatty=stdout_isatty,
        stderr_isatty=stderr_isatty,
    )


def written(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]


# ---- which decoration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "stdout_tty", "stderr_tty", "expected"),
    [
        ({"TERM": "xterm"}, True, True, Presentation(True, True, True, True)),
        ({"TERM": "xterm"}, False, False, Presentation(False, False, False, False)),
        ({"TERM": "xterm"}, True, False, Presentation(True, True, False, False)),
        ({"TERM": "xterm"}, False, True, Presentation(False, False, False, True)),
        ({"TERM": "xterm", "NO_COLOR": "1"}, True, True, Presentation(True, False, True, False)),
        ({"TERM": "xterm", "NO_COLOR": ""}, True, True, Presentation(True, True, True, True)),
        ({"TERM": "xterm", "FORCE_COLOR": "1"}, False, False, Presentation(False, False, False, True)),
        ({"TERM": "xterm", "FORCE_COLOR": "1", "NO_COLOR": "1"}, False, False, Presentation(False, False, False, False)),
        ({"TERM": "dumb"}, True, True, Presentation(False, False, False, False)),
        ({"TERM": "dumb", "FORCE_COLOR": "1"}, True, True, Presentation(False, False, False, True)),
        ({"TERM": "xterm", "CI": "true"}, True, True, Presentation(False, False, False, False)),
        ({"TERM": "xterm", "CI": "1"}, True, True, Presentation(False, False, False, False)),
        ({"TERM": "xterm", "CI": "false"}, True, True, Presentation(True, True, True, True)),
        ({"TERM": "xterm", "CI": "true", "FORCE_COLOR": "1"}, True, True, Presentation(False, False, False, True)),
    ],
)
def test_choose_presentation(env: dict[str, str], stdout_tty: bool, stderr_tty: bool, expected: Presentation) -> None:
    assert choose_presentation({"LANG": "C.UTF-8", **env}, stdout_tty, stderr_tty) == expected


@pytest.mark.parametrize(
    ("env", "utf8"),
    [
        ({}, False),
        ({"LANG": "C"}, False),
        ({"LANG": "en_US.UTF-8"}, True),
        ({"LANG": "de_DE.utf8@euro"}, True),
        ({"LANG": "en_US"}, False),
        ({"LANG": "en_US.ISO-8859-1"}, False),
        ({"LANG": "C.UTF-8", "LC_ALL": "C"}, False),
        ({"LANG": "C.UTF-8", "LC_CTYPE": "POSIX"}, False),
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, False),  # what Python's locale coercion leaves
        ({"LC_CTYPE": "C.UTF-8"}, False),
        ({"LANG": "C", "LC_CTYPE": "en_US.UTF-8"}, True),
        ({"LANG": "C", "LC_ALL": "", "LC_CTYPE": "en_GB.UTF-8"}, True),
        ({"LC_ALL": "C.UTF-8", "LC_CTYPE": "C"}, True),
    ],
)
def test_unicode_follows_the_locale(env: dict[str, str], utf8: bool) -> None:
    """LC_ALL, else LC_CTYPE, else LANG names the character set, whatever Python's streams say."""
    assert choose_presentation({"TERM": "xterm", **env}, True, True).unicode is utf8


@pytest.mark.parametrize(
    ("env", "stdout_tty", "asked", "shown"),
    [
        ({}, True, "auto", "pretty"),
        ({}, False, "auto", "json"),
        ({"CI": "true"}, False, "auto", "pretty"),  # a CI log is read by people, as it streams
        ({"CI": "false"}, False, "auto", "json"),
        ({"TERM": "dumb"}, False, "auto", "json"),
        ({}, True, "json", "json"),
        ({}, True, "jsonl", "jsonl"),
        ({}, False, "pretty", "pretty"),
    ],
)
def test_the_format_follows_the_environment(env: dict[str, str], stdout_tty: bool, asked: str, shown: str) -> None:
    environment = fake_env({"LANG": "C.UTF-8", **env}, stdout_isatty=stdout_tty)
    assert environment.resolve_format(asked) == shown
    assert environment.wants_json(asked) is (shown != "pretty")


def test_marks_are_unicode_only_where_the_locale_and_stderr_both_allow() -> None:
    assert fake_env({"LANG": "C.UTF-8"}, stderr=byte_stream()).unicode
    assert not fake_env({"LANG": "C"}, stderr=byte_stream()).unicode
    assert not fake_env({"LANG": "C.UTF-8"}, stderr=io.StringIO()).unicode, "StringIO has no encoding"
    ascii_stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert not fake_env({"LANG": "C.UTF-8"}, stderr=ascii_stream).unicode


# ---- the summary -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("res", "style"),
    [
        (result(), "green"),
        (FALLBACK, "yellow"),
        (result(downgrades=(DOWNGRADE,)), "yellow"),
        (result(completion_reason=Reason.FOREGROUND_RETURNED), "yellow"),
        (result(completion_reason=Reason.SHELL_EXITED), "green"),
        (result(exit_code=4), "red"),
        (result(exit_code=4, completion_reason=Reason.SENTINEL), "red"),
        (TIMEOUT, "red"),
        (result(status=Status.ERROR, exit_code=None, strategy=None, completion_reason=Reason.ERROR), "red"),
        (result(status=Status.RUNNING, exit_code=None, completion_reason=None, session_id="a" * 24), "cyan"),
        (result(status=Status.INPUT_REQUIRED, exit_code=None, completion_reason=Reason.INPUT_WAIT,
                session_id="a" * 24), "cyan"),
        (result(status=Status.INPUT_REQUIRED, exit_code=None, completion_reason=Reason.INPUT_WAIT), "red"),
        (result(status=Status.CLOSED, exit_code=None, completion_reason=Reason.CLOSED), "green"),
    ],
)
def test_summary_style(res: Result, style: str) -> None:
    assert summary_style(res) == style


def test_summary_reads_without_colour() -> None:
    stream = io.StringIO()
    print_summary(FALLBACK, fake_env(stderr=stream))
    text = stream.getvalue()
    assert "\x1b" not in text
    first, *rest = text.splitlines()
    assert first == "! completed | exit 0 | 1.23 s | none/sentinel", "StringIO has no encoding: ASCII marks"
    assert rest[0] == "  downgrade rich -> none at 0.52 s: shell integration did not start: no marks"
    assert rest[1].startswith("  no shell integration")


def test_evidence_a_command_went_without_is_a_note_not_a_step_down() -> None:
    stream = io.StringIO()
    missing = Downgrade("rich", "rich", "the kernel's view of the terminal is missing", 0.0)
    print_summary(replace(FALLBACK, downgrades=(missing,)), fake_env(stderr=stream))
    assert "  note at 0.00 s: the kernel's view of the terminal is missing" in stream.getvalue().splitlines()


def test_summary_marks_and_details() -> None:
    ok = summary_text(result()).plain
    assert ok == "✓ completed · exit 0 · 1.23 s · rich/shell_integration"
    failed = summary_text(result(
        status=Status.INPUT_REQUIRED, exit_code=None, completion_reason=Reason.INPUT_WAIT, prompt="Password:",
        killed=(Killed(42, "sudo"),), output_truncated=True, output_dropped_bytes=99, message="it waited",
    )).plain.splitlines()
    assert failed[0] == "✗ input_required · 1.23 s · rich/input_wait"
    assert failed[1:] == ["  99 bytes of output omitted from the middle", "  prompt: Password:", "  killed: 42 sudo",
                          "  it waited"]


def test_a_failing_exit_is_said_once_and_a_signal_by_name() -> None:
    plain = summary_text(result(exit_code=3, message=exit_sentence(3))).plain.splitlines()
    assert plain == ["✗ completed · exit 3 · 1.23 s · rich/shell_integration"], "the line says it already"
    killed = summary_text(result(exit_code=137, message=exit_sentence(137))).plain.splitlines()
    assert killed[1] == ("  the command was ended by SIGKILL (exit status 137 is 128 + 9): often the kernel's "
                         "out-of-memory killer, or a timeout that would not wait")


def test_a_running_session_is_named_with_what_to_call_next_and_the_displays_notes_follow_its_count() -> None:
    running = result(status=Status.RUNNING, exit_code=None, strategy=None, completion_reason=None, session_id="abc",
                     output_dropped_bytes=99, message="still going\nsince 10:00")
    summary = summary_text(running, unicode=False, omitted=5, notes=("shown live",))
    assert summary.lines == (
        (". running | 1.23 s", "bold cyan"),
        ("  5 bytes of output omitted from the middle", None),
        ("  shown live", None),
        ("  session abc: safe-run poll|send|stop abc", None),
        ("  still going", None),
        ("since 10:00", None),
    ), "the display's own count stands for the result's; a detail's later lines are its own"
    assert summary_text(running, omitted=0).plain.splitlines()[1] == "  session abc: safe-run poll|send|stop abc"


def test_the_written_summary_is_exact() -> None:
    down = Downgrade("rich", "none", "no marks\a\b", 0.5)
    failed = result(status=Status.TIMEOUT, exit_code=None, strategy=None, downgrades=(down,),
                    killed=(Killed(42, "sudo"), Killed(7, "tee")), message="stopped\r")
    assert summary_text(failed).written(True) == (
        "\x1b[1;31m✗ timeout · 1.23 s · shell_integration\x1b[0m\n"
        "\x1b[33m  downgrade rich → none at 0.50 s: no marks\x1b[0m\n"
        "  killed: 42 sudo, 7 tee\n"
        "  stopped\n"
    )
    assert summary_text(failed, unicode=False).written(False) == (
        "x timeout | 1.23 s | shell_integration\n"
        "  downgrade rich -> none at 0.50 s: no marks\n"
        "  killed: 42 sudo, 7 tee\n"
        "  stopped\n"
    )


def test_summary_in_colour() -> None:
    stream = io.StringIO()
    print_summary(result(exit_code=1), fake_env({"FORCE_COLOR": "1"}, stderr=stream))
    assert "\x1b[1;31m" in stream.getvalue(), "bold red for a failure"
    stream = io.StringIO()
    print_summary(FALLBACK, fake_env({"FORCE_COLOR": "1"}, stderr=stream))
    assert "\x1b[1;33m" in stream.getvalue(), "bold yellow when a fallback decided"


# ---- events ----------------------------------------------------------------------------------------


def test_event_shapes() -> None:
    assert events.started_event("echo a", BASH, Strategy.RICH) == {
        "event": "started", "at_s": 0.0, "schema_version": 1, "command": "echo a",
        "shell": {"name": "bash", "path": "/bin/bash"}, "strategy": "rich",
    }
    assert events.output_event(0.12345, "a\n") == {"event": "output", "at_s": 0.123, "text": "a\n", "dropped_bytes": 0}
    assert events.downgrade_event(DOWNGRADE) == {
        "event": "downgrade", "at_s": 0.52, "from": "rich", "to": "none", "reason": DOWNGRADE.reason,
    }
    finished = events.finished_event(FALLBACK)
    assert finished["event"] == "finished" and finished["at_s"] == 1.234
    assert finished["result"] == FALLBACK.to_dict()
    for event in (finished, events.started_event("x", BASH, Strategy.NONE)):
        assert json.loads(json.dumps(event)) == event


# ---- GitHub annotations ------------------------------------------------------------------------------


def test_escaping_follows_the_workflow_command_rules() -> None:
    assert events.escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert events.escape_property("a: b, c%") == "a%3A b%2C c%25"


@pytest.mark.parametrize(
    "res",
    [result(), result(exit_code=3), result(completion_reason=Reason.SHELL_EXITED, exit_code=2),
     result(status=Status.RUNNING, exit_code=None, completion_reason=None, session_id="abc")],
    ids=["success", "own-failure", "shell-exited", "running"],
)
def test_no_annotation(res: Result) -> None:
    assert events.github_annotation(res) is None


def test_fallback_is_a_warning() -> None:
    line = events.github_annotation(FALLBACK)
    assert line is not None and line.startswith("::warning title=safe-run fallback::`make check`: completed with exit 0")
    assert "downgrade rich -> none at 0.52 s" in line and "\n" not in line
    assert events.github_annotation(result(downgrades=(DOWNGRADE,))).startswith("::warning ")  # type: ignore[union-attr]
    assert events.github_annotation(result(exit_code=5, completion_reason=Reason.PROMPT_IDLE)).startswith("::warning ")  # type: ignore[union-attr]


@pytest.mark.parametrize("status", [Status.TIMEOUT, Status.INPUT_REQUIRED, Status.INTERRUPTED, Status.ERROR,
                                    Status.SYNTAX_ERROR])
def test_abort_is_an_error(status: Status) -> None:
    res = result(status=status, exit_code=None, completion_reason=Reason.TIMEOUT, command="sleep 100\n# 50%\n",
                 message="stopped\r\nafter 50%")
    line = events.github_annotation(res)
    assert line is not None
    assert line.startswith(f"::error title=safe-run {status.value}::`sleep 100...`: {status.value} after 1.23 s")
    assert line.endswith("stopped%0D%0Aafter 50%25")
    assert "\n" not in line and "\r" not in line


# ---- the command's bytes for a terminal ------------------------------------------------------------


def test_terminal_filter_keeps_what_draws_and_drops_what_changes_state() -> None:
    raw = (b"\x1b]0;title\x07\x1b[?25l\x1b[H\x1b[2J\x1b[31mred\x1b[0m 50%\r\x1b[K100%\n"
           b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\\a\tend\x08!\n")
    assert TerminalFilter(colour=True).feed(raw) == b"\x1b[31mred\x1b[0m 50%\r\x1b[K100%\nlink\tend\x08!\n"
    assert TerminalFilter(colour=False).feed(raw) == b"red 50%\r\x1b[K100%\nlink\tend\x08!\n"


def test_terminal_filter_leaves_out_what_is_drawn_on_the_alternate_screen() -> None:
    term = TerminalFilter(colour=False)
    assert term.feed(b"before\r\n\x1b[?1049h\x1b[H~\x1b[2;1H~") == b"before\r\n"
    assert term.feed(b"\x1b[3;1H~\x1b[?104") == b"", "a switch cut by a read is held"
    assert term.feed(b"9l\x1b[?25hafter\r\n") == b"after\r\n"
    assert term.hid_alternate
    assert term.feed(b"\x1b[?1;1049hx\x1b[?1049;1lback") == b"back", "among other modes too"
    plain = TerminalFilter(colour=False)
    assert plain.feed(b"\x1b[?1049h\x1b[?1049ltext") == b"text" and not plain.hid_alternate


def test_terminal_filter_holds_a_sequence_cut_by_a_read() -> None:
    term = TerminalFilter(colour=True)
    assert term.feed(b"a\x1b[3") == b"a"
    assert term.feed(b"1mb\x1b]0;ti") == b"\x1b[31mb"
    assert term.feed(b"tle\x1b") == b""
    assert term.feed(b"\\c\xc2") == b"c"
    assert term.feed(b"\x9b2Jd\xc2\xb0") == "d°".encode()
    assert term.coloured


def test_terminal_filter_shows_malformed_utf8_as_replacement_characters_and_asks_nothing() -> None:
    """A raw 0x9b is an 8-bit CSI to a terminal that reads 8-bit controls: it goes on as U+FFFD."""
    term = TerminalFilter(colour=True)
    assert term.feed(b"\x1b[31mok\x1b[0m\xff\x9b6n\x05\x1b[6n\xc3") == b"\x1b[31mok\x1b[0m" + "\ufffd\ufffd6n".encode()
    assert term.feed(b"\xa9") == "é".encode(), "a character cut by a read is held, not replaced"


# ---- cleaned pieces ----------------------------------------------------------------------------------


def test_pieces_end_at_line_ends_and_hold_a_partial_line() -> None:
    pieces = Pieces(1024, hold=1.0)
    pieces.write(b"10%\r20%", now=0.0)
    assert pieces.due() is None and pieces.take(5.0) is None, "a line that overwrites itself waits for its end"
    pieces.write(b"\r100%\r\nnext", now=6.0)
    assert pieces.take(6.0) == ("100%\n", 0), "the progress line is whole, so cleaning sees every frame"
    assert pieces.due() == 7.0
    assert pieces.take(7.0) == ("next", 0), "a plain partial line is let through after the hold"
    assert pieces.due() is None and pieces.take(9.0) is None


def written_pieces(writes: list[tuple[float, bytes]], hold: float = 1.0) -> str:
    """What a reader of the pieces gets when `writes` come at their times and it takes at every tick."""
    pieces, text = Pieces(1 << 20, hold=hold), []
    for at, data in writes:
        for tick in range(int(at * 10)):  # every 0.1 s up to this write
            piece = pieces.take(tick / 10)
            text.append(piece[0] if piece else "")
        pieces.write(data, now=at)
    rest = pieces.take_rest()
    return "".join(text) + (rest[0] if rest else "")


@pytest.mark.parametrize(
    "writes",
    [
        [(0.0, b"\rstep 1"), (0.6, b"\rstep 2"), (1.2, b"\rstep 3"), (1.8, b"\r\n")],
        [(0.0, b"step 1"), (0.6, b"\rstep 2"), (1.2, b"\rstep 3\r\n")],
        [(0.0, b"10%\r"), (2.0, b"50%\r"), (4.0, b"100%\r\ndone\r\n")],
        [(0.0, b"Building... "), (1.5, b"more "), (3.0, b"ok\r\n")],
        [(0.0, b"Password: "), (2.0, b"\r\n")],
        [(0.0, b"a\x1b[3"), (2.0, b"1mred\x1b[0m\r\n")],
    ],
    ids=["carriage-return-first", "quick-overwrite", "frame-then-return", "slow-plain-line", "prompt",
         "colour-cut-by-the-hold"],
)
def test_pieces_give_the_text_of_the_json_output(writes: list[tuple[float, bytes]]) -> None:
    """Through a pipe, progress updates are the last frame only, never glued together."""
    assert written_pieces(writes) == clean(b"".join(data for _, data in writes))


def test_a_line_let_through_and_then_overwritten_is_written_again_on_its_own() -> None:
    """A pipe cannot take back "Downloading"; what the line became follows on a line of its own."""
    writes = [(0.0, b"Downloading"), (2.0, b"\rDone       \r\n"), (2.1, b"next\r\n")]
    assert written_pieces(writes) == "Downloading\nDone       \nnext\n"


def test_pieces_leave_out_a_last_line_the_result_does_not_have() -> None:
    pieces = Pieces(1024)
    pieces.write(b"out\nmine$ ", now=0.0)
    assert pieces.take(0.0) == ("out\n", 0)
    assert pieces.take_rest("out\n") is None
    pieces.write(b"no newline", now=0.0)
    assert pieces.take_rest("out\nno newline") == ("no newline", 0)


@pytest.mark.parametrize("back", [b"\x1b[1G", b"\x1b[0K\x1b[1G", b"\x1b[12D"])
def test_a_spinner_that_moves_back_along_its_line_shows_only_its_last_frame(back: bytes) -> None:
    """npm draws each frame of its spinner after `ESC[1G`: no frame is a line of its own in a pipe."""
    pieces = Pieces(1024, hold=1.0)
    for frame, at in (("\u2838", 0.0), ("\u283c", 1.5), ("\u2834", 3.0)):
        pieces.write(back + frame.encode() + b" idealTree", now=at)
        assert pieces.take(at + 1.2) is None, "a frame is held until the line ends"
    pieces.write(back + b"added 3 packages\x1b[K\n", now=4.0)
    assert pieces.take(4.0) == ("added 3 packages\n", 0)


def test_pieces_bound_what_they_hold() -> None:
    pieces = Pieces(1024)
    pieces.write(b"x" * (PARTIAL_LIMIT + 1), now=0.0)
    text, dropped = pieces.take(0.0)  # type: ignore[misc]
    assert dropped == PARTIAL_LIMIT + 1 - 1024 and text.startswith("x" * 512) and "omitted" in text


# ---- displays, driven by a clock the test moves -----------------------------------------------------


def test_jsonl_display_coalesces_output_to_the_interval() -> None:
    clock, out = Clock(), io.StringIO()
    display = JsonlDisplay(fake_env(stdout=out), 1 << 20, clock)
    display.started("seq 300", BASH, Strategy.RICH, clock.now)
    for n in range(300):  # a line every 10 ms for 3 s
        clock.now += 0.01
        display.on_output(f"{n}\r\n".encode())  # type: ignore[misc]
        if display.wait(clock.now) == 0:
            display.tick(clock.now)
    display.downgraded(DOWNGRADE)
    display.stop()
    display.finished(result(output="".join(f"{n}\n" for n in range(300))))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    kinds = [e["event"] for e in lines]
    assert kinds[0] == "started" and kinds[-2:] == ["downgrade", "finished"]
    outputs = [e for e in lines if e["event"] == "output"]
    assert len(outputs) <= 3.0 / OUTPUT_INTERVAL + 2
    assert "".join(e["text"] for e in outputs) == "".join(f"{n}\n" for n in range(300))
    times = [e["at_s"] for e in outputs]
    assert all(b - a >= OUTPUT_INTERVAL - 1e-9 for a, b in zip(times, times[1:-1]))


def test_pretty_display_keeps_the_status_line_off_stdout() -> None:
    clock, out, err = Clock(), byte_stream(), byte_stream()
    env = fake_env(stdout=out, stderr=err, stdout_isatty=True, stderr_isatty=True)
    assert env.presentation == Presentation(True, True, True, True)
    display = make_display("pretty", 1 << 20, env, clock)
    assert isinstance(display, TerminalDisplay)
    display.started("x", BASH, Strategy.RICH, clock.now)
    display.on_output(b"\x1b[32mhello\x1b[0m\r\n")  # type: ignore[misc]
    clock.now += 1
    display.tick(clock.now)
    display.on_output(b"50%")  # type: ignore[misc]
    clock.now += 1
    display.tick(clock.now)
    display.finished(result())
    stdout, stderr = written(out), written(err)
    assert stdout == "\x1b[32mhello\x1b[0m\r\n50%\x1b[0m\n"
    assert "running" in stderr and "strategy rich" in stderr
    assert stderr.count("running") >= 2, "drawn at the start, and again after the complete line"
    before_summary = stderr[: stderr.index("\x1b[1;32m✓")]
    assert before_summary.endswith("\r\x1b[2K"), "the status line is erased before the summary"


def test_plain_pretty_display_writes_cleaned_lines() -> None:
    clock, out, err = Clock(), byte_stream(), byte_stream()
    env = fake_env(stdout=out, stderr=err)
    assert env.presentation == Presentation(False, False, False, False)
    display = make_display("pretty", 1 << 20, env, clock)
    assert isinstance(display, LineDisplay)
    display.started("x", BASH, Strategy.RICH, clock.now)
    display.on_output(b"\x1b[1mbold\x1b[0m\r\n10%")  # type: ignore[misc]
    display.tick(clock.now)
    display.on_output(b"\r100%")  # type: ignore[misc]
    display.stop()
    display.finished(result(output="bold\n100%"))
    assert written(out) == "bold\n100%\n"
    assert written(err) == "✓ completed · exit 0 · 1.23 s · rich/shell_integration\n"


@pytest.mark.parametrize("passthrough", [True, False], ids=["terminal", "plain"])
def test_pretty_display_does_not_claim_that_shown_output_was_omitted(passthrough: bool) -> None:
    """The result keeps only the head and tail of a long output, but the display showed every line."""
    clock, out, err = Clock(), byte_stream(), byte_stream()
    env = fake_env({"TERM": "xterm", "LANG": "C.UTF-8", "NO_COLOR": "1"}, out, err, stdout_isatty=passthrough)
    assert env.presentation == Presentation(passthrough, False, False, False)
    display = make_display("pretty", 1 << 20, env, clock)
    assert display is not None
    display.started("seq 1 300000", BASH, Strategy.RICH, clock.now)
    for n in range(0, 3000, 100):
        display.on_output("".join(f"{i}\r\n" for i in range(n, n + 100)).encode())  # type: ignore[misc]
        clock.now += 0.2
        display.tick(clock.now)
    display.stop()
    display.finished(result(output="0\n...\n2999\n", output_truncated=True, output_dropped_bytes=1240319))
    assert written(out).replace("\r\n", "\n") == "".join(f"{i}\n" for i in range(3000))
    assert "omitted" not in written(err)


def test_pretty_display_draws_ascii_marks_when_the_locale_is_not_utf8() -> None:
    clock, out, err = Clock(), byte_stream(), byte_stream()
    display = make_display("pretty", 1 << 20, fake_env({"TERM": "xterm", "LC_ALL": "C", "LANG": "C.UTF-8"}, out, err), clock)
    assert display is not None
    display.started("x", BASH, Strategy.RICH, clock.now)
    display.stop()
    display.finished(result(output=""))
    assert written(err) == "+ completed | exit 0 | 1.23 s | rich/shell_integration\n"


# ---- the session list ---------------------------------------------------------------------------------


def test_session_list_shows_commands_as_typed() -> None:
    """Brackets in a command are text, not markup: nothing vanishes and nothing breaks the table."""
    rows = [
        {"session_id": "a" * 24, "status": "running", "exit_code": None, "age_s": 3.0,
         "command": 'read -p "Continue? [y/N] " a'},
        {"session_id": "b" * 24, "status": "completed", "exit_code": 0, "age_s": 9.0, "command": 'echo "[/x]" :smile:'},
        {"session_id": "c" * 24, "status": "completed", "exit_code": 1, "age_s": 1.0, "command": "[bold]x[/bold]"},
    ]
    out = io.StringIO()
    render_sessions(rows, out)
    text = out.getvalue()
    assert '"Continue? [y/N] " a' in text
    assert 'echo "[/x]" :smile:' in text
    assert "[bold]x[/bold]" in text


def test_session_list_names_a_shells_command_by_the_shell_alone() -> None:
    rows = [
        {"session_id": "a" * 24, "status": "idle", "exit_code": None, "age_s": 3.0, "command": "true",
         "shell_name": "dev", "shell": "bash", "cwd": "/srv"},
        {"session_id": "b" * 24, "status": "completed", "exit_code": 0, "age_s": 2.0, "command": "make",
         "shell_name": "dev", "shell": None, "cwd": None},
    ]
    out = io.StringIO()
    render_sessions(rows, out)
    text = out.getvalue()
    assert "dev (bash in /srv)" in text and "?" not in text


def test_pieces_do_not_come_due_again_for_an_unfinished_sequence_alone() -> None:
    pieces = Pieces(1024, hold=1.0)
    pieces.write(b"\x1b[3", now=0.0)
    assert pieces.take(1.0) is None
    assert pieces.due() is None, "nothing to let through until the sequence is complete"
    pieces.write(b"1mred\x1b[0m\r\n", now=2.0)
    assert pieces.take(2.0) == ("red\n", 0)


def test_the_summary_for_a_persons_terminal_comes_once_a_pipes_reader_has_taken_the_output() -> None:
    """`safe-run -- CMD | cat`: the output's end reaches the terminal (through cat) first."""
    read_fd, write_fd = os.pipe()
    taken = threading.Event()

    def reader() -> None:
        time.sleep(0.02)
        os.read(read_fd, 4096)
        taken.set()

    with os.fdopen(write_fd, "w") as stream:
        stream.write("the output's last line\n")
        stream.flush()
        thread = threading.Thread(target=reader)
        thread.start()
        Out(stream).wait_until_read(within=10.0)
        assert taken.is_set()
        thread.join()
    os.close(read_fd)


def test_a_pipe_nobody_reads_keeps_the_summary_waiting_only_a_moment() -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "w") as stream:
        stream.write("nobody reads this\n")
        stream.flush()
        Out(stream).wait_until_read(within=0.01)  # returns, the byte still there
    os.close(read_fd)

"""Following a run while it happens: the command's output as it comes, a status line, jsonl events.

`execute` drives a `Display`: it hands it the command's raw bytes as they arrive (`on_output`),
the strategy's downgrades, and a chance to act whenever the time it asked for (`wait`) has come
(`tick`). `stop` is always called when the run is over, whatever happened, and leaves the
terminal as it was; `finished` then shows the result. The JSON path uses no display at all, so it
does no work per chunk of output.

How much decoration a pretty run gets is decided once, from the environment and the terminals,
by `choose_presentation` (pure, so it is tested without a terminal):

* stdout a terminal (and not CI, not TERM=dumb): the command's bytes go to it as a terminal would
  show them (colours, carriage-return progress bars), minus what could change the terminal's
  state (cursor movement, alternate screen, titles, mode switches).
* otherwise: cleaned text (`Chunks`), a line at a time, as in the JSON `output`.
* both stdout and stderr terminals: a status line on stderr, redrawn only while the cursor is at
  the start of a line, erased before any output is written and when the run ends.
* colour in safe-run's own summary: stderr a terminal, or FORCE_COLOR; never with NO_COLOR.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import termios
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TextIO

from . import escapes, events
from .escapes import ALTERNATE_SWITCH, c1_as_esc, unfinished_length
from .output import Chunks, clean
from .report import is_ci
from .result import Downgrade, Result, ShellInfo, Status, Strategy

# Output events and cleaned output are written at most this often, so a command that prints a
# gigabyte produces at most ~10 writes a second, each at most --max-output bytes (the first and
# last halves of what came in that tenth of a second, the middle counted as dropped).
OUTPUT_INTERVAL = 0.1
# A line without its newline yet (a prompt, a progress bar) waits this long for the rest of it.
PARTIAL_HOLD = 1.0
# ... and is let through when it grows this long anyway.
PARTIAL_LIMIT = 64 * 1024
# Cleaned output for people (stdout not a terminal) keeps at most this much between writes, so
# that in practice nothing is dropped from a log, while memory stays bounded.
PRETTY_WINDOW = 16 * 1024 * 1024
# On a terminal, the command's bytes are passed on at most this often (or at this size).
LIVE_INTERVAL = 0.05
LIVE_LIMIT = 64 * 1024
# The status line's clock ticks this often.
STATUS_INTERVAL = 0.1


# ---- what to show, decided once ----------------------------------------------------------------


@dataclass(frozen=True)
class Presentation:
    passthrough: bool  # stdout is a terminal: pass the command's bytes on, filtered
    command_colour: bool  # keep the command's own colours in what is passed on
    status_line: bool  # draw the live status line on stderr
    colour: bool  # colour safe-run's own summary on stderr
    unicode: bool = True  # the locale is UTF-8: marks and spinner may be drawn in Unicode


def choose_presentation(environ: Mapping[str, str], stdout_tty: bool, stderr_tty: bool) -> Presentation:
    """NO_COLOR (non-empty) wins over FORCE_COLOR (non-empty), which wins over CI and TERM=dumb.

    CI and TERM=dumb make every stream count as not a terminal: no live display, no status line,
    no colour (unless forced).
    """
    plain = is_ci(environ) or environ.get("TERM", "") == "dumb"
    no_color = environ.get("NO_COLOR", "") != ""
    force_color = environ.get("FORCE_COLOR", "") != ""
    passthrough = stdout_tty and not plain
    return Presentation(
        passthrough=passthrough,
        command_colour=passthrough and not no_color,
        status_line=passthrough and stderr_tty,
        colour=not no_color and (force_color or (stderr_tty and not plain)),
        unicode=locale_is_utf8(environ),
    )


# ---- the command's bytes, for a terminal -------------------------------------------------------

_FOR_TERMINAL = escapes.binary(
    r"(\x1b\[[0-9;:]*m)",  # 1: colours and text attributes, kept when colour is wanted
    r"(\x1b\[[012]?K)",  # 2: erase in line, kept (progress bars use it with carriage returns)
    escapes.CSI,  # any other CSI: cursor movement, modes, queries
    escapes.STRING + escapes.STRING_END + "?",  # OSC, DCS, ... strings (titles, links), ended or aborted
    escapes.ESCAPE,  # other escapes: charsets, keypad modes, resets
    escapes.SILENT_CONTROL,  # controls that draw nothing (BEL included)
)
# An unfinished sequence longer than this is not one: let it go rather than hold it forever.
_CARRY_LIMIT = 64 * 1024


class TerminalFilter:
    """The command's bytes as a terminal would show them, without what would change its state.

    Kept: text, newlines, carriage returns, backspaces, tabs, erase-in-line and (if wanted)
    colours. Removed: cursor movement, screen switches, titles, hyperlinks, mode changes, bells.
    A sequence cut by a read is held until the next one completes it.
    """

    def __init__(self, colour: bool) -> None:
        self._colour = colour
        self._carry = b""
        self.coloured = False  # a colour was passed on (so the end should reset attributes)
        self._alternate = False  # between a switch to the alternate screen and the switch back
        self.hid_alternate = False  # something was drawn on the alternate screen and left out

    def feed(self, data: bytes) -> bytes:
        data = self._carry + data
        self._carry = b""
        if b"\xc2" in data:
            if data.endswith(b"\xc2"):
                data, self._carry = data[:-1], b"\xc2"
            data = c1_as_esc(data)
        start = escapes.unfinished_start(data, _CARRY_LIMIT)
        if start is not None:
            data, self._carry = data[:start], data[start:] + self._carry
        return b"".join(_FOR_TERMINAL.sub(self._keep, part) for part in self._main_screen(data))

    def _main_screen(self, data: bytes) -> list[bytes]:
        """The parts of data meant for the main screen. A full-screen program (an editor, a pager)
        draws on the alternate screen with cursor moves this filter removes, so what it drew
        would land scattered over the person's screen: it is left out, from the switch to the
        alternate screen to the switch back."""
        parts, start = [], 0
        for switch in ALTERNATE_SWITCH.finditer(data):
            if not self._alternate:
                parts.append(data[start:switch.start()])
            elif switch.start() > start:
                self.hid_alternate = True
            self._alternate = switch[1] == b"h"
            start = switch.end()
        if not self._alternate:
            parts.append(data[start:])
        elif len(data) > start:
            self.hid_alternate = True
        return parts

    def _keep(self, match: re.Match[bytes]) -> bytes:
        if match[1] is not None:
            if self._colour:
                self.coloured = True
                return match[1]
            return b""
        return match[2] or b""


# ---- the command's bytes, as cleaned text ------------------------------------------------------


class Pieces:
    """Cleaned output in pieces that end at line ends where they can.

    Cleaning a piece on its own cannot see a carriage return's effect on the piece before it, so
    a line still being written waits for its newline. A plain partial line (a prompt, "Building...
    ") is let through after `hold` seconds; one that overwrites itself (`\r` or backspace: a
    progress bar) waits for its newline, up to `PARTIAL_LIMIT` bytes, so that only its last frame
    is written, as in the JSON output. When a line that was let through is overwritten after all,
    what it became is written whole on a line of its own: a pipe cannot take back what it carried.
    """

    def __init__(self, limit: int, hold: float = PARTIAL_HOLD) -> None:
        self._chunks = Chunks(limit)
        self._hold = hold
        self._partial = bytearray()  # the current line's bytes not yet let through
        self._partial_since: float | None = None
        self._overwrites = False  # the partial line holds a carriage return or a backspace
        self._shown = bytearray()  # the current line's bytes already let through
        self._ready = False

    def write(self, data: bytes, now: float) -> None:
        end = data.rfind(b"\n") + 1
        if end:
            first = data.find(b"\n") + 1
            self._end_line(bytes(self._partial) + data[:first])
            if first < end:
                self._chunks.write(data[first:end])
            self._partial.clear()
            self._partial_since = None
            self._overwrites = False
            self._ready = True
            data = data[end:]
        if data:
            if self._partial_since is None:
                self._partial_since = now
            self._partial += data
            self._overwrites = self._overwrites or b"\r" in data or b"\x08" in data
            if len(self._partial) > PARTIAL_LIMIT:
                self._release()

    def due(self) -> float | None:
        """When a piece can be taken (a time in the writer's clock), or None while there is none."""
        if self._ready:
            return float("-inf")
        if self._partial_since is None or self._overwrites:
            return None
        return self._partial_since + self._hold

    def take(self, now: float) -> tuple[str, int] | None:
        """The cleaned text of the lines that are complete (or held long enough) and bytes dropped."""
        if self._partial_since is not None and not self._overwrites and now >= self._partial_since + self._hold:
            self._release()
        if not self._ready:
            return None
        self._ready = False
        text, dropped = self._chunks.take()
        return (text, dropped) if text or dropped else None

    def take_rest(self, expected_output: str | None = None) -> tuple[str, int] | None:
        """Everything still held, at the end. A last line the result's output does not end with
        (a prompt that only the screen told apart from the output) is left out."""
        if self._partial:
            rest = clean(bytes(self._shown + self._partial))
            if expected_output is None or (rest and expected_output.endswith(rest)):
                self._end_line(bytes(self._partial))
                self._ready = True
            self._partial.clear()
            self._partial_since = None
            self._overwrites = False
        return self.take(float("-inf"))

    def _release(self) -> None:
        """Let the partial line through, except an unfinished sequence or character at its end."""
        data = bytes(self._partial)
        cut = len(data) - unfinished_length(data)
        if not cut:
            self._partial_since = None  # only an unfinished sequence: wait for the bytes that end it
            return
        self._end_line(data[:cut])
        self._shown += data[:cut]
        del self._partial[:cut]
        self._partial_since = None if not self._partial else self._partial_since
        self._overwrites = b"\r" in self._partial or b"\x08" in self._partial
        self._ready = True

    def _end_line(self, rest: bytes) -> None:
        """Write the rest of the current line (or part of it): raw when nothing of the line was
        let through yet, else as what the whole line now shows beyond what was written."""
        if not self._shown:
            self._chunks.write(rest)
            return
        before = clean(bytes(self._shown))
        after = clean(bytes(self._shown) + rest)
        if rest.endswith(b"\n"):
            self._shown.clear()
        elif len(self._shown) > PARTIAL_LIMIT:
            self._shown = bytearray(self._shown[-PARTIAL_LIMIT:])  # memory stays bounded
        if after.startswith(before):
            self._chunks.write(after[len(before):].encode("utf-8"))
        else:
            self._chunks.write(b"\n" + after.encode("utf-8"))


# ---- writing, without ever failing the run -------------------------------------------------------


class Out:
    """stdout for a display: a reader that went away (`| head`) marks it broken instead of raising."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write_bytes(self, data: bytes) -> None:
        if self.broken or not data:
            return
        try:
            self.stream.flush()
            self.stream.buffer.write(data)
            self.stream.buffer.flush()
        except BrokenPipeError:
            self._gone()
        except OSError:
            pass  # a write that cannot be done is dropped; the result still says everything

    def write_text(self, text: str) -> None:
        if self.broken or not text:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self._gone()
        except (OSError, UnicodeEncodeError):
            pass

    def _gone(self) -> None:
        """Nobody reads any more: send whatever else comes to /dev/null, so exiting is quiet too."""
        self.broken = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass


def write_err(text: str, stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError, UnicodeEncodeError):
        pass


# ---- displays ----------------------------------------------------------------------------------


class Display:
    """A display that shows nothing: the shape every display has, and what each call means."""

    on_output: Callable[[bytes], None] | None = None  # the command's raw bytes, as they arrive

    @property
    def broken(self) -> bool:
        """The reader of stdout went away; the run should stop as a pipeline's writer would."""
        return False

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        """The shell runs; `started_at` is in the clock given to the display."""

    def downgraded(self, downgrade: Downgrade) -> None:
        """The strategy stepped down."""

    def wait(self, now: float) -> float | None:
        """How long the run may wait for the command before `tick` has work (None: no limit)."""
        return None

    def tick(self, now: float) -> None:
        """Write what is due."""

    def stop(self) -> None:
        """The run is over (or failed): write what is held and leave the terminal as it was."""

    def finished(self, result: Result) -> None:
        """Show the result."""


class JsonlDisplay(Display):
    """`--format jsonl`: one JSON object per line on stdout, the `finished` one always last."""

    def __init__(self, limit: int, clock: Callable[[], float], stdout: TextIO | None = None) -> None:
        self._clock = clock
        self._out = Out(stdout or sys.stdout)
        self._pieces = Pieces(limit)
        self._started_at: float | None = None
        self._last = float("-inf")
        self.on_output = self._output

    @property
    def broken(self) -> bool:
        return self._out.broken

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        self._started_at = started_at
        self._send(events.started_event(command, shell, strategy))

    def _output(self, data: bytes) -> None:
        self._pieces.write(data, self._clock())

    def downgraded(self, downgrade: Downgrade) -> None:
        self._flush(self._clock(), self._pieces.take(float("-inf")))  # what came before it, first
        self._send(events.downgrade_event(downgrade))

    def wait(self, now: float) -> float | None:
        due = self._pieces.due()
        return None if due is None else max(0.0, max(due, self._last + OUTPUT_INTERVAL) - now)

    def tick(self, now: float) -> None:
        due = self._pieces.due()
        if due is not None and now >= max(due, self._last + OUTPUT_INTERVAL):
            self._flush(now, self._pieces.take(now))

    def stop(self) -> None:
        self._flush(self._clock(), self._pieces.take(float("-inf")))

    def finished(self, result: Result) -> None:
        self._flush(self._clock(), self._pieces.take_rest(result.output))
        self._send(events.finished_event(result))
        if result.message and result.status is Status.ERROR:
            write_err(f"safe-run: {result.message}\n")

    def _flush(self, now: float, piece: tuple[str, int] | None) -> None:
        if piece is None:
            return
        self._last = now
        at = 0.0 if self._started_at is None else now - self._started_at
        self._send(events.output_event(at, *piece))

    def _send(self, event: dict[str, object]) -> None:
        self._out.write_text(json.dumps(event, ensure_ascii=False) + "\n")


class StatusLine:
    """One line on a terminal's stderr, redrawn in place and erased without a trace."""

    def __init__(self, stream: TextIO, colour: bool, unicode: bool) -> None:
        self._stream = stream
        self._colour = colour
        self._frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" if unicode else "|/-\\"
        self._frame = 0
        self.visible = False

    def draw(self, text: str) -> None:
        self._frame = (self._frame + 1) % len(self._frames)
        line = f"{self._frames[self._frame]} {text}"[: max(1, self._columns() - 1)]
        if self._colour:
            line = f"\x1b[2m{line}\x1b[0m"
        write_err(f"\r\x1b[2K{line}", self._stream)
        self.visible = True

    def clear(self) -> None:
        if self.visible:
            write_err("\r\x1b[2K", self._stream)
            self.visible = False

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80
        except (OSError, ValueError):
            return 80


class QuietKeys:
    """What the person types during a run is not echoed while the status line is on screen.

    The terminal echoes keys typed at a running program; an echoed Enter moves the cursor below
    the status line, which then stays on the screen. So while the status line shows, echo is off
    on the terminal it is drawn on (when that is also where keys come from, and safe-run is in its
    foreground). The keys are still queued and reach the shell after the run, as they would have.
    Only the ECHO flag is touched, and it is put back on whenever the status line goes away.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._quieted = False

    @staticmethod
    def for_streams(stdin: TextIO, stderr: TextIO) -> QuietKeys | None:
        """The guard when stdin and stderr are the same terminal, else None."""
        try:
            same = os.isatty(stdin.fileno()) and os.fstat(stdin.fileno()).st_rdev == os.fstat(stderr.fileno()).st_rdev
        except (OSError, ValueError, AttributeError):
            return None
        return QuietKeys(stderr.fileno()) if same else None

    def quiet(self) -> None:
        try:
            if os.tcgetpgrp(self._fd) != os.getpgrp():
                return  # in the background: changing the terminal would stop safe-run (SIGTTOU)
            attrs = termios.tcgetattr(self._fd)
            if attrs[3] & termios.ECHO:
                attrs[3] &= ~termios.ECHO
                termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
                self._quieted = True
        except (OSError, termios.error):
            pass

    def restore(self) -> None:
        if not self._quieted:
            return
        self._quieted = False
        try:
            attrs = termios.tcgetattr(self._fd)
            attrs[3] |= termios.ECHO
            termios.tcsetattr(self._fd, termios.TCSANOW, attrs)
        except (OSError, termios.error):
            pass


def _elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _is_utf8(name: str) -> bool:
    return name.lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig")


def locale_is_utf8(environ: Mapping[str, str]) -> bool:
    """The character set the person's locale names (LC_ALL, else LC_CTYPE, else LANG) is UTF-8.

    Read from the variables rather than from the stream: Python's UTF-8 mode makes every stream
    UTF-8 under `LANG=C`, and its locale coercion adds `LC_CTYPE=C.UTF-8` to the environment,
    while the terminal behind it may still draw only ASCII.
    """
    lang = environ.get("LANG") or "C"
    ctype = environ.get("LC_CTYPE", "")
    if ctype in _COERCED and not environ.get("LC_ALL") and not _codeset_is_utf8(lang):
        ctype = ""  # Python's start-up put it there (PEP 538): the person's locale is LANG's
    name = environ.get("LC_ALL") or ctype or lang
    return _codeset_is_utf8(name)


# What Python sets LC_CTYPE to when it starts under the C locale (PEP 538 locale coercion).
_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")


def _codeset_is_utf8(locale_name: str) -> bool:
    return _is_utf8(locale_name.partition(".")[2].partition("@")[0])


def unicode_ok(stream: TextIO, locale_utf8: bool) -> bool:
    """Marks and spinners may be drawn in Unicode: the locale says UTF-8 and the stream can write it."""
    return locale_utf8 and _is_utf8(getattr(stream, "encoding", None) or "")


class PrettyDisplay(Display):
    """For people: the command's output on stdout as it comes, a status line, then the summary."""

    def __init__(
        self,
        presentation: Presentation,
        limit: int,
        clock: Callable[[], float],
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        stdin: TextIO | None = None,
    ) -> None:
        self.presentation = presentation
        self._clock = clock
        self._out = Out(stdout or sys.stdout)
        self._err = stderr or sys.stderr
        self._unicode = unicode_ok(self._err, presentation.unicode)
        self._filter = TerminalFilter(presentation.command_colour) if presentation.passthrough else None
        self._pieces = None if presentation.passthrough else Pieces(max(limit, PRETTY_WINDOW))
        self._pending = bytearray()
        self._status = StatusLine(self._err, presentation.colour, self._unicode) if presentation.status_line else None
        self._keys = QuietKeys.for_streams(stdin or sys.stdin, self._err) if self._status is not None else None
        self._catching_tstp = False  # SIGTSTP (Ctrl-Z) is handled by `_suspend` during the run
        self._line_start = True  # the last thing written to stdout ended a line
        self._last = float("-inf")
        self._drawn = float("-inf")
        self._started_at: float | None = None
        self._strategy: Strategy | None = None
        self._shell = ""
        self._downgraded = False
        self._stopped = False
        # Bytes of output left out of what this display wrote (a burst beyond PRETTY_WINDOW): the
        # result's own count is about the head and tail it keeps, not about what was shown here.
        self._omitted = 0
        self.on_output = self._output

    @property
    def broken(self) -> bool:
        return self._out.broken

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        self._started_at, self._strategy, self._shell = started_at, strategy, shell.name
        if self._status is not None:
            self._catch_suspend()
            if self._keys is not None:
                self._keys.quiet()
        self._draw(self._clock())

    def _catch_suspend(self) -> None:
        """Ctrl-Z: take the status line off the screen (and give echo back) before stopping."""
        try:
            if signal.getsignal(signal.SIGTSTP) == signal.SIG_DFL:  # not ignored, nor someone else's
                signal.signal(signal.SIGTSTP, self._suspend)
                self._catching_tstp = True
        except (ValueError, OSError, AttributeError):
            pass  # not the main thread, or no job control here

    def _suspend(self, signum: int, frame: object) -> None:
        if self._status is not None:
            self._status.clear()
        if self._keys is not None:
            self._keys.restore()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        # Continued (fg or bg): carry on as before, quietly only if in the foreground again.
        signal.signal(signal.SIGTSTP, self._suspend)
        if self._keys is not None and not self._stopped:
            self._keys.quiet()

    def _output(self, data: bytes) -> None:
        if self._filter is not None:
            self._pending += self._filter.feed(data)
        else:
            assert self._pieces is not None
            self._pieces.write(data, self._clock())

    def downgraded(self, downgrade: Downgrade) -> None:
        self._strategy = Strategy(downgrade.to)
        self._downgraded = True
        self._draw(self._clock())

    def _output_due(self, now: float) -> float | None:
        if self._filter is not None:
            if not self._pending:
                return None
            return now if len(self._pending) >= LIVE_LIMIT else self._last + LIVE_INTERVAL
        assert self._pieces is not None
        due = self._pieces.due()
        return None if due is None else max(due, self._last + OUTPUT_INTERVAL)

    def wait(self, now: float) -> float | None:
        times = [t for t in (self._output_due(now), self._status_due()) if t is not None]
        return max(0.0, min(times) - now) if times else None

    def _status_shown(self) -> bool:
        """The status line may be drawn: the run is on and the cursor is at the start of a line."""
        return self._status is not None and self._started_at is not None and self._line_start and not self._stopped

    def _status_due(self) -> float | None:
        return self._drawn + STATUS_INTERVAL if self._status_shown() else None

    def tick(self, now: float) -> None:
        due = self._output_due(now)
        if due is not None and now >= due:
            self._write_output(now, self._take(now))
        status_due = self._status_due()
        if status_due is not None and now >= status_due:
            self._draw(now)

    def _take(self, now: float) -> bytes:
        if self._filter is not None:
            data, self._pending = bytes(self._pending), bytearray()
            return data
        assert self._pieces is not None
        return self._encoded(self._pieces.take(now))

    def _write_output(self, now: float, data: bytes) -> None:
        self._last = now
        if not data:
            return
        if self._status is not None:
            self._status.clear()
        self._out.write_bytes(data)
        self._line_start = data.endswith(b"\n")
        if self._line_start:
            self._draw(now)

    def _draw(self, now: float) -> None:
        if not self._status_shown():
            return
        assert self._status is not None and self._started_at is not None
        self._drawn = now
        strategy = self._strategy.value if self._strategy else "?"
        if self._downgraded:
            strategy += " (downgraded)"
        self._status.draw(f"running · {_elapsed(now - self._started_at)} · {self._shell} · strategy {strategy}")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._write_output(self._clock(), self._take(float("-inf")))
        if self._status is not None:
            self._status.clear()
        if self._keys is not None:
            self._keys.restore()
        if self._catching_tstp:
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            self._catching_tstp = False
        if self._filter is not None and self._filter.coloured:
            self._out.write_bytes(b"\x1b[0m")

    def finished(self, result: Result) -> None:
        self.stop()
        if self._pieces is not None:
            self._write_output(self._clock(), self._encoded(self._pieces.take_rest(result.output)))
        if not self._line_start:
            self._out.write_bytes(b"\n")
            self._line_start = True
        from .render import print_summary

        notes = []
        if self._filter is not None and self._filter.hid_alternate:
            notes.append("the full screen the command drew (alternate screen) is not shown; --format json keeps its text")
        print_summary(result, self.presentation.colour, self._err, self._unicode, omitted=self._omitted, notes=notes)

    def _encoded(self, piece: tuple[str, int] | None) -> bytes:
        if piece is None:
            return b""
        text, dropped = piece
        self._omitted += dropped
        return text.encode("utf-8", "replace")


@contextmanager
def waiting_line(output_format: str, yield_after: float, clock: Callable[[], float] = time.monotonic) -> Iterator[None]:
    """A status line while a `--yield-after` call waits for its session's first answer.

    The session's holder keeps the output until that answer (it is handed out once, to the
    caller, and what was handed out decides how long the session is kept), so until then there is
    only the clock to show; the output follows with the answer.
    """
    presentation = choose_presentation(os.environ, _isatty(sys.stdout), _isatty(sys.stderr))
    if output_format != "pretty" or not presentation.status_line:
        yield
        return
    status = StatusLine(sys.stderr, presentation.colour, unicode_ok(sys.stderr, presentation.unicode))
    keys = QuietKeys.for_streams(sys.stdin, sys.stderr)
    done = threading.Event()
    started = clock()

    def draw() -> None:
        while not done.wait(STATUS_INTERVAL):
            status.draw(f"running · {_elapsed(clock() - started)} · --yield-after {yield_after:g}")

    if keys is not None:
        keys.quiet()
    drawer = threading.Thread(target=draw, name="safe-run status line", daemon=True)
    drawer.start()
    try:
        yield
    finally:
        done.set()
        drawer.join()
        status.clear()
        if keys is not None:
            keys.restore()


def make_display(
    output_format: str, limit: int, clock: Callable[[], float] = time.monotonic
) -> Display | None:
    """The display for a resolved format ('json', 'jsonl' or 'pretty'); None for JSON."""
    if output_format == "jsonl":
        return JsonlDisplay(limit, clock)
    if output_format == "pretty":
        presentation = choose_presentation(os.environ, _isatty(sys.stdout), _isatty(sys.stderr))
        return PrettyDisplay(presentation, limit, clock)
    return None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (ValueError, AttributeError):
        return False

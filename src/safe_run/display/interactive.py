"""A person at their own terminal: the keyboard and the screen belong to the command.

When stdin and stdout are both the person's terminal, the run is theirs as it would be without
safe-run: the terminal is in raw mode for the run, every key goes to the command as a terminal
passes it while the command waits on its terminal (what is typed while it works stays in the
person's terminal, type-ahead for whoever reads next: the command, or their own shell after the
run, never the shell safe-run holds), Ctrl-C and Ctrl-\\ are the command's own interrupt and
quit characters (they come to safe-run as signals and go on to the command: a REPL goes on), the command's
bytes go to the screen as they are (full-screen programs, the alternate screen, colours), the
questions it asks the terminal reach the person's terminal and its answers come back, and the
terminal's size follows the person's (SIGWINCH). Input waits are never stopped: the window title
says the command waits for the person, and the summary says for how long.

Ctrl-Z suspends safe-run itself (and gives the terminal back) as it would any job of the person's
shell; `fg` takes it up again. The terminal is given back as it was however the run ends.
"""

from __future__ import annotations

import os
import signal
import termios
import tty
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any

from ..core import escapes
from ..engine import polling
from ..engine.interrupts import KEYS
from ..environment import Environment
from ..core.request import sized
from ..core.render import print_summary
from ..core.result import Result, ShellInfo, Strategy
from .interface import Display, Hold
from .lines import LineDisplay
from .status_line import elapsed, in_front

QUIT = KEYS[signal.SIGQUIT]  # Ctrl-\, the command's quit character
# The window title is brought up to date this often while the run goes on.
TITLE_INTERVAL = 1.0
SAVE_TITLE, RESTORE_TITLE = b"\x1b[22;0t", b"\x1b[23;0t"
# What a command killed in its full screen leaves behind, taken back: the main screen, a visible
# cursor, plain colours, and no input mode of its own.
LEAVE_FULL_SCREEN = b"\x1b[?1049l"
ENTER_FULL_SCREEN = escapes.ENTER_ALTERNATE + escapes.FRESH_SCREEN
SANE = b"\x1b[0m\x1b[?25h" + escapes.MODES_OFF
# The longest unfinished sequence waited for before safe-run writes its title again: a control
# string (a title, a hyperlink) that long has lost its end.
UNFINISHED_MAX = 4096
# How often a run going on in the background (`bg`) looks whether `fg` brought it to the front.
BEHIND_LOOK_S = 0.1


def interactive(env: Environment, no_input: bool) -> bool:
    """Whether the run is the person's: stdin their terminal (whatever stdout is: `| tee log`), and
    they did not ask for --no-input; not in the background (`safe-run CMD &`), where the keys are
    the shell's and taking the terminal would stop safe-run (SIGTTOU) until `fg`."""
    if no_input or not env.persons_keyboard or not in_front(env.stdin.fileno()):
        return False
    return env.presentation.passthrough or not env.stdout_isatty


def open_keyboard(env: Environment) -> int | None:
    """The person's terminal on stdout opened again for their keys, when stdin is not it (`seq 9 |
    safe-run -- fzf`: the pipe is the command's, the keys come from the terminal, as fzf takes
    them); None when it cannot be opened.

    By its name first; a terminal another user owns (a person who became this user with `su`,
    `sudo -iu` or `runuser` keeps their own) refuses that, but opens as /dev/tty, this process's
    controlling terminal, when that is the one on stdout."""
    stdout = env.stdout.fileno()
    try:
        return os.open(os.ttyname(stdout), os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except (OSError, ValueError):
        pass
    try:
        os.tcgetpgrp(stdout)  # answered for the controlling terminal only
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None


def terminal_size(env: Environment) -> tuple[int, int]:
    """The person's terminal's size, rows and columns, for the command's terminal."""
    size = os.get_terminal_size((env.stdout if env.stdout_isatty else env.stdin).fileno())
    return sized(size.lines, size.columns)


class InteractiveDisplay(Display):
    # Output processing (a newline also returns the carriage) stays off: the command's terminal
    # sends its own carriage returns, and they reach the person's as they are.
    output_processing = False

    def __init__(self, env: Environment, clock: Callable[[], float], keyboard: int | None = None) -> None:
        """`keyboard`: where the person's keys come from when it is not stdin (see `open_keyboard`)."""
        self._env = env
        self._clock = clock
        self._in = env.stdin.fileno() if keyboard is None else keyboard
        self._out: int | None = env.stdout.fileno()
        self._saved: list[Any] | None = None
        self._resized = False
        self._started_at: float | None = None
        self._command = ""
        self._titled = float("-inf")
        self._title_due = False  # the title is to be written once the command's bytes allow it
        self._unfinished = b""  # the end of the command's output, when it leaves a sequence or a character open
        self._prompt: str | None = None
        self._waiting_since: float | None = None
        self.waited = 0.0  # seconds the command waited for the person, all told
        self._full_screen = False  # the command's bytes left the alternate screen on
        self._line_start = True  # the command's last text on the main screen ended its line
        self._stopped = False
        self._handlers: dict[int, object] = {}
        self._hold: Hold | None = None  # stops the command with safe-run, and lets it go on
        self._behind = False  # taken up again in the background (`bg`): the terminal is the shell's
        self._title_kept = False  # the person's window title is on the terminal's title stack
        self._quit = False  # Ctrl-\ came (as SIGQUIT), for the command
        self.dropped = 0  # bytes typed after a secret was asked that the command never read
        self.on_output = self._output

    def started(self, command: str, shell: ShellInfo, strategy: Strategy, started_at: float) -> None:
        self._started_at = started_at
        self._command = command.strip().splitlines()[0] if command.strip() else ""
        self._own_title()
        self._raw()
        handlers = ((signal.SIGWINCH, self._on_resize), (signal.SIGCONT, self._on_continue),
                    (signal.SIGTSTP, self._on_suspend), (signal.SIGQUIT, self._on_quit))
        for signum, handler in handlers:
            try:
                self._handlers[signum] = signal.signal(signum, handler)
            except ValueError:
                pass  # not the main thread: the size stays as it was at the start
        self._title(self._clock())

    def holding(self, hold: Hold) -> None:
        self._hold = hold

    def input_fds(self) -> Sequence[int]:
        return () if self._behind else (self._in,)

    def input_ready(self) -> bool:
        return not self._behind and bool(polling.readable([self._in], 0))

    def typed(self) -> bytes:
        """What the person typed since the last look (never a blocking read: the terminal's file
        is the person's shell's too)."""
        if not self.input_ready():
            return b""
        try:
            return os.read(self._in, 65536)
        except OSError:
            return b""

    def control_keys(self) -> bytes:
        pressed, self._quit = (QUIT if self._quit else b""), False
        return pressed

    def drop_typed(self, kept: int = 0) -> None:
        self.dropped += kept
        if self._behind:
            return  # what is typed now is the shell's
        try:
            pending = polling.unread(self._in)
            termios.tcflush(self._in, termios.TCIFLUSH)
        except (OSError, termios.error):
            return
        self.dropped += pending

    def resized(self) -> tuple[int, int] | None:
        if not self._resized:
            return None
        self._resized = False
        return self._size()

    def _size(self) -> tuple[int, int] | None:
        try:
            return terminal_size(self._env)
        except OSError:
            return None

    def waiting(self, prompt: str | None) -> None:
        """The command waits for the person at `prompt` (None: it does not wait now)."""
        now = self._clock()
        if prompt is None and self._waiting_since is not None:
            self.waited += now - self._waiting_since
            self._waiting_since = None
        elif prompt is not None and self._waiting_since is None:
            self._waiting_since = now
        if prompt != self._prompt:
            self._prompt = prompt
            self._title(now)

    def wait(self, now: float) -> float | None:
        if self._behind:
            return BEHIND_LOOK_S
        if self._title_due:
            return None  # the title goes with the output that completes the command's sequence
        return max(0.0, self._titled + TITLE_INTERVAL - now)

    def tick(self, now: float) -> None:
        if self._behind and in_front(self._in):
            self._on_continue(signal.SIGCONT, None)  # `fg` of a running job sends no SIGCONT
        if now - self._titled >= TITLE_INTERVAL:
            self._title(now)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self.waiting(None)
        for signum, handler in self._handlers.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._cooked()
        self._write((LEAVE_FULL_SCREEN if self._full_screen else b"") + SANE)
        self._persons_title()

    def finished(self, result: Result) -> None:
        self.stop()
        if not self._line_start:
            self._write(b"\r\n")
        print_summary(result, self._env, omitted=0, notes=self.notes())

    def notes(self) -> list[str]:
        """What the summary says of the person's part in the run."""
        notes = [f"waited {elapsed(self.waited)} for your input"] if self.waited >= 0.5 else []
        if self.dropped:
            notes.append(f"dropped {self.dropped} bytes typed after a secret was asked, which the command never "
                         "read: not left for your shell")
        return notes

    def _output(self, data: bytes) -> None:
        start = 0
        for match in escapes.alternate_switches(data):
            self._note_main_screen(data[start:match.start()])
            self._full_screen, start = match.group(1) == b"h", match.end()
        self._note_main_screen(data[start:])
        self._write(data)
        self._note_unfinished(data)
        if self._title_due and not self._unfinished:
            self._title(self._clock())

    def _note_unfinished(self, data: bytes) -> None:
        """What of the command's output is an escape sequence or a UTF-8 character not yet
        complete (`escapes.unfinished_length`; a string longer than UNFINISHED_MAX is taken as
        done): safe-run writes nothing of its own into the middle of one, which would split it on
        the screen (ESC [ 3, then a title, then 1m: the colour lost, and 1m shown as text)."""
        joined = self._unfinished + data if self._unfinished else data
        kept = escapes.unfinished_length(joined, len(self._unfinished) + escapes.UNFINISHED_LOOKBACK)
        self._unfinished = joined[len(joined) - kept:] if 0 < kept <= UNFINISHED_MAX else b""

    def _note_main_screen(self, data: bytes) -> None:
        """Whether the command's last text on the main screen ended its line, so that the summary
        starts a line of its own. What it draws on the alternate screen does not count: leaving
        that screen puts the cursor back where it was."""
        if not self._full_screen:
            self._line_start = escapes.ends_line(data, self._line_start)

    def _title(self, now: float) -> None:
        if self._unfinished and not self._stopped:
            self._title_due = True
            return
        self._titled, self._title_due = now, False
        if self._started_at is None or self._stopped or self._behind:
            return  # in the background the window's title is the shell's
        if self._waiting_since is not None:
            shown = f" at {self._prompt.strip()!r}" if self._prompt and self._prompt.strip() else ""
            what = f"waiting for your input{shown} ({elapsed(now - self._waiting_since)})"
        else:
            what = f"{self._command} ({elapsed(now - self._started_at)})"
        title = f"safe-run: {what}".replace("\x1b", "").replace("\x07", "")
        self._write(b"\x1b]2;" + title.encode("utf-8", "replace") + b"\x07")

    def _raw(self) -> None:
        """Raw, but for the signal keys: Ctrl-C, Ctrl-\\ and Ctrl-Z still come as signals to
        safe-run, the job in the person's terminal, so that they work whether or not the command
        reads its keys now (SIGINT and SIGQUIT go on to the command as its own keys)."""
        try:
            saved = termios.tcgetattr(self._in)
            tty.setraw(self._in, termios.TCSANOW)
            modes = termios.tcgetattr(self._in)
            modes[3] |= termios.ISIG
            if self.output_processing:
                modes[1] |= termios.OPOST
            termios.tcsetattr(self._in, termios.TCSANOW, modes)
            if self._saved is None:
                self._saved = saved
        except (OSError, termios.error):
            pass

    def _cooked(self) -> None:
        if self._saved is not None and not self._behind:
            try:
                termios.tcsetattr(self._in, termios.TCSADRAIN, self._saved)
            except (OSError, termios.error):
                pass

    def _on_suspend(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-Z: the person's shell gets its terminal back, and safe-run stops until `fg`, the
        command with it. A full-screen program's screen goes with it, as a program suspended at a
        plain terminal leaves its screen; `fg` brings it back, and the program draws it again (see
        `_on_continue`). The window title is the person's again meanwhile: the run it names is
        stopped."""
        if self._hold is not None:
            self._hold(True, None)
        self._cooked()
        self._write((LEAVE_FULL_SCREEN if self._full_screen else b"") + SANE)
        self._persons_title()
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)  # taken up again by `_on_continue`, the SIGCONT handler set with this one
        signal.signal(signal.SIGTSTP, self._on_suspend)

    def _on_quit(self, signum: int, frame: FrameType | None) -> None:
        self._quit = True

    def _on_continue(self, signum: int, frame: FrameType | None) -> None:
        """Taken up again: raw mode back, a full-screen program's screen again, and the command told
        the size, so that it draws that screen anew (told while it is still stopped: see
        `Run.hold`). Taken up in the background (`bg`), the command goes on, its output shown as
        any job's, and the terminal stays the shell's (its keys, its modes) until `fg` brings the
        run to the front again."""
        if self._hold is not None:
            self._hold(False, self._size())
        self._behind = not in_front(self._in)
        if not self._stopped and not self._behind:
            self._raw()
            self._own_title()
            if self._full_screen:
                self._write(ENTER_FULL_SCREEN)
            self._title(self._clock())

    def _own_title(self) -> None:
        """The person's window title kept (the terminal's title stack), once, for `_persons_title`."""
        if not self._title_kept:
            self._title_kept = True
            self._write(SAVE_TITLE)

    def _persons_title(self) -> None:
        if self._title_kept:
            self._title_kept = False
            self._write(RESTORE_TITLE)

    def _on_resize(self, signum: int, frame: FrameType | None) -> None:
        self._resized = True

    def _write(self, data: bytes) -> None:
        out = self._out
        if out is None:
            return
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(out, view):]
            except BlockingIOError:  # a terminal another program made non-blocking: wait, not spin
                polling.wait((), 1.0, (out,))
            except OSError:
                return


class PipedInteractiveDisplay(InteractiveDisplay):
    """A person's run whose stdout is a pipe or a file (`safe-run -- make | tee log`): their keys
    go to the command from their terminal, as at their own terminal, and the output goes on as
    cleaned lines, as all pretty output to a pipe does (the command's terminal colours and moves
    are its terminal's, not the pipe's). The window title goes to the terminal on stderr, and the
    terminal keeps its output processing, since what reaches it through the pipe has newlines alone."""

    output_processing = True

    def __init__(self, env: Environment, clock: Callable[[], float], limit: int) -> None:
        super().__init__(env, clock)
        self._out = env.stderr.fileno() if env.stderr_isatty else None
        self._lines = LineDisplay(env, limit, clock)
        self.on_output = self._lines.on_output

    @property
    def broken(self) -> bool:
        return self._lines.broken

    def wait(self, now: float) -> float | None:
        own, lines = super().wait(now), self._lines.wait(now)
        return own if lines is None else lines if own is None else min(own, lines)

    def tick(self, now: float) -> None:
        super().tick(now)
        self._lines.tick(now)

    def stop(self) -> None:
        super().stop()
        self._lines.stop()

    def finished(self, result: Result) -> None:
        self.stop()
        self._lines.finish_output(result)
        print_summary(result, self._env, omitted=self._lines.omitted, notes=self.notes())

"""One line on a terminal's stderr that says the run goes on, and keeps typed keys from breaking it."""

from __future__ import annotations

import os
import termios
from typing import TextIO

from .streams import write_err

# The status line's clock ticks this often.
STATUS_INTERVAL = 0.1


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

    def in_front(self) -> bool:
        """Whether its terminal's foreground is this process (see `in_front`): in the background the
        last line is the shell's prompt, and nothing is drawn over it."""
        try:
            return in_front(self._stream.fileno())
        except (OSError, ValueError):  # a stream with no descriptor: nobody's terminal
            return True

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self._stream.fileno()).columns or 80
        except (OSError, ValueError):
            return 80


def in_front(terminal: int) -> bool:
    """Whether this process's group is the terminal's foreground (not a job in the background,
    `safe-run CMD &` or after `bg`), or the terminal cannot say (it is not this process's
    controlling terminal). In the background, changing the terminal or reading it stops safe-run
    (SIGTTOU, SIGTTIN), and a status line would be drawn over the shell's prompt."""
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return True


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
        if not in_front(self._fd):
            return
        try:
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


def elapsed(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"

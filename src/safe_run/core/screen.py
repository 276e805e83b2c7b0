"""What the terminal shows at the cursor, and what that line says about the program behind it.

When the shell's own signals are missing, the only evidence of how a command stands is the
screen: a shell prompt means it is done, a continuation prompt means the shell still waits for
the rest of the command, a question means a program waits for an answer.

Output can arrive at tens of MB/s while a terminal emulator manages about 0.5 MB/s, so the
emulator never sits on the stream. `ScreenTail` keeps a bounded raw tail, watches only for
alternate-screen switches as bytes pass, and emulates the tail when someone asks. Even then,
output that never moves the cursor between lines (most output) is read without the emulator:
only its last line can hold the cursor.

The line predicates are heuristics over observed prompts. They take the line as it stands up to
the cursor (`ScreenTail.before_cursor`), trailing spaces included, because the space after a
prompt character is much of what tells a prompt (``$ ``) from output that merely ends in one
(``test$``). `input_prompt` is the exception: questions end in many ways, so it ignores
trailing whitespace.
"""

from __future__ import annotations

import re

from . import escapes

# Modes 1049, 1047 and 47 switch to the alternate screen and back; several
# private modes may be set by one sequence, so the number can sit among others.
_LONGEST_SWITCH = 64
"""Bytes of earlier input rescanned by each feed, so a switch cut between two feeds is seen."""

# Anything that can leave the cursor off the last line, or change what an
# earlier cell shows: every CSI but colours (SGR), private modes and questions to the terminal
# (status and device attribute requests, which draw nothing), the
# cursor-moving and resetting ESC sequences, and the line feeds that are not LF.
_MOVES = re.compile(rb"\x1b\[(?![\d;:]*m|\?[\d;]*[hl]|[?>]?\d*[nc])|\x1b[78cDEM]|[\x0b\x0c]")

# Cursor addressing (CUP, HVP) and erasing the whole screen: drawing in place, not scrolling on.
_PLACED = re.compile(rb"\x1b\[[\d;]*[Hf]|\x1b\[[23]J")

# What draws nothing on a line that moves no cursor: strings (OSC and kin),
# CSI and other escapes (possibly cut short at the end), and silent controls.
# Carriage return, backspace and tab stay: they move the cursor on the line.
_SILENT = escapes.text(
    escapes.STRING + escapes.STRING_END + "?", escapes.CSI, escapes.ESCAPE, r"[\x00-\x07\x0a-\x0c\x0e-\x1f\x7f]"
)
_LINE_MOTION = re.compile(r"([\r\x08\t])")
_TAB_STOP = 8

# The cursor's line as shown, that line up to the cursor, and the cursor's row and column (from 0).
Rendered = tuple[str, str, int, int]
"""A screen row as displayed, and the same row from its first column up to the cursor."""


class ScreenTail:
    """Bounded memory of the last raw bytes written to the terminal, plus alternate-screen state.

    Offsets are counted in bytes since the last reset, so the positions of alternate-screen
    switches stay meaningful while the kept bytes slide along the stream.
    """

    def __init__(self, columns: int, rows: int, keep_bytes: int = 16384) -> None:
        if columns < 1 or rows < 1 or keep_bytes < 1:
            raise ValueError("columns, rows and keep_bytes must be positive")
        self._columns = columns
        self._rows = rows
        self._keep = keep_bytes
        self.reset()

    def reset(self) -> None:
        """Forget everything, so what is shown next belongs to whatever starts now."""
        self._buf = bytearray()
        self._base = 0  # stream offset of _buf[0]
        self._alternate = False
        self._used_alternate = False
        self._alternate_from = 0  # stream offset just after the latest switch into the alternate screen
        self._entered_at = 0  # stream offset where the current alternate-screen visit began
        self._visits: list[tuple[int, int]] = []  # finished visits still overlapping _buf
        self._rendered: tuple[int, Rendered] | None = None

    def feed(self, data: bytes) -> None:
        """Remember `data`; cheap enough for every read, however fast the output."""
        old = len(self._buf)
        self._buf += data
        self._scan_switches(old)
        if len(self._buf) > 2 * max(self._keep, _LONGEST_SWITCH):
            self._trim()

    @property
    def alternate(self) -> bool:
        """Inside the alternate screen right now, where full-screen programs draw."""
        return self._alternate

    @property
    def used_alternate(self) -> bool:
        """The alternate screen was entered at some point since the last reset."""
        return self._used_alternate

    def drawn_in_place(self) -> bool:
        """The output kept moves the cursor to a place on the screen or clears it, as a full-screen
        program does without the alternate screen (top redrawing each frame from the top)."""
        return _PLACED.search(self._buf) is not None

    def cursor_line(self) -> str:
        """The text of the line the cursor is on, as a terminal would show it, trailing spaces stripped."""
        return self._render()[0].rstrip(" ")

    def redraw(self, rows: int, columns: int) -> bytes:
        """What draws the screen as it is now on a person's terminal of `rows` x `columns`."""
        from .emulator import redraw  # pyte: only when a person attaches

        return redraw(self._screen_bytes(), self._columns, self._rows, rows, columns, self._alternate)

    def lines(self) -> list[str]:
        """The screen now shown, as lines: a full-screen program's, for a caller who reads text."""
        from .emulator import screen_lines  # pyte: only when asked

        return screen_lines(self._screen_bytes(), self._columns, self._rows)

    def resize(self, rows: int, columns: int) -> None:
        """The terminal has a new size: what is emulated from now on is drawn at it."""
        self._rows, self._columns = rows, columns
        self._rendered = None

    def cursor(self) -> tuple[int, int]:
        """Where the cursor is, row and column from 0, as far as the kept output tells: what a
        terminal reports when a program asks (a cursor position request)."""
        _, _, row, column = self._render()
        return row, column

    def before_cursor(self) -> str:
        """The cursor's line from its first column up to the cursor, trailing spaces kept.

        This is what the line predicates want: a prompt ends where the cursor waits, so text
        drawn further right (a right-hand prompt, a clock) does not hide it.
        """
        return self._render()[1]

    def shot(self) -> Shot:
        """The screen as it is now, to be read later if at all: a prompt that moves the cursor
        (zsh's, fish's) needs the emulator, which takes milliseconds, and most commands end by
        their marks without anyone asking what their prompt looked like."""
        if self._rendered is not None and self._rendered[0] == self._end:
            return Shot(b"", self._columns, self._rows, self._rendered[1][1])
        return Shot(self._screen_bytes(), self._columns, self._rows)

    @property
    def _end(self) -> int:
        return self._base + len(self._buf)

    def _scan_switches(self, old: int) -> None:
        for match in escapes.alternate_switches(self._buf, max(0, old - _LONGEST_SWITCH)):
            if match.end() > old:  # anything ending earlier was seen by an earlier feed
                self._switch(match.group(1) == b"h", self._base + match.start(), self._base + match.end())

    def _switch(self, on: bool, start: int, end: int) -> None:
        if on:
            if not self._alternate:
                self._entered_at = start
            self._alternate = self._used_alternate = True
            self._alternate_from = end
        elif self._alternate:
            self._alternate = False
            self._visits.append((self._entered_at, end))

    def _trim(self) -> None:
        drop = len(self._buf) - max(self._keep, _LONGEST_SWITCH)
        del self._buf[:drop]
        self._base += drop
        self._visits = [visit for visit in self._visits if visit[1] > self._base]

    def _slice(self, start: int, end: int) -> bytes:
        return bytes(self._buf[start - self._base : end - self._base])

    def _render(self) -> Rendered:
        """Emulate at most once per state of the stream: callers often ask for both forms."""
        if self._rendered is None or self._rendered[0] != self._end:
            self._rendered = (self._end, _render_screen(self._screen_bytes(), self._columns, self._rows))
        return self._rendered[1]

    def _screen_bytes(self) -> bytes:
        """The kept bytes that draw the screen now shown, starting where parsing them is safe."""
        start = max(self._base, self._end - self._keep)
        if self._alternate:
            return self._alternate_bytes(start)
        return self._main_bytes(start)

    def _alternate_bytes(self, start: int) -> bytes:
        """From the latest switch, which leaves a blank screen (the emulator ignores the switch).

        When that switch is no longer kept, start at an escape sequence rather than inside one:
        full-screen programs position the cursor before they draw.
        """
        if self._alternate_from >= start:
            return self._slice(self._alternate_from, self._end)
        kept = self._slice(start, self._end)
        return kept[max(0, kept.find(b"\x1b")) :]

    def _main_bytes(self, start: int) -> bytes:
        """The kept bytes without finished alternate-screen visits, which the main screen never showed.

        Leaving the alternate screen restores the main screen and its cursor, so the bytes on
        either side of a visit join up as if it had never happened. Kept bytes that begin
        mid-stream begin mid-line, perhaps mid-sequence, so that first partial line goes,
        unless they begin with a visit, whose end is a clean start.
        """
        data = self._without_visits(start)
        if start == 0 or any(begin <= start < end for begin, end in self._visits):
            return data
        return data[data.find(b"\n") + 1 :]

    def _without_visits(self, start: int) -> bytes:
        pieces: list[bytes] = []
        pos = start
        for begin, end in self._visits:
            if end > pos:
                pieces.append(self._slice(pos, begin))  # empty when the visit began earlier
                pos = end
        pieces.append(self._slice(pos, self._end))
        return b"".join(pieces)


class Shot:
    """The screen at one moment (`ScreenTail.shot`), emulated when first read."""

    def __init__(self, data: bytes, columns: int, rows: int, before_cursor: str | None = None) -> None:
        self._data = data
        self._size = (columns, rows)
        self._before_cursor = before_cursor

    def before_cursor(self) -> str:
        """As `ScreenTail.before_cursor` was when the shot was taken."""
        if self._before_cursor is None:
            self._before_cursor = _render_screen(self._data, *self._size)[1]
            self._data = b""
        return self._before_cursor


NO_SHOT = Shot(b"", 80, 24, "")


def _render_screen(data: bytes, columns: int, rows: int) -> Rendered:
    """The cursor's row after a blank screen of `columns` x `rows` has been sent `data`.

    The emulator is needed only when the cursor may have left the last line or an earlier cell
    was changed in place; otherwise the last line alone decides, and plain ASCII is replayed
    here, far faster. A line with other characters goes to the emulator on its own, for their
    display widths.
    """
    above = 0
    if _MOVES.search(data) is None and _starts_in_first_column(data):
        above = data.count(b"\n")  # rows above the last line, counting no wrapped line twice
        line = data[data.rfind(b"\n") + 1 :]
        if line.isascii():
            shown, upto, wrapped = _replay_line(line.decode("ascii"), columns)
            return shown, upto, min(rows - 1, above + wrapped), min(len(upto), columns - 1)
        data = line
    from .emulator import emulate  # pyte: only here, since most runs never need the emulator

    shown, upto, row, column = emulate(data, columns, rows)
    return shown, upto, min(rows - 1, above + row), column


def _starts_in_first_column(data: bytes) -> bool:
    """A bare line feed keeps the column, so only a carriage return before it is known to reset it."""
    newline = data.rfind(b"\n")
    return newline <= 0 or data[newline - 1] == 0x0D


def _replay_line(line: str, columns: int) -> tuple[str, str, int]:
    """Replay one ASCII line the way a terminal with automatic wrapping draws it.

    Only the row the cursor ends on is kept: a carriage return or backspace never leaves the
    row, and text that fills it goes on in a fresh one. The third value counts those fresh rows.
    """
    row = ""
    column = 0
    wrapped = 0
    for index, part in enumerate(_LINE_MOTION.split(_SILENT.sub("", line))):
        if index % 2 == 0:
            row, column, more = _draw(row, column, part, columns)
            wrapped += more
        else:
            column = _move(column, part, columns)
    return row, row[:column].ljust(column), wrapped


def _draw(row: str, column: int, text: str, columns: int) -> tuple[str, int, int]:
    """Write `text` from `column`; a full row leaves the cursor on it until the next character.
    The third value is how many fresh rows the text went on in."""
    wrapped = 0
    while text:
        if column == columns:
            row, column = "", 0
            wrapped += 1
        piece = text[: columns - column]
        row = row[:column].ljust(column) + piece + row[column + len(piece) :]
        column += len(piece)
        text = text[len(piece) :]
    return row, column, wrapped


def _move(column: int, control: str, columns: int) -> int:
    if control == "\r":
        return 0
    if control == "\x08":
        return max(0, min(column, columns - 1) - 1)
    return min((column // _TAB_STOP + 1) * _TAB_STOP, columns - 1)


# A shell or REPL prompt ends in one of these, then the one space the cursor sits after.
_PROMPT_END = re.compile(r"[$#%>❯➜»λ›] \Z")
_DEBUGGER = re.compile(r"\((?:Pdb\+*|gdb|lldb|byebug|rdb:\d+)\) \Z")
_ROBBYRUSSELL = re.compile(r"➜ +\S.* \Z")  # oh-my-zsh's default: an arrow, then the directory
_NOT_PROMPT = re.compile(
    r"\d% \Z"  # a percentage, as progress output ends
    r"|<[^<>]*> \Z"  # a markup tag
)


def looks_like_prompt(line: str) -> bool:
    """Whether `line`, up to the cursor, is a shell's or an interactive program's prompt.

    The rule: a prompt character (``$ # % > ❯ ➜ » λ ›``) followed by exactly one space, where
    the cursor waits; or a debugger's ``(Pdb) ``-style prompt; or oh-my-zsh's ``➜  dir ``.
    Percentages and markup tags are output, and a continuation prompt is not a prompt: the
    shell is still reading the command.
    """
    if _NOT_PROMPT.search(line) or continuation_prompt(line) is not None:
        return False
    return bool(_PROMPT_END.search(line) or _DEBUGGER.fullmatch(line) or _ROBBYRUSSELL.fullmatch(line))


# zsh's continuation prompt (PS2, "%_> ") lists the open constructs, innermost
# last, with these words; bash and sh show a bare "> ".
_ZSH_CONSTRUCTS = {
    "dquote": "double quote",
    "quote": "single quote",
    "bquote": "backquote",
    "pipe": "pipe",
    "errpipe": "pipe",
    "cmdand": "and list",
    "cmdor": "or list",
    "cmdsubst": "command substitution",
    "mathsubst": "arithmetic substitution",
    "math": "arithmetic",
    "heredoc": "heredoc",
    "heredocd": "heredoc",
    "subsh": "subshell",
    "cursh": "brace group",
    "brace": "brace",
    "braceparam": "parameter expansion",
    "cond": "conditional",
    "array": "array",
    "elif-then": "then",
    **{word: word for word in (
        "for", "foreach", "while", "until", "repeat", "select", "if", "then", "else", "elif",
        "case", "function", "always",
    )},
}
_CONTINUATION = re.compile(r"((?:[a-z-]+ )*[a-z-]+)?> \Z")


def continuation_prompt(line: str) -> str | None:
    """Which construct the shell waits to see finished, when `line` is its continuation prompt.

    The innermost construct is named (zsh's ``then dquote> `` is a "double quote"); a bare
    ``> `` says only that the command is unfinished. The trailing space is required, as for
    prompts.
    """
    match = _CONTINUATION.fullmatch(line)
    if match is None:
        return None
    if match.group(1) is None:
        return "unfinished command"
    words = match.group(1).split(" ")
    if not all(word in _ZSH_CONSTRUCTS for word in words):
        return None
    return _ZSH_CONSTRUCTS[words[-1]]


_QUESTION = re.compile(
    "|".join(
        (
            r".*[\[(](?:y|n|yes|no)(?:\s*[/,|]\s*[a-z?]+)*[\])][?:]?",  # (y/n), [Y/n], (yes/no), (y)
            r".*[\[(]\d+(?:\s*[-/,]\s*\d+)+[\])][?:]?",  # [1-3], (1/2/3)
            r".*\b(?:pass(?:word|phrase|code)|pin|user ?name|login|token|otp|verification code)\b.*:",
            r"(?:please\s+)?(?:enter|choose|select|pick|specify|provide)\b.*[:?>]",
            r".*\bpress (?:any key|a key|enter|return|<enter>|space)\b.*",
            r".*:\s*\([^()]*\)",  # a label with its default in brackets, as npm init asks
            r".*[a-z)\]]\?",  # a question left open at the cursor
            r"\(END\)|:|--More--(?:\(\d+%\))?|.*\(press h for help or q to quit\)",
            r"lines \d+-\d+(?:/\d+)?(?: \d+%)?(?: \(END\))?",  # less -M
            r">>>|In \[\d+\]:|ipdb>|debug>|\((?:Pdb\+*|gdb|lldb|byebug|rdb:\d+)\)",
            r"irb\([^)]*\):\d+:\d+[>*\"']|(?:\[\d+\] )?pry\([^)]*\)[>*]|iex\(\d+\)>",
            r"(?:ghci|Prelude|scala|julia|sqlite|mysql|mariadb)>|\w+[=-][#>]",  # psql: db=#, db=>
        )
    ),
    re.IGNORECASE,
)


def input_prompt(line: str) -> bool:
    """Whether `line` is a question, pager, REPL or debugger waiting for an answer.

    Only explicit forms count (a yes/no choice, a credential, "press any key", a pager's
    status line, a REPL's prompt): a program that merely mentions a key ("press h to show
    help") runs on without one. Surrounding whitespace is ignored.
    """
    return _QUESTION.fullmatch(line.strip()) is not None


# A program's own prompt where the cursor waits: a prompt character, a colon or a question mark,
# then one space (node's "> ", "Name: ", inquirer's "? ").
_PROGRAM_PROMPT_END = re.compile(r"[>:?] \Z")


def program_prompt(line: str) -> bool:
    """Whether a running program (not the shell) shows a prompt at the cursor.

    Broader than `looks_like_prompt`, which must not take a shell's continuation prompt ("> ")
    for a prompt: with a program in front, the shell is not reading, so "> " is the program's.
    """
    return input_prompt(line) or looks_like_prompt(line) or _PROGRAM_PROMPT_END.search(line) is not None

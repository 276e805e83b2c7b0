"""The terminal emulator behind `screen`, in a module of its own so that pyte is loaded only when
a screen is really emulated: most runs never need it, and pyte is a large part of start-up time.
"""

from __future__ import annotations

import pyte

from .escapes import ENTER_ALTERNATE, FRESH_SCREEN


class _Screen(pyte.Screen):
    """pyte 0.8 hands `CSI > ... m` (key-modifier settings, sent by vim) to this method with a
    `private` flag it does not accept; such sequences draw nothing."""

    def select_graphic_rendition(self, *attrs: int, private: bool = False) -> None:
        if not private:
            super().select_graphic_rendition(*attrs)


def emulate(data: bytes, columns: int, rows: int) -> tuple[str, str, int, int]:
    """The cursor's row (as displayed, and up to the cursor) after a blank screen is sent `data`,
    and where the cursor is: its row and column, from 0."""
    screen = _Screen(columns, rows)
    try:
        pyte.ByteStream(screen).feed(data)
    except Exception:  # noqa: BLE001 - hostile bytes must not end a run; the cursor row so far stands
        pass
    cells = screen.buffer[screen.cursor.y]
    upto = "".join(cells[x].data for x in range(min(screen.cursor.x, columns)))
    return screen.display[screen.cursor.y], upto, screen.cursor.y, min(screen.cursor.x, columns - 1)


def screen_lines(data: bytes, columns: int, rows: int) -> list[str]:
    """The rows a blank screen of `columns` x `rows` shows after `data`, blanks at their ends and
    empty rows at the bottom left out."""
    screen = _Screen(columns, rows)
    try:
        pyte.ByteStream(screen).feed(data)
    except Exception:  # noqa: BLE001 - hostile bytes: what was drawn so far stands
        pass
    lines = [row.rstrip() for row in screen.display]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# pyte's colour names, as SGR numbers for the foreground (the background adds 10).
_COLOURS = {"black": 30, "red": 31, "green": 32, "brown": 33, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36,
            "white": 37}


def redraw(data: bytes, columns: int, rows: int, shown_rows: int, shown_columns: int, alternate: bool) -> bytes:
    """What draws, on a terminal of `shown_rows` x `shown_columns`, the screen that a blank screen of
    `columns` x `rows` shows after `data`: text, colours and the cursor. A smaller terminal gets
    the rows around the cursor and the left of each; the program redraws itself once it is told
    the new size."""
    screen = _Screen(columns, rows)
    try:
        pyte.ByteStream(screen).feed(data)
    except Exception:  # noqa: BLE001 - hostile bytes: what was drawn so far stands
        pass
    top = max(0, min(screen.cursor.y - shown_rows + 1, rows - shown_rows)) if shown_rows < rows else 0
    out = [ENTER_ALTERNATE if alternate else b"", FRESH_SCREEN]
    for y in range(top, min(rows, top + shown_rows)):
        out.append(b"\x1b[%d;1H" % (y - top + 1) + _row(screen.buffer[y], min(columns, shown_columns)))
    out.append(b"\x1b[0m\x1b[%d;%dH" % (screen.cursor.y - top + 1, min(screen.cursor.x, shown_columns - 1) + 1))
    if screen.cursor.hidden:
        out.append(b"\x1b[?25l")
    return b"".join(out)


def _row(cells: dict[int, pyte.screens.Char], width: int) -> bytes:
    """One row's text with its attributes, blanks at its end left out."""
    last = max((x for x in range(width) if x in cells and (cells[x].data.strip() or cells[x].bg != "default")), default=-1)
    out: list[str] = []
    current = ""
    for x in range(last + 1):
        char = cells[x]
        style = _sgr(char)
        if style != current:
            out.append(f"\x1b[0;{style}m" if style else "\x1b[0m")
            current = style
        out.append(char.data)
    return "".join(out).encode("utf-8", "replace")


def _sgr(char: pyte.screens.Char) -> str:
    codes = [code for flag, code in ((char.bold, "1"), (char.italics, "3"), (char.underscore, "4"),
                                     (char.reverse, "7")) if flag]
    for colour, base in ((char.fg, 30), (char.bg, 40)):
        if colour in _COLOURS:
            codes.append(str(_COLOURS[colour] - 30 + base))
        elif len(colour) == 6 and all(c in "0123456789abcdefABCDEF" for c in colour):
            codes.append(f"{base + 8};2;{int(colour[:2], 16)};{int(colour[2:4], 16)};{int(colour[4:], 16)}")
    return ";".join(codes)

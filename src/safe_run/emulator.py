"""The terminal emulator behind `screen`, in a module of its own so that pyte is loaded only when
a screen is really emulated: most runs never need it, and pyte is a large part of start-up time.
"""

from __future__ import annotations

import pyte


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

"""The command's bytes for a person's terminal: what draws is kept, what changes its state is not."""

from __future__ import annotations

import re

from ..core import escapes
from ..core.escapes import alternate_switches
from ..core.relay import Relay

_FOR_TERMINAL = escapes.binary(
    r"(\x1b\[[0-9;:]*m)",  # 1: colours and text attributes, kept when colour is wanted
    r"(\x1b\[[012]?K)",  # 2: erase in line, kept (progress bars use it with carriage returns)
    escapes.CSI,  # any other CSI: cursor movement, modes, queries
    escapes.STRING + escapes.STRING_END + "?",  # OSC, DCS, ... strings (titles, links), ended or aborted
    escapes.ESCAPE,  # other escapes: charsets, keypad modes, resets
    escapes.SILENT_CONTROL,  # controls that draw nothing (BEL included)
)


# Said in the summary of a run shown as cleaned text whose full screen was left out.
FULL_SCREEN_HIDDEN = "the full screen the command drew (alternate screen) is not shown; --format json keeps its text"


class TerminalFilter:
    """The command's bytes as a terminal would show them, without what would change its state.

    Kept: text, newlines, carriage returns, backspaces, tabs, erase-in-line and (if wanted)
    colours. Removed: cursor movement, screen switches, titles, hyperlinks, mode changes, bells.
    The bytes come through a `relay.Relay` first, as all that a terminal shows of a run that is not
    the person's: it holds a sequence cut by a read until the next completes it, writes C1
    controls in their 7-bit form and malformed UTF-8 as U+FFFD, and drops the terminal's questions.
    """

    def __init__(self, colour: bool) -> None:
        self._colour = colour
        self._relay = Relay()
        self.coloured = False  # a colour was passed on (so the end should reset attributes)
        self._alternate = False  # between a switch to the alternate screen and the switch back
        self.hid_alternate = False  # something was drawn on the alternate screen and left out

    def feed(self, data: bytes) -> bytes:
        data = self._relay.feed(data)
        return b"".join(_FOR_TERMINAL.sub(self._keep, part) for part in self._main_screen(data))

    def _main_screen(self, data: bytes) -> list[bytes]:
        """The parts of data meant for the main screen. A full-screen program (an editor, a pager)
        draws on the alternate screen with cursor moves this filter removes, so what it drew
        would land scattered over the person's screen: it is left out, from the switch to the
        alternate screen to the switch back."""
        parts, start = [], 0
        for switch in alternate_switches(data):
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

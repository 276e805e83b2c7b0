"""What `send --key NAME` types: what a terminal sends for that key."""

from __future__ import annotations

# Cursor keys are sent in their normal mode (CSI); readline, REPLs and most full-screen programs
# accept it in either mode.
NAMED = {
    "enter": "\r",
    "tab": "\t",
    "esc": "\x1b",
    "escape": "\x1b",
    "backspace": "\x7f",
    "space": " ",
    "up": "\x1b[A",
    "down": "\x1b[B",
    "right": "\x1b[C",
    "left": "\x1b[D",
    "home": "\x1b[H",
    "end": "\x1b[F",
    "pageup": "\x1b[5~",
    "pagedown": "\x1b[6~",
    "delete": "\x1b[3~",
}


def key_text(name: str) -> str:
    """What a terminal sends for a key name: one of NAMED, or ctrl-<letter> (also ctrl-[, ctrl-\\, ...)."""
    lowered = name.strip().lower()
    if lowered in NAMED:
        return NAMED[lowered]
    prefix, _, key = lowered.partition("-")
    if prefix == "ctrl" and len(key) == 1 and "@" <= key.upper() <= "_":
        return chr(ord(key.upper()) - 0x40)
    raise ValueError(f"unknown key {name!r}: use ctrl-<letter> or one of {', '.join(sorted(NAMED))}")

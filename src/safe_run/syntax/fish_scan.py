"""A light scan of fish text: quotes, command substitutions, brace expansions, blocks."""

from __future__ import annotations

from dataclasses import dataclass, field

from .constructs import (
    BRACE, DANGLING, FISH_BEGIN, FISH_FUNCTION, FISH_IF, FISH_LOOP, FISH_SWITCH, PARENTHESIS, QUOTE_CHARS,
    STRAY_END, Found,
)

_FISH_BLOCKS = {"if": FISH_IF, "for": FISH_LOOP, "while": FISH_LOOP, "switch": FISH_SWITCH,
                "begin": FISH_BEGIN, "function": FISH_FUNCTION}
_FISH_COMMAND_FOLLOWS = frozenset({"if", "while", "begin", "else", "case", "and", "or", "not", "command",
                                   "builtin", "exec", "time"})
_FISH_STOP = frozenset(" \t\n;&|<>(){}'\"\\$")
_FISH_OPEN = {"(": PARENTHESIS, "{": BRACE}
_FISH_CLOSE = {")": ("(", PARENTHESIS), "}": ("{", BRACE)}


@dataclass
class _FishScan:
    text: str
    i: int = 0
    stack: list[str] = field(default_factory=list)
    command_start: bool = True
    after_operator: bool = False
    after_else: bool = False

    def run(self) -> str | None:
        try:
            while self.i < len(self.text):
                self._step()
        except Found as found:
            return found.construct
        if self.after_operator and (not self.stack or self.stack[-1] not in "'\""):
            return DANGLING
        return self._construct(self.stack[-1]) if self.stack else None

    @staticmethod
    def _construct(opener: str) -> str:
        return QUOTE_CHARS.get(opener) or _FISH_OPEN.get(opener) or _FISH_BLOCKS[opener]

    def _step(self) -> None:
        top = self.stack[-1] if self.stack else ""
        char = self.text[self.i]
        if top in ("'", '"'):
            self._quoted(top, char)
        else:
            self._code(char)

    def _quoted(self, quote: str, char: str) -> None:
        if char == "\\":
            self.i += 2
        elif char == quote:
            self.stack.pop()
            self.i += 1
        elif quote == '"' and self.text.startswith("$(", self.i):
            self.stack.append("(")
            self.i += 2
        else:
            self.i += 1

    def _code(self, char: str) -> None:
        if char == "#" and (self.i == 0 or self.text[self.i - 1] in " \t\n;"):
            end = self.text.find("\n", self.i)
            self.i = len(self.text) if end < 0 else end
            return
        if char == "\\":
            self.i += 2
            self.after_operator = False
            return
        if char in "\n;":
            self.command_start = True
        elif char in "&|":
            self._operator()
            return
        elif char in "'\"({":
            self.stack.append(char)
            self.after_operator = False
            self.command_start = char == "("
        elif char in ")}":
            self._close(char)
        elif char not in " \t$<>":
            self._word()
            return
        self.i += 1

    def _operator(self) -> None:
        pair = self.text[self.i : self.i + 2]
        if pair in ("&&", "||") or pair[:1] == "|":
            self.after_operator = True
            self.command_start = True
        self.i += 2 if pair in ("&&", "||", "&>") else 1

    def _close(self, char: str) -> None:
        opener, construct = _FISH_CLOSE[char]
        if self.stack and self.stack[-1] == opener:
            self.stack.pop()
        elif self.stack:
            raise Found(self._construct(self.stack[-1]))
        else:
            raise Found(construct)

    def _word(self) -> None:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] not in _FISH_STOP:
            self.i += 1
        word = self.text[start : self.i]
        at_end = self.i >= len(self.text) or self.text[self.i] in " \t\n;&|<>()"
        self.after_operator = self.command_start and at_end and word in ("and", "or")
        if self.command_start and at_end:
            self._keyword(word)
        else:
            self.command_start = False

    def _keyword(self, word: str) -> None:
        if word in _FISH_BLOCKS and not (word == "if" and self.after_else):
            self.stack.append(word)
        elif word == "end":
            if not self.stack:
                raise Found(STRAY_END)
            if self.stack[-1] not in _FISH_BLOCKS:
                raise Found(self._construct(self.stack[-1]))
            self.stack.pop()
        self.after_else = word == "else"
        self.command_start = word in _FISH_COMMAND_FOLLOWS


def scan_fish(command: str) -> str | None:
    """What a fish text leaves open at its end, or the first closer with no opener."""
    return _FishScan(command).run()

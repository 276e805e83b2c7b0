"""A light scan of POSIX-family text (bash, zsh, dash, ksh): what it leaves open at its end.

The shells' complaints are often vague ("syntax error: unexpected end of file"); tracking only
what can be left open (quotes, expansions, heredocs, blocks) names the culprit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from .constructs import (
    BACKQUOTE, BRACE, CASE, DANGLING, IF, LOOP, PARENTHESIS, SINGLE_QUOTE, DOUBLE_QUOTE, STRAY_DONE,
    STRAY_ESAC, STRAY_FI, Found, heredoc,
)


def dangling_operator(command: str) -> bool:
    """Whether the last command line ends in `&&`, `||` or `|`, comments and blank lines aside.

    Only ever asked after the shell accepted the text, so quotes are balanced and the last line
    is real code; a comment that itself holds a quote is left alone, erring towards silence.
    """
    lines = [line for line in command.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        return False
    last = re.sub(r"\s#[^'\"]*$", "", lines[-1]).rstrip()
    for operator in ("&&", "||", "|"):
        if last.endswith(operator) and not last[: -len(operator)].endswith("\\"):
            return True
    return False


_WORD_END = frozenset(" \t\n;&|<>()")
_PLAIN_STOP = frozenset(" \t\n;&|<>()'\"`$\\")


class Kind(Enum):
    """What a frame of the scan is inside of."""

    TOP = "top"
    DOUBLE_QUOTED = "dq"
    SINGLE_QUOTED = "sq"
    ANSI_C_QUOTED = "ansi"
    BACKQUOTED = "bq"
    COMMAND_SUBSTITUTION = "cmdsub"
    SUBSHELL = "paren"
    ARITHMETIC = "arith"
    PARAMETER = "pexp"
    BRACE_GROUP = "brace"
    IF = "if"
    LOOP = "loop"
    CASE = "case"


_FRAME_CONSTRUCTS = {
    Kind.DOUBLE_QUOTED: DOUBLE_QUOTE, Kind.SINGLE_QUOTED: SINGLE_QUOTE, Kind.ANSI_C_QUOTED: SINGLE_QUOTE,
    Kind.BACKQUOTED: BACKQUOTE, Kind.COMMAND_SUBSTITUTION: PARENTHESIS, Kind.SUBSHELL: PARENTHESIS,
    Kind.ARITHMETIC: PARENTHESIS, Kind.PARAMETER: BRACE, Kind.BRACE_GROUP: BRACE, Kind.IF: IF,
    Kind.LOOP: LOOP, Kind.CASE: CASE,
}
_OPENERS = {"if": Kind.IF, "for": Kind.LOOP, "while": Kind.LOOP, "until": Kind.LOOP, "select": Kind.LOOP,
            "case": Kind.CASE, "{": Kind.BRACE_GROUP}
_CLOSING_WORDS = {"fi": (Kind.IF, STRAY_FI), "done": (Kind.LOOP, STRAY_DONE), "esac": (Kind.CASE, STRAY_ESAC),
                  "}": (Kind.BRACE_GROUP, BRACE)}
# Inside these an operator is only text, so one at the end leaves nothing dangling.
_TEXT_ONLY = frozenset({Kind.DOUBLE_QUOTED, Kind.SINGLE_QUOTED, Kind.ANSI_C_QUOTED, Kind.PARAMETER})
_HOLDS_COMMANDS = frozenset({Kind.SUBSHELL, Kind.COMMAND_SUBSTITUTION, Kind.BACKQUOTED})
_COMMAND_FOLLOWS = frozenset({"then", "else", "elif", "do", "!", "time", "while", "until", "if", "{"})


@dataclass
class _Frame:
    kind: Kind
    depth: int = 0  # open parentheses inside $(( )); for a case, 0 = subject, 1 = pattern, 2 = body


@dataclass
class _PosixScan:
    """A forgiving reading of shell text that only tracks what can be left open."""

    text: str
    i: int = 0
    frames: list[_Frame] = field(default_factory=lambda: [_Frame(Kind.TOP)])
    heredocs: list[tuple[str, bool]] = field(default_factory=list)
    command_start: bool = True
    after_operator: bool = False
    in_word: bool = False
    naming_function: bool = False

    def run(self) -> str | None:
        try:
            while self.i < len(self.text):
                self._step()
            return self._at_end()
        except Found as found:
            return found.construct

    def _at_end(self) -> str | None:
        if self.heredocs:
            raise Found(heredoc(self.heredocs[0][0]))
        if self.after_operator and self.top.kind not in _TEXT_ONLY:
            return DANGLING
        return _FRAME_CONSTRUCTS.get(self.top.kind)

    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def _peek(self, length: int = 1) -> str:
        return self.text[self.i : self.i + length]

    def _step(self) -> None:
        kind = self.top.kind
        if kind is Kind.SINGLE_QUOTED:
            self._single_quoted()
        elif kind is Kind.ANSI_C_QUOTED:
            self._escaped_until("'")
        elif kind is Kind.DOUBLE_QUOTED:
            self._double_quoted()
        elif kind is Kind.PARAMETER:
            self._parameter()
        elif kind is Kind.ARITHMETIC:
            self._arithmetic()
        else:
            self._code()

    def _push(self, kind: Kind, width: int) -> None:
        self.frames.append(_Frame(kind))
        self.i += width
        self.after_operator = False
        self.in_word = kind not in _HOLDS_COMMANDS  # a quote or expansion is part of a word

    def _pop(self, width: int = 1) -> None:
        self.frames.pop()
        self.i += width

    def _single_quoted(self) -> None:
        end = self.text.find("'", self.i)
        if end < 0:
            raise Found(SINGLE_QUOTE)
        self.i = end
        self._pop()

    def _escaped_until(self, closer: str) -> None:
        char = self.text[self.i]
        if char == "\\":
            self.i += 2
        elif char == closer:
            self._pop()
        else:
            self.i += 1

    def _substitution(self) -> bool:
        """`$((`, `$(`, `${` and backquotes open alike in code, double quotes and expansions."""
        if self._peek(3) == "$((":
            self._push(Kind.ARITHMETIC, 3)
        elif self._peek(2) == "$(":
            self._push(Kind.COMMAND_SUBSTITUTION, 2)
        elif self._peek(2) == "${":
            self._push(Kind.PARAMETER, 2)
        elif self._peek() == "`":
            if self.top.kind is Kind.BACKQUOTED:
                self._pop()
            else:
                self._push(Kind.BACKQUOTED, 1)
        else:
            return False
        return True

    def _double_quoted(self) -> None:
        if not self._substitution():
            self._escaped_until('"')

    def _parameter(self) -> None:
        char = self.text[self.i]
        if self._substitution():
            return
        if char in "'\"":
            self._push(Kind.SINGLE_QUOTED if char == "'" else Kind.DOUBLE_QUOTED, 1)
        else:
            self._escaped_until("}")

    def _arithmetic(self) -> None:
        char = self.text[self.i]
        if self._substitution():
            return
        if char == "(":
            self.top.depth += 1
        elif char == ")" and self.top.depth:
            self.top.depth -= 1
        elif char == ")":
            self._pop(2 if self._peek(2) == "))" else 1)
            return
        self.i += 1

    def _code(self) -> None:
        char = self.text[self.i]
        if char == "\n":
            self._newline()
        elif char in " \t":
            self.in_word = False
            self.i += 1
        elif char == "#" and not self.in_word:
            end = self.text.find("\n", self.i)
            self.i = len(self.text) if end < 0 else end
        elif self._peek(2) == "\\\n":
            self.i += 2  # a line continuation joins the lines, words and all
        elif char == "\\":
            self._word_part(2)
        elif self._peek(2) == "$'":
            self._push(Kind.ANSI_C_QUOTED, 2)
        elif char in "'\"":
            self._push(Kind.SINGLE_QUOTED if char == "'" else Kind.DOUBLE_QUOTED, 1)
        elif self._substitution():
            pass
        elif char in ";&|<>()":
            self._operator(char)
        else:
            self._word()

    def _word_part(self, width: int) -> None:
        self.in_word = True
        self.after_operator = False
        self.i += width

    def _newline(self) -> None:
        self.i += 1
        self.in_word = False
        if self.heredocs:
            self._heredoc_bodies()
        if self.top.kind is Kind.CASE and self.top.depth == 0:
            return
        self.command_start = self.top.kind is not Kind.CASE or self.top.depth != 1

    def _operator(self, char: str) -> None:
        self.in_word = False
        pair = self._peek(2)
        if char == ";":
            self._semicolon()
        elif pair in ("&&", "||", "|&") or char == "|":
            self._pipe(len(pair) if pair in ("&&", "||", "|&") else 1)
        elif char == "&" and pair != "&>":
            self.command_start = True
            self.i += 1
        elif pair == "<<" and self._peek(3) != "<<<":
            self._heredoc_start()
        elif pair in ("<(", ">(") or (char == "(" and pair == "(("):
            self._push(Kind.SUBSHELL if pair != "((" else Kind.ARITHMETIC, 2)
        elif char == "(":
            self._open_paren()
        elif char == ")":
            self._close_paren()
        else:
            self._redirection()

    def _redirection(self) -> None:
        """`<`, `>`, `>>`, `>&`, `&>`, `<<<` and the like: none opens anything."""
        self.i += 1
        while self._peek() in ("<", ">", "&", "|"):
            self.i += 1

    def _semicolon(self) -> None:
        ender = next((end for end in (";;&", ";;", ";&") if self._peek(len(end)) == end), ";")
        self.i += len(ender)
        if ender != ";" and self.top.kind is Kind.CASE:
            self.top.depth = 1  # the next pattern, or esac
        self.command_start = self.top.kind is not Kind.CASE or self.top.depth == 2

    def _pipe(self, width: int) -> None:
        self.i += width
        if self.top.kind is Kind.CASE and self.top.depth == 1:
            return  # alternatives in a case pattern
        self.after_operator = True
        self.command_start = True

    def _open_paren(self) -> None:
        if self.top.kind is Kind.CASE and self.top.depth == 1:
            self.i += 1  # the optional `(` before a case pattern
        elif self._peek(2) == "()":
            self.i += 2  # name() of a function definition, whose body follows
            self.command_start = True
        else:
            self._push(Kind.SUBSHELL, 1)
            self.command_start = True

    def _close_paren(self) -> None:
        top = self.top
        if top.kind in (Kind.SUBSHELL, Kind.COMMAND_SUBSTITUTION):
            self._pop()
            self.command_start = False
        elif top.kind is Kind.CASE and top.depth == 1:
            top.depth = 2
            self.i += 1
            self.command_start = True
        else:
            raise Found(_FRAME_CONSTRUCTS.get(top.kind, PARENTHESIS))

    def _word(self) -> None:
        start = self.i
        self.i += 1
        while self.i < len(self.text) and self.text[self.i] not in _PLAIN_STOP:
            self.i += 1
        word = self.text[start : self.i]
        bare = not self.in_word and (self.i >= len(self.text) or self.text[self.i] in _WORD_END)
        self.in_word = self.i < len(self.text) and self.text[self.i] not in _WORD_END
        self.after_operator = False
        if bare:
            self._bare_word(word)
        else:
            self.command_start = False

    def _bare_word(self, word: str) -> None:
        top = self.top
        if top.kind is Kind.CASE and top.depth < 2:
            self._case_word(word)
        elif self.naming_function:
            self.naming_function = False
            self.command_start = True
        elif self.command_start:
            self._keyword(word)
        elif word == "in" and top.kind is Kind.LOOP:
            self.command_start = False

    def _case_word(self, word: str) -> None:
        if self.top.depth == 0 and word == "in":
            self.top.depth = 1
        elif self.top.depth == 1 and word == "esac":
            self.frames.pop()
            self.command_start = False

    def _keyword(self, word: str) -> None:
        if word in _OPENERS:
            self.frames.append(_Frame(_OPENERS[word]))
        elif word in _CLOSING_WORDS:
            self._close_block(*_CLOSING_WORDS[word])
        elif word == "function":
            self.naming_function = True
        self.command_start = word in _COMMAND_FOLLOWS

    def _close_block(self, kind: Kind, stray: str) -> None:
        if self.top.kind == kind:
            self.frames.pop()
        elif self.top.kind is Kind.TOP:
            raise Found(stray)
        else:
            raise Found(_FRAME_CONSTRUCTS[self.top.kind])

    def _heredoc_start(self) -> None:
        self.i += 2
        strip_tabs = self._peek() == "-"
        self.i += 1 if strip_tabs else 0
        while self._peek() in (" ", "\t"):
            self.i += 1
        delimiter = self._delimiter()
        if delimiter:
            self.heredocs.append((delimiter, strip_tabs))

    def _delimiter(self) -> str:
        """The heredoc word with its quoting removed, as the terminator line must spell it."""
        parts = []
        while self.i < len(self.text) and self.text[self.i] not in _WORD_END:
            char = self.text[self.i]
            if char in "'\"":
                end = self.text.find(char, self.i + 1)
                end = len(self.text) if end < 0 else end
                parts.append(self.text[self.i + 1 : end])
                self.i = end + 1
            else:
                parts.append(self.text[self.i + 1 : self.i + 2] if char == "\\" else char)
                self.i += 2 if char == "\\" else 1
        return "".join(parts)

    def _heredoc_bodies(self) -> None:
        for delimiter, strip_tabs in self.heredocs:
            while True:
                if self.i >= len(self.text):
                    raise Found(heredoc(delimiter))
                end = self.text.find("\n", self.i)
                end = len(self.text) if end < 0 else end
                line = self.text[self.i : end]
                self.i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
        self.heredocs.clear()


def scan_posix(command: str) -> str | None:
    """What a POSIX-family text leaves open at its end, or the first closer with no opener."""
    return _PosixScan(command).run()

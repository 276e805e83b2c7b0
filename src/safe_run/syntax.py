"""Refuse a command that does not parse, before any of it runs.

The command is handed to the user's shell with `eval`, and bash and dash parse an eval'd string
a line at a time, running each line before reading the next: with an unmatched quote on the last
line, every line before it would run. So the command file is first given to the same shell in
no-execute mode (`-n`), and a syntax error comes back as a `SyntaxProblem` whose message tells
the caller, often an agent, what is unbalanced, in the shell's own words, and that nothing ran.

The check is a courtesy, never a gate that can fail on its own: an unknown shell, a shell that
cannot be started, an option it does not know, or a check slower than the timeout all mean
"no verdict" (None), and the command runs as it would have without the check.

Some mistakes the shells accept at the end of the input: bash, zsh and dash treat a heredoc
whose terminator never comes as ending at the end of the file (bash merely warns), and zsh runs
`echo x &&` as `echo x`. Both are almost always a truncated command, so they are reported too.

Classifying the shell's message is kept pure and separate from running the shell, so that it can
be exercised with messages from shells that are not installed.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

DOUBLE_QUOTE = 'a double quote (")'
SINGLE_QUOTE = "a single quote (')"
BACKQUOTE = "a backquote (`)"
IF = "an if without fi"
LOOP = "a for/while loop without done"
CASE = "a case without esac"
PARENTHESIS = "a parenthesis"
BRACE = "a brace"
DANGLING = "a pipe or && with nothing after it"
UNKNOWN = "the command"
STRAY_FI = "a fi without if"
STRAY_DONE = "a done without a loop"
STRAY_ESAC = "an esac without case"
# fish closes every block with `end`, so naming `fi` or `done` would send its users astray.
FISH_IF = "an if without end"
FISH_LOOP = "a for/while loop without end"
FISH_SWITCH = "a switch without end"
FISH_BEGIN = "a begin without end"
FISH_FUNCTION = "a function without end"
STRAY_END = "an end without a block"

QUOTES = (DOUBLE_QUOTE, SINGLE_QUOTE, BACKQUOTE)
_HEREDOC_PREFIX = "a heredoc ("
_MESSAGE_LIMIT = 300


def heredoc(delimiter: str) -> str:
    """The construct for a heredoc whose terminator line never comes."""
    return f"{_HEREDOC_PREFIX}<<{delimiter} never closed)" if delimiter else f"{_HEREDOC_PREFIX}never closed)"


def _swallows_the_rest(construct: str) -> bool:
    """Quotes and heredocs run to the end of the input, so they explain any later complaint."""
    return construct in QUOTES or construct.startswith(_HEREDOC_PREFIX)


@dataclass(frozen=True)
class SyntaxProblem:
    """Why a command was refused: what is unbalanced, and what the shell said about it."""

    construct: str
    shell_message: str
    line: int | None

    def message(self) -> str:
        """What the reader needs to retry: the culprit, the shell's words, and that nothing ran."""
        details = []
        if self.construct != UNKNOWN:
            details.append(f"unbalanced: {self.construct}")
        if self.shell_message:
            details.append(f"the shell said: {self.shell_message.rstrip('.')}")
        reason = f" — {'; '.join(details)}" if details else ""
        return f"Nothing was run: the command does not parse{reason}. {_advice(self.construct)}"


def _advice(construct: str) -> str:
    if construct in QUOTES:
        return "Fix the quoting and retry."
    if construct.startswith(_HEREDOC_PREFIX):
        return "End the heredoc with a line holding only its delimiter, then retry."
    if construct == DANGLING:
        return "Complete or remove the trailing operator and retry."
    if construct == UNKNOWN:
        return "Fix the quoting or the structure and retry."
    return "Fix the structure and retry."


# ---------------------------------------------------------------------------------------------
# Which shell family, and how to ask it for a parse without running anything.

_POSIX_SHELLS = ("sh", "dash", "ash", "ksh", "mksh", "pdksh", "oksh", "loksh", "posh", "yash")


def shell_family(shell_name: str) -> str | None:
    """bash, zsh, fish, posix, or None for a shell whose no-execute mode is not known."""
    for family in ("bash", "zsh", "fish"):
        if shell_name.startswith(family):
            return family
    if shell_name in _POSIX_SHELLS or shell_name.startswith(("dash", "ksh", "mksh")):
        return "posix"
    return None


def check_argv(family: str, shell_path: str, script: str) -> list[str]:
    """The no-execute invocation.

    bash gets extglob because it changes how `!(x)` parses and many interactive setups (the
    bash-completion package among them) turn it on; the command's own `shopt` cannot help, as
    nothing runs under -n. Options the user's rc files set cannot be honoured by any shell here:
    under -n those files would not run even if read. zsh -f and fish --no-config make sure
    they are not even read (only /etc/zshenv is read whatever the options, and not run).
    """
    if family == "bash":
        return [shell_path, "-O", "extglob", "-n", script]
    if family == "zsh":
        return [shell_path, "-f", "-n", script]
    if family == "fish":
        return [shell_path, "--no-config", "--no-execute", script]
    return [shell_path, "-n", script]


def check_environment(environ: dict[str, str]) -> dict[str, str]:
    """The user's environment, minus start-up hooks, with messages in English.

    BASH_ENV and ENV name files that some non-interactive shells source. The classifier reads
    the shell's messages, so they must not be translated; the character type is kept, as it
    decides how non-ASCII text is read.
    """
    env = {name: value for name, value in environ.items() if name not in ("BASH_ENV", "ENV", "LANGUAGE")}
    ctype = env.pop("LC_ALL", None) or env.get("LC_CTYPE") or env.get("LANG")
    if ctype:
        env["LC_CTYPE"] = ctype
    env["LC_MESSAGES"] = "C"
    return env


# ---------------------------------------------------------------------------------------------
# The shell's words: pick its diagnostic, drop the temporary file's name, find the line.

_BASH_HEREDOC = re.compile(r"here-document at line (\d+) delimited by end-of-file \(wanted `(.*)'\)")
_LINE_IN_TEXT = re.compile(r"\bline (\d+)\b")


@dataclass(frozen=True)
class ShellWords:
    """One diagnostic line from the shell, without the file name that means nothing to a reader."""

    text: str
    line: int | None

    def neutral(self) -> str:
        text = self.text if len(self.text) <= _MESSAGE_LIMIT else self.text[: _MESSAGE_LIMIT - 1] + "…"
        return f"line {self.line}: {text}" if self.line is not None else text


def _prefix_pattern(script: str) -> re.Pattern[str]:
    """How the shells introduce a diagnostic about the script: bash, zsh, dash, fish, ksh, mksh."""
    path = re.escape(script)
    return re.compile(
        rf"^(?:[\w.-]+: )?{path}"
        r"(?::\s*line (?P<bash>\d+)|:\s*(?P<colon>\d+)|\s*\(line (?P<fish>\d+)\)|\[(?P<mksh>\d+)\])?"
        r":\s*(?P<text>.*)$"
    )


def shell_words(stderr: str, script: str) -> list[ShellWords]:
    """Every diagnostic the shell printed about the script, in order."""
    pattern = _prefix_pattern(script)
    found = []
    for raw in stderr.splitlines():
        match = pattern.match(raw.strip())
        if match is None:
            continue
        number = next((match[key] for key in ("bash", "colon", "fish", "mksh") if match[key]), None)
        text = match["text"].replace(script, "the command").strip()
        if number is None and (inline := _LINE_IN_TEXT.search(text)):
            number = inline[1]
        found.append(ShellWords(text, int(number) if number else None))
    return found


def main_words(words: list[ShellWords]) -> ShellWords:
    """The diagnostic that explains the failure: the first error, else the first warning."""
    errors = [item for item in words if not item.text.lower().startswith("warning")]
    return (errors or words)[0]


def bash_heredoc_warning(words: list[ShellWords]) -> SyntaxProblem | None:
    """bash accepts an unterminated heredoc with only a warning; that warning is the verdict."""
    for item in words:
        match = _BASH_HEREDOC.search(item.text)
        if match:
            return SyntaxProblem(heredoc(match[2]), item.neutral(), int(match[1]))
    return None


# ---------------------------------------------------------------------------------------------
# Classification: the shell's words first, a light scan of the text where they are vague.

_QUOTE_CHARS = {'"': DOUBLE_QUOTE, "'": SINGLE_QUOTE, "`": BACKQUOTE}
_CLOSERS = {")": PARENTHESIS, "(": PARENTHESIS, "}": BRACE, "{": BRACE}
_KEYWORDS = {"if": IF, "then": IF, "fi": IF, "for": LOOP, "while": LOOP, "until": LOOP, "select": LOOP,
             "do": LOOP, "done": LOOP, "case": CASE, "esac": CASE}
_STRAY_TOKENS = {**_CLOSERS, "fi": STRAY_FI, "done": STRAY_DONE, "esac": STRAY_ESAC, "end": STRAY_END}

# Each names the culprit with its first group: bash, zsh, ksh, dash in turn.
_POSIX_NAMING_RULES: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = (
    (re.compile(r"looking for matching `(.)'"), {**_QUOTE_CHARS, **_CLOSERS}),
    (re.compile(r"\bunmatched (\S)"), {**_QUOTE_CHARS, **_CLOSERS}),
    (re.compile(r"`(\S+)' unmatched"), {**_QUOTE_CHARS, **_CLOSERS, **_KEYWORDS}),
    (re.compile(r'expecting "(fi|then|done|do|esac|\})"'), {**_KEYWORDS, **_CLOSERS}),
)
_POSIX_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"closing brace expected|Missing '\}'"), BRACE),
    (re.compile(r"Missing '\)\)'"), PARENTHESIS),
    (re.compile(r"EOF in backquote"), BACKQUOTE),
)
_FISH_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"balance this if"), FISH_IF),
    (re.compile(r"balance this (for|while) loop"), FISH_LOOP),
    (re.compile(r"balance this switch"), FISH_SWITCH),
    (re.compile(r"balance this begin"), FISH_BEGIN),
    (re.compile(r"balance this function"), FISH_FUNCTION),
    (re.compile(r"expecting '\)'|Unexpected '\)'"), PARENTHESIS),
    (re.compile(r"Expected a command, but found end of the input"), DANGLING),
    (re.compile(r"'end' outside of a block"), STRAY_END),
)
_UNEXPECTED_TOKEN = re.compile(r"near (?:unexpected token )?`([^']*)'|\"([^\"]*)\" unexpected|Unexpected '(.)'")


def classify(shell_name: str, shell_message: str, command: str) -> str:
    """What is unbalanced, for people; `UNKNOWN` ("the command") when neither source can tell.

    An open quote or heredoc found in the text outranks a vaguer complaint from the shell: it
    swallows the rest of the input, so the `fi` or `)` the shell then misses is only a symptom.
    """
    fish = shell_family(shell_name) == "fish"
    said = _from_fish_words(shell_message) if fish else _from_posix_words(shell_message)
    if said is not None and _swallows_the_rest(said):
        return said
    scanned = scan_fish(command) if fish else scan_posix(command)
    if scanned is not None and (said is None or _swallows_the_rest(scanned)):
        return scanned
    return said or _from_unexpected_token(shell_message) or UNKNOWN


def _from_posix_words(message: str) -> str | None:
    if heredoc_match := _BASH_HEREDOC.search(message):
        return heredoc(heredoc_match[2])
    for naming, meanings in _POSIX_NAMING_RULES:
        match = naming.search(message)
        if match and match[1] in meanings:
            return meanings[match[1]]
    return next((meaning for pattern, meaning in _POSIX_RULES if pattern.search(message)), None)


def _from_fish_words(message: str) -> str | None:
    return next((meaning for pattern, meaning in _FISH_RULES if pattern.search(message)), None)


def _from_unexpected_token(message: str) -> str | None:
    match = _UNEXPECTED_TOKEN.search(message)
    if match is None:
        return None
    token = next(group for group in match.groups() if group is not None)
    return _STRAY_TOKENS.get(token)


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


# ---------------------------------------------------------------------------------------------
# The light scan of POSIX-family text (bash, zsh, dash, ksh): quotes, heredocs, blocks.

_WORD_END = frozenset(" \t\n;&|<>()")
_PLAIN_STOP = frozenset(" \t\n;&|<>()'\"`$\\")
_FRAME_CONSTRUCTS = {"dq": DOUBLE_QUOTE, "sq": SINGLE_QUOTE, "ansi": SINGLE_QUOTE, "bq": BACKQUOTE,
                     "cmdsub": PARENTHESIS, "paren": PARENTHESIS, "arith": PARENTHESIS, "pexp": BRACE,
                     "brace": BRACE, "if": IF, "loop": LOOP, "case": CASE}
_OPENERS = {"if": "if", "for": "loop", "while": "loop", "until": "loop", "select": "loop", "case": "case",
            "{": "brace"}
_CLOSING_WORDS = {"fi": ("if", STRAY_FI), "done": ("loop", STRAY_DONE), "esac": ("case", STRAY_ESAC),
                  "}": ("brace", BRACE)}
_COMMAND_FOLLOWS = frozenset({"then", "else", "elif", "do", "!", "time", "while", "until", "if", "{"})


class _Found(Exception):
    """Ends the scan as soon as the culprit is known."""

    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct


@dataclass
class _Frame:
    kind: str
    depth: int = 0  # open parentheses inside $(( )); for a case, 0 = subject, 1 = pattern, 2 = body


@dataclass
class _PosixScan:
    """A forgiving reading of shell text that only tracks what can be left open."""

    text: str
    i: int = 0
    frames: list[_Frame] = field(default_factory=lambda: [_Frame("top")])
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
        except _Found as found:
            return found.construct

    def _at_end(self) -> str | None:
        if self.heredocs:
            raise _Found(heredoc(self.heredocs[0][0]))
        if self.after_operator and self.top.kind not in ("dq", "sq", "ansi", "pexp"):
            return DANGLING
        return _FRAME_CONSTRUCTS.get(self.top.kind)

    @property
    def top(self) -> _Frame:
        return self.frames[-1]

    def _peek(self, length: int = 1) -> str:
        return self.text[self.i : self.i + length]

    def _step(self) -> None:
        kind = self.top.kind
        if kind == "sq":
            self._single_quoted()
        elif kind == "ansi":
            self._escaped_until("'")
        elif kind == "dq":
            self._double_quoted()
        elif kind == "pexp":
            self._parameter()
        elif kind == "arith":
            self._arithmetic()
        else:
            self._code()

    def _push(self, kind: str, width: int) -> None:
        self.frames.append(_Frame(kind))
        self.i += width
        self.after_operator = False
        self.in_word = kind not in ("paren", "cmdsub", "bq")  # a quote or expansion is part of a word

    def _pop(self, width: int = 1) -> None:
        self.frames.pop()
        self.i += width

    def _single_quoted(self) -> None:
        end = self.text.find("'", self.i)
        if end < 0:
            raise _Found(SINGLE_QUOTE)
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
            self._push("arith", 3)
        elif self._peek(2) == "$(":
            self._push("cmdsub", 2)
        elif self._peek(2) == "${":
            self._push("pexp", 2)
        elif self._peek() == "`":
            if self.top.kind == "bq":
                self._pop()
            else:
                self._push("bq", 1)
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
            self._push("sq" if char == "'" else "dq", 1)
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
            self._push("ansi", 2)
        elif char in "'\"":
            self._push("sq" if char == "'" else "dq", 1)
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
        if self.top.kind == "case" and self.top.depth == 0:
            return
        self.command_start = self.top.kind != "case" or self.top.depth != 1

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
            self._push("paren" if pair != "((" else "arith", 2)
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
        if ender != ";" and self.top.kind == "case":
            self.top.depth = 1  # the next pattern, or esac
        self.command_start = self.top.kind != "case" or self.top.depth == 2

    def _pipe(self, width: int) -> None:
        self.i += width
        if self.top.kind == "case" and self.top.depth == 1:
            return  # alternatives in a case pattern
        self.after_operator = True
        self.command_start = True

    def _open_paren(self) -> None:
        if self.top.kind == "case" and self.top.depth == 1:
            self.i += 1  # the optional `(` before a case pattern
        elif self._peek(2) == "()":
            self.i += 2  # name() of a function definition, whose body follows
            self.command_start = True
        else:
            self._push("paren", 1)
            self.command_start = True

    def _close_paren(self) -> None:
        top = self.top
        if top.kind in ("paren", "cmdsub"):
            self._pop()
            self.command_start = False
        elif top.kind == "case" and top.depth == 1:
            top.depth = 2
            self.i += 1
            self.command_start = True
        else:
            raise _Found(_FRAME_CONSTRUCTS.get(top.kind, PARENTHESIS))

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
        if top.kind == "case" and top.depth < 2:
            self._case_word(word)
        elif self.naming_function:
            self.naming_function = False
            self.command_start = True
        elif self.command_start:
            self._keyword(word)
        elif word == "in" and top.kind == "loop":
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

    def _close_block(self, kind: str, stray: str) -> None:
        if self.top.kind == kind:
            self.frames.pop()
        elif self.top.kind == "top":
            raise _Found(stray)
        else:
            raise _Found(_FRAME_CONSTRUCTS[self.top.kind])

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
                    raise _Found(heredoc(delimiter))
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


# ---------------------------------------------------------------------------------------------
# The light scan of fish text: quotes, command substitutions, brace expansions, blocks.

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
        except _Found as found:
            return found.construct
        if self.after_operator and (not self.stack or self.stack[-1] not in "'\""):
            return DANGLING
        return self._construct(self.stack[-1]) if self.stack else None

    @staticmethod
    def _construct(opener: str) -> str:
        return _QUOTE_CHARS.get(opener) or _FISH_OPEN.get(opener) or _FISH_BLOCKS[opener]

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
            raise _Found(self._construct(self.stack[-1]))
        else:
            raise _Found(construct)

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
                raise _Found(STRAY_END)
            if self.stack[-1] not in _FISH_BLOCKS:
                raise _Found(self._construct(self.stack[-1]))
            self.stack.pop()
        self.after_else = word == "else"
        self.command_start = word in _FISH_COMMAND_FOLLOWS


def scan_fish(command: str) -> str | None:
    """What a fish text leaves open at its end, or the first closer with no opener."""
    return _FishScan(command).run()


# ---------------------------------------------------------------------------------------------
# Running the shell.


@dataclass(frozen=True)
class _Verdict:
    returncode: int
    stderr: str


def _run_check(argv: list[str], cwd: Path, timeout: float) -> _Verdict | None:
    """One no-execute run, detached from any terminal; None when it cannot give a verdict."""
    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=check_environment(dict(os.environ)),
        )
    except (OSError, ValueError):
        return None
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None
    if process.returncode < 0:
        return None
    return _Verdict(process.returncode, stderr.decode("utf-8", errors="replace"))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Whatever the shell started must not keep the pipe, and so the caller, waiting."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    try:
        process.communicate(timeout=1.0)
    except subprocess.TimeoutExpired:
        if process.stderr is not None:
            process.stderr.close()
        process.wait()


def _heredoc_left_open(family: str, shell_path: str, command: str, timeout: float) -> bool:
    """Whether the shell reads a line appended after the text as heredoc body.

    A lone `)` is an error wherever the shell reads it as code, so if the text plus that line
    still parses, the line went into a heredoc whose terminator never came. The shell's own
    heredoc rules (quoted words, `<<-`, several on a line) decide, not a re-implementation.
    """
    with tempfile.TemporaryDirectory(prefix="safe-run-syntax-") as directory:
        Path(directory, "command").write_text(command + "\n)\n", encoding="utf-8")
        verdict = _run_check(check_argv(family, shell_path, "./command"), Path(directory), timeout)
    return verdict is not None and verdict.returncode == 0


def _accepted_but_unfinished(
    family: str, shell_path: str, command: str, words: list[ShellWords], deadline: float
) -> SyntaxProblem | None:
    """The mistakes a shell lets through at the end of the input (see the module docstring)."""
    if family == "bash":
        return bash_heredoc_warning(words)
    if family in ("zsh", "posix") and "<<" in command:
        remaining = deadline - time.monotonic()
        if remaining > 0 and _heredoc_left_open(family, shell_path, command, remaining):
            scanned = scan_posix(command)
            construct = scanned if scanned is not None and _swallows_the_rest(scanned) else heredoc("")
            return SyntaxProblem(construct, "", None)
    if family == "zsh" and dangling_operator(command):
        return SyntaxProblem(DANGLING, "", None)
    return None


def check_syntax(shell_name: str, shell_path: str, command_file: Path, timeout: float = 3.0) -> SyntaxProblem | None:
    """A `SyntaxProblem` when the shell would reject the command; None when it parses, and also
    when no verdict could be had in time (the command then runs as it would without a check).

    The shell is run in the file's directory and given the file's bare name, so that what it
    prints about the file is predictable and can be taken out of the message.
    """
    family = shell_family(shell_name)
    if family is None:
        return None
    command_file = Path(command_file)
    try:
        command = command_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if os.sep in shell_path:
        shell_path = os.path.abspath(shell_path)
    script = f"./{command_file.name}"
    deadline = time.monotonic() + timeout
    verdict = _run_check(check_argv(family, shell_path, script), command_file.parent, timeout)
    if verdict is None:
        return None
    words = shell_words(verdict.stderr, script)
    if verdict.returncode == 0:
        return _accepted_but_unfinished(family, shell_path, command, words, deadline)
    if not words:
        # Not about the command: a shell too old for an option fails before reading the file,
        # and `zsh -n` exits 1 for valid text with a top-level `!` pipeline (`! false`), as it
        # negates the status of the command it did not run. Syntax errors always name the file.
        return None
    chosen = main_words(words)
    return SyntaxProblem(classify(shell_name, chosen.text, command), chosen.neutral(), chosen.line)

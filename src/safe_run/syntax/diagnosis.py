"""From a shell's complaint to the refusal a reader can act on: what is unbalanced, the shell's own
words, and how to fix it.

The shell's words come first and a light scan of the text steps in where they are vague. This is
kept pure, apart from running the shell, so that it can be exercised with messages from shells
that are not installed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .constructs import (
    BACKQUOTE, BRACE, CASE, DANGLING, FISH_BEGIN, FISH_FUNCTION, FISH_IF, FISH_LOOP, FISH_SWITCH,
    HEREDOC_PREFIX, IF, LOOP, PARENTHESIS, QUOTE_CHARS, QUOTES, STRAY_DONE, STRAY_END, STRAY_ESAC, STRAY_FI,
    UNKNOWN, heredoc, swallows_the_rest,
)
from .family import syntax_facts
from .fish_scan import scan_fish
from .posix_scan import scan_posix
from .words import BASH_HEREDOC, ShellWords


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
    if construct.startswith(HEREDOC_PREFIX):
        return "End the heredoc with a line holding only its delimiter, then retry."
    if construct == DANGLING:
        return "Complete or remove the trailing operator and retry."
    if construct == UNKNOWN:
        return "Fix the quoting or the structure and retry."
    return "Fix the structure and retry."


def bash_heredoc_warning(words: list[ShellWords]) -> SyntaxProblem | None:
    """bash accepts an unterminated heredoc with only a warning; that warning is the verdict."""
    for item in words:
        match = BASH_HEREDOC.search(item.text)
        if match:
            return SyntaxProblem(heredoc(match[2]), item.neutral(), int(match[1]))
    return None


_CLOSERS = {")": PARENTHESIS, "(": PARENTHESIS, "}": BRACE, "{": BRACE}
_KEYWORDS = {"if": IF, "then": IF, "fi": IF, "for": LOOP, "while": LOOP, "until": LOOP, "select": LOOP,
             "do": LOOP, "done": LOOP, "case": CASE, "esac": CASE}
_STRAY_TOKENS = {**_CLOSERS, "fi": STRAY_FI, "done": STRAY_DONE, "esac": STRAY_ESAC, "end": STRAY_END}

# Each names the culprit with its first group: bash, zsh, ksh, dash in turn.
_POSIX_NAMING_RULES: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = (
    (re.compile(r"looking for matching `(.)'"), {**QUOTE_CHARS, **_CLOSERS}),
    (re.compile(r"\bunmatched (\S)"), {**QUOTE_CHARS, **_CLOSERS}),
    (re.compile(r"`(\S+)' unmatched"), {**QUOTE_CHARS, **_CLOSERS, **_KEYWORDS}),
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
    facts = syntax_facts(shell_name)
    fish = facts is not None and facts.grammar == "fish"
    said = _from_fish_words(shell_message) if fish else _from_posix_words(shell_message)
    if said is not None and swallows_the_rest(said):
        return said
    scanned = scan_fish(command) if fish else scan_posix(command)
    if scanned is not None and (said is None or swallows_the_rest(scanned)):
        return scanned
    return said or _from_unexpected_token(shell_message) or UNKNOWN


def _from_posix_words(message: str) -> str | None:
    if heredoc_match := BASH_HEREDOC.search(message):
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


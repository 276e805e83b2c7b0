"""Command lines that every POSIX-family shell parses, told apart without starting one.

Most commands an agent runs are one line of simple commands joined by pipes and lists:
`cd src && grep -rn "TODO" . | head -20`, `python3 -c 'print(1)' 2>&1; echo "$?"`. Starting the
shell's parser for each costs a fork and an exec, more than the rest of a warm call. A line made
only of the pieces below cannot be a syntax error in bash, zsh, dash or ksh, so it is passed at once:

  words       letters, digits and `_./=:,+@%~*?-`, single-quoted text, double-quoted text
              holding no backslash, backquote or `!`, and `$NAME`, `${NAME}`, `$1`, `$?` and
              the like, none of them a reserved word; `[` and `]` as words of their own
  expansions  also POSIX's `${#NAME}` and `${NAME` with `-`, `=`, `+`, `?` (each with or
              without `:`), `#`, `##`, `%` or `%%`, then a word of the characters above but `%`,
              and `}`: `${VAR:-}`, `${PWD##*/}`, `${f%.py}`
  redirects   `>`, `>>`, `<`, each with a word after it, and `N>&M`, an optional fd number before
  operators   `|`, `&&`, `||` between two commands; `;` and `&` after one

Anything else (a newline, parentheses, braces, `$(...)`, a heredoc, a backslash, a comment, a
reserved word anywhere) is left to the shell's own check.
"""

from __future__ import annotations

import re

NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# The characters of a plain word but `%`, which a braced expansion's word leaves out (`-` stays
# last, where it is no range).
PLAIN = r"A-Za-z0-9_./=:,+@~*?-"
# `${NAME}`, `${#NAME}`, and POSIX's operators on a NAME with a plain word: `${VAR:-}`, `${PWD##*/}`.
BRACED = rf"\{{(?:#?{NAME}|{NAME}(?:##?|%%?|:?[-=+?])[{PLAIN}]*)\}}"
EXPANSION = rf"\$(?:{NAME}|[0-9?$!#@*-]|{BRACED})"
WORD = re.compile(rf"(?:[%{PLAIN}]|'[^'\n]*'|\"(?:[^\"\\\\$`!\n]|{EXPANSION})*\"|{EXPANSION})+")
# `[` and `]` only as words of their own (the test command): next to a name, bash may read an
# array subscript, and zsh does after a parameter (`$x[`).
BRACKET = re.compile(r"(?<![^ \t;&|])[\[\]](?=[ \t;&|]|\Z)")
# What joins two commands; `;` and `&` may also end the line.
OPERATOR = re.compile(r"&&|\|\||[|;&]")
DUPLICATE = re.compile(r"[0-9]?>&[0-9](?=[ \t;&|]|\Z)")  # 2>&1: a redirect complete in itself
REDIRECT = re.compile(r"[0-9]?(?:>>|>|<)(?![<>&|(])")
BLANKS = re.compile(r"[ \t]*")
ASSIGNMENT = re.compile(rf"{NAME}=")
# `=` at the start of a word after expansion: zsh's `=cmd` expansion, which `zsh -n` reports too.
EQUALS_AFTER_EXPANSION = re.compile(rf"\A=|[}}'\"]=|\$(?:{NAME}|[0-9?$!#@*-])=")
ENDS_LINE = (";", "&")


def simple_list(command: str, reserved: frozenset[str]) -> bool:
    """Whether `command` is such a line (see the module docstring); `reserved`: the words that
    open or close a construct in any of the shells."""
    words = 0  # in the command being read
    named = False  # a word of it that is not an assignment: zsh refuses `x=1 &`
    target_due = False  # a redirect waits for its word
    last_operator = None
    position = BLANKS.match(command).end()  # type: ignore[union-attr]
    while position < len(command):
        if (match := OPERATOR.match(command, position)) is not None:
            operator = match.group()
            if words == 0 or target_due or (operator == "&" and (not named or command.startswith(">", match.end()))):
                return False  # `&>` is one operator in bash
            words, named, last_operator = 0, False, operator
        elif (match := DUPLICATE.match(command, position)) is not None or (match := REDIRECT.match(command, position)):
            if target_due:
                return False
            target_due = match.re is REDIRECT
        elif (match := WORD.match(command, position) or BRACKET.match(command, position)) is not None:
            word = match.group()
            if word in reserved or EQUALS_AFTER_EXPANSION.search(word):
                return False
            if not target_due:
                words += 1
                named = named or ASSIGNMENT.match(word) is None
            target_due = False
        else:
            return False
        position = BLANKS.match(command, match.end()).end()  # type: ignore[union-attr]
    if target_due:
        return False
    return words > 0 or last_operator in ENDS_LINE

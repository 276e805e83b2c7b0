"""Refuse a command that does not parse, before any of it runs (see `check` for why and how).

`check` runs the shell's own no-execute mode, `words` reads what the shell printed, `diagnosis`
turns it into the message, and `posix_scan` and `fish_scan` name the culprit where the shell's
words are vague.
"""

from __future__ import annotations

from .check import check_argv, check_environment, check_syntax
from .constructs import (
    BACKQUOTE, BRACE, CASE, DANGLING, DOUBLE_QUOTE, FISH_BEGIN, FISH_FUNCTION, FISH_IF, FISH_LOOP,
    FISH_SWITCH, IF, LOOP, PARENTHESIS, QUOTES, SINGLE_QUOTE, STRAY_DONE, STRAY_END, STRAY_ESAC, STRAY_FI,
    UNKNOWN, heredoc,
)
from .diagnosis import SyntaxProblem, bash_heredoc_warning, classify
from .family import shell_family
from .fish_scan import scan_fish
from .posix_scan import dangling_operator, scan_posix
from .words import ShellWords, main_words, shell_words

__all__ = [
    "BACKQUOTE", "BRACE", "CASE", "DANGLING", "DOUBLE_QUOTE", "FISH_BEGIN", "FISH_FUNCTION", "FISH_IF",
    "FISH_LOOP", "FISH_SWITCH", "IF", "LOOP", "PARENTHESIS", "QUOTES", "SINGLE_QUOTE", "STRAY_DONE",
    "STRAY_END", "STRAY_ESAC", "STRAY_FI", "UNKNOWN", "ShellWords", "SyntaxProblem", "bash_heredoc_warning",
    "check_argv", "check_environment", "check_syntax", "classify", "dangling_operator", "heredoc",
    "main_words", "scan_fish", "scan_posix", "shell_family", "shell_words",
]

"""The names of what can be left unbalanced, as the refusal message shows them to people."""

from __future__ import annotations

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
HEREDOC_PREFIX = "a heredoc ("
QUOTE_CHARS = {'"': DOUBLE_QUOTE, "'": SINGLE_QUOTE, "`": BACKQUOTE}


def heredoc(delimiter: str) -> str:
    """The construct for a heredoc whose terminator line never comes."""
    return f"{HEREDOC_PREFIX}<<{delimiter} never closed)" if delimiter else f"{HEREDOC_PREFIX}never closed)"


def swallows_the_rest(construct: str) -> bool:
    """Quotes and heredocs run to the end of the input, so they explain any later complaint."""
    return construct in QUOTES or construct.startswith(HEREDOC_PREFIX)


class Found(Exception):
    """Ends a scan as soon as the culprit is known."""

    def __init__(self, construct: str) -> None:
        super().__init__(construct)
        self.construct = construct

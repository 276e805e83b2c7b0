"""Which family a shell belongs to, which decides how it is asked for a parse and how it is read."""

from __future__ import annotations

from ..shells.kind import SyntaxFacts
from ..shells.registry import kind_of


def shell_family(shell_name: str) -> str | None:
    """bash, zsh, fish, posix, or None for a shell whose no-execute mode is not known."""
    kind = kind_of(shell_name)
    return kind.family if kind.syntax is not None else None


def syntax_facts(shell_name: str) -> SyntaxFacts | None:
    """How the shell is asked for a parse; None when it cannot be (the command then runs unchecked)."""
    return kind_of(shell_name).syntax

"""Which family a shell belongs to, which decides how it is asked for a parse and how it is read."""

from __future__ import annotations

_POSIX_SHELLS = ("sh", "dash", "ash", "ksh", "mksh", "pdksh", "oksh", "loksh", "posh", "yash")


def shell_family(shell_name: str) -> str | None:
    """bash, zsh, fish, posix, or None for a shell whose no-execute mode is not known."""
    for family in ("bash", "zsh", "fish"):
        if shell_name.startswith(family):
            return family
    if shell_name in _POSIX_SHELLS or shell_name.startswith(("dash", "ksh", "mksh")):
        return "posix"
    return None


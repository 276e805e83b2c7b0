"""The shells safe-run knows by name; every other shell is driven as a POSIX shell.

A new shell is one module defining its `ShellKind` as `SHELL`, and one entry here.
"""

from __future__ import annotations

import os

from . import bash, fish, posix, zsh
from .kind import ShellKind

REGISTRY = (bash.SHELL, zsh.SHELL, fish.SHELL)
# The shells doctor looks for on PATH, in report order.
KNOWN_NAMES = (*(kind.name for kind in REGISTRY), "dash", "sh")


def kind_of(path_or_name: str, known: tuple[ShellKind, ...] = REGISTRY) -> ShellKind:
    """The kind from the file name (`bash5.2`, `/usr/bin/zsh-5.9` and a login shell's `-bash`
    included), among the `known` kinds or else of the POSIX family."""
    base = os.path.basename(path_or_name).lstrip("-")
    return next((kind for kind in known if base.startswith(kind.name)), None) or posix.kind_named(base)


def is_shell(kind: ShellKind) -> bool:
    """Whether a program a command put in the shell's place (`exec ...`) takes command lines: a
    registered shell or one of the POSIX family. Nothing is ever typed into any other."""
    return any(kind.name == known.name for known in REGISTRY) or kind.name in posix.POSIX_FAMILY

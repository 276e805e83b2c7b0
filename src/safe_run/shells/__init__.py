"""Which shell to start, and how to start it so that safe-run's integration loads.

Each supported shell has a module that turns a `RunSetup` into a `Launch`: the argv, the extra
environment, the files written into the private directory, and the short lines typed at the
prompt. bash, zsh and fish can be started with integration or plainly; other shells (sh, dash,
ksh, ...) only plainly, and are driven by the fallback lines. Each module describes its shell as
one `kind.ShellKind`, and `registry.kind_of` finds the kind of a shell from its path.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..core.tracker import Lines


class ShellNotFound(Exception):
    """The shell asked for (or found) cannot be executed."""


@dataclass(frozen=True)
class RunSetup:
    """What every integration needs to know about one run."""

    shell_path: str
    workdir: Path
    nonce: str
    command_file: Path
    cwd: str
    load_rc: bool
    env: dict[str, str]


@dataclass(frozen=True)
class Launch:
    """How to start one shell: argv, environment additions, and the lines to type."""

    argv: list[str]
    env: dict[str, str]
    lines: Lines
    integrated: bool
    # What the shell itself prints when the command exits it, announced right after by an X mark
    # so that it can be taken back out of the command's output.
    exit_word: bytes = b""


def resolve_shell(requested: str | None, environ: dict[str, str]) -> str:
    """--shell, else $SHELL, else the passwd entry, else /bin/sh; a name is looked up on PATH."""
    candidate = requested or environ.get("SHELL") or passwd_shell() or "/bin/sh"
    path = find_shell(candidate, environ)
    if path is None:
        raise ShellNotFound(f"shell not found or not executable: {candidate}")
    return path


def find_shell(candidate: str, environ: Mapping[str, str]) -> str | None:
    """A shell given by path, or by name looked up on $PATH, if it is an executable file."""
    path = candidate if os.sep in candidate else _which(candidate, environ.get("PATH", os.defpath))
    return path if path is not None and _executable(path) else None


# The files of a shell's private directory that hold the run's nonce: the integration each shell
# reads as it starts, and the one a heal line sources. They are removed once the shell has read
# them (when the command starts), so that no program the command runs can read the nonce there;
# a heal line writes its file again before it is typed.
SECRET_FILES = ("integration.bash", "integration.fish", "zdotdir/.zshenv", "reinject.bash", "reinject.zsh",
                "reinject.fish")


def forget_secrets(workdir: Path) -> None:
    """Remove the files that hold the nonce (see SECRET_FILES), those that are there."""
    for name in SECRET_FILES:
        try:
            (workdir / name).unlink()
        except FileNotFoundError:
            pass


def integration_script(name: str) -> str:
    """The text of one of the integration scripts shipped with the package (next to this file:
    importlib.resources would cost more start-up time than the whole run of a short command)."""
    return Path(__file__).with_name(name).read_text(encoding="utf-8")


def passwd_shell() -> str | None:
    """The login shell in this user's passwd entry."""
    try:
        return pwd.getpwuid(os.getuid()).pw_shell or None
    except KeyError:
        return None


def _which(name: str, search_path: str) -> str | None:
    for directory in search_path.split(os.pathsep):
        path = os.path.join(directory or ".", name)
        if _executable(path):
            return path
    return None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)

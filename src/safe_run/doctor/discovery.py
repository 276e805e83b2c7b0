"""Which shells to check, where they are, and the start-up files a run of each loads."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .. import shells
from ..shells.registry import KNOWN_NAMES, kind_of

# `exec PROGRAM` in a start-up file (not `exec >file` or `exec 2>&1`, which only redirect).
EXEC_LINE = re.compile(
    r"(?:^|[;&|({]|\bthen|\bdo|\belse)\s*exec\s+(?:-\w+\s+)*(?![\d\s]*[<>&])([^\s;&|()<>#'\"]+)"
)
MAX_EXEC_LINES = 3
MAX_RC_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One shell to check: found, or named but missing (then `missing` says why it matters)."""

    name: str
    path: str | None
    default: bool = False
    missing: str | None = None  # a problem, when a shell that runs would use is missing


@dataclass(frozen=True)
class ExecLine:
    """A line of a start-up file that replaces the shell with another program."""

    path: str
    line: int
    text: str
    program: str


def find_targets(environ: Mapping[str, str], passwd_shell: str | None) -> list[Target]:
    """bash, zsh, fish, dash and sh as found on PATH, then $SHELL and the passwd shell if they
    are others; the one a plain run would use is marked `default`. A standard shell not on PATH
    is listed as not installed; a missing $SHELL is a problem, since plain runs would fail."""
    default = _default_shell(environ, passwd_shell)
    targets: list[Target] = []
    seen: set[tuple[str, str]] = set()

    def add(path: str) -> None:
        name = kind_of(path).name
        key = (name, os.path.realpath(path))
        if key in seen:
            return
        seen.add(key)
        targets.append(Target(name, path, default=default is not None and key == _key(default)))

    # $SHELL and the passwd shell are added to the known ones.
    for name in KNOWN_NAMES:
        path = shells.find_shell(name, environ)
        if path is None:
            targets.append(Target(name, None))
        else:
            add(path)
    for extra in (environ.get("SHELL"), passwd_shell, default):
        if not extra:
            continue
        path = shells.find_shell(extra, environ)
        if path is not None:
            add(path)
        elif extra == (environ.get("SHELL") or passwd_shell) and all(t.path != extra for t in targets):
            where = "$SHELL" if extra == environ.get("SHELL") else "your passwd entry"
            missing = Target(
                kind_of(extra).name, extra, default=True,
                missing=f"{where} names {extra}, which is not an executable file: "
                "safe-run without --shell cannot run anything",
            )
            # A standard shell that is merely not installed is replaced by this, its problem.
            targets = [t for t in targets if not (t.path is None and t.name == missing.name)]
            targets.append(missing)
    return targets


def named_target(path: str, environ: Mapping[str, str], passwd_shell: str | None) -> Target:
    """The one shell named with --shell (already resolved), marked `default` if plain runs use it."""
    default = _default_shell(environ, passwd_shell)
    return Target(kind_of(path).name, path, default=default is not None and _key(default) == _key(path))


def _default_shell(environ: Mapping[str, str], passwd_shell: str | None) -> str | None:
    """The shell `safe-run CMD` would use (as `shells.resolve_shell`), or None if it is missing."""
    return shells.find_shell(environ.get("SHELL") or passwd_shell or "/bin/sh", environ)


def _key(path: str) -> tuple[str, str]:
    return (kind_of(path).name, os.path.realpath(path))


def rc_files(name: str, environ: Mapping[str, str], home: str, zdotdir: str | None = None) -> list[str]:
    """The start-up files that exist and that a run of this shell loads (as safe-run starts it);
    `zdotdir` is the ZDOTDIR a zsh run reported, where its .zshrc is read from."""
    candidates = kind_of(name).doctor.rc_candidates(environ, home, zdotdir)
    return [path for path in candidates if os.path.isfile(path)]


def find_exec_lines(texts: Iterable[tuple[str, str]]) -> list[ExecLine]:
    """`exec PROGRAM` lines in (path, text) pairs of start-up files: the usual way one replaces
    the shell (and so the integration) with another program."""
    found: list[ExecLine] = []
    for path, text in texts:
        for number, line in enumerate(text.splitlines(), 1):
            stripped = line.strip()
            if stripped.startswith("#"):
                continue
            match = EXEC_LINE.search(stripped)
            if match:
                found.append(ExecLine(path, number, stripped, match.group(1)))
                if len(found) >= MAX_EXEC_LINES:
                    return found
    return found


def read_texts(paths: Iterable[str]) -> list[tuple[str, str]]:
    texts = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                texts.append((path, handle.read(MAX_RC_BYTES).decode("utf-8", "replace")))
        except OSError:
            continue
    return texts


"""Runs in a process that serves another (a holder, a warm call's child, a spare child, the holder
forked ahead), made by whoever forked it: the caller's variables, directory and umask, which it takes.

A process forked from a warm process or a fork server carries that process's variables and
directory, not its caller's; it takes the caller's with `Caller.take`, whichever way they came (a
fork server's request and the hand-over to a holder forked ahead carry them as `encoded`;
a warm process builds them from its client's call). What else a caller hands on is one more field
here, read in `here` and applied in `take`.
"""

from __future__ import annotations

import fcntl
import os
import sys
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..engine.kernel import current_umask


@dataclass(frozen=True)
class Caller:
    """The variables, directory and umask of whoever asked for a process, which that process takes."""

    environ: list[str]  # NAME=VALUE, as os.fsdecode makes them (any byte survives the round trip)
    directory: str | int  # a path, or a descriptor on it in this process (which a path cannot follow)
    umask: int

    @classmethod
    def here(cls, directory: str | int | None = None) -> Caller:
        """This process's variables and umask, and its directory (named, for another process;
        "." to pass it on as a descriptor)."""
        environ = [os.fsdecode(name + b"=" + value) for name, value in os.environb.items()]
        return cls(environ, os.getcwd() if directory is None else directory, current_umask())

    def take(self) -> None:
        """Be where the caller is, in this process. Raises OSError when its directory is gone."""
        _take_environment([os.fsencode(entry) for entry in self.environ])
        os.umask(self.umask)
        if isinstance(self.directory, int):
            os.fchdir(self.directory)
        else:
            os.chdir(self.directory)

    def directory_descriptor(self) -> int:
        """A new descriptor on its directory, to pass on beside `encoded` (close-on-exec)."""
        if isinstance(self.directory, int):
            return fcntl.fcntl(self.directory, fcntl.F_DUPFD_CLOEXEC, 0)
        return os.open(self.directory, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)

    def encoded(self) -> dict[str, Any]:
        """Its form in JSON; a directory held as a descriptor is passed beside it, not in it."""
        return {**asdict(self), "directory": self.directory if isinstance(self.directory, str) else None}

    @classmethod
    def decoded(cls, fields: dict[str, Any], directory: int | None = None) -> Caller:
        """The caller `encoded` made; `directory`, a descriptor passed beside it, stands for its path."""
        caller = cls(**fields)
        return caller if directory is None else replace(caller, directory=directory)


def anticipate(caller: Caller) -> None:
    """Take the place of a caller whose like is expected next, as far as its directory still
    exists: a process that gets ready ahead of a call (its call takes its own caller's place again)."""
    try:
        caller.take()
    except OSError:
        pass  # its directory is gone: a call from there finds it gets ready elsewhere


def _take_environment(entries: list[bytes]) -> None:
    """A caller's variables (`NAME=value` each), changing only what differs: mostly nothing, as a
    fork of a warm process has the variables of the call that started that process. tempfile keeps
    the first TMPDIR it saw, so it is made to look again."""
    wanted = dict(entry.partition(b"=")[::2] for entry in entries)
    for name in [name for name in os.environb if name not in wanted]:
        del os.environb[name]
    for name, value in wanted.items():
        if os.environb.get(name) != value:
            os.environb[name] = value
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        setattr(tempfile, "tempdir", None)

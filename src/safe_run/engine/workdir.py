"""Private run directories: made, held for the run's life, removed; those of dead runs swept.

A run killed with SIGKILL cannot remove its directory. So each run holds an exclusive flock on its
directory from just after making it until it has removed it, and the kernel drops that lock when
the process ends, however it ends. The next run in the same TMPDIR removes every directory of its
own user named like one of ours that it can lock: nobody alive holds it. The lock, not a pid, says
whether the owner lives, so a reused pid changes nothing.

Races: a sweeper that locks a directory its maker has not locked yet removes it; the maker finds
it cannot lock it, or that its path no longer leads to what it locked, and makes another. A sweeper
removes only what it locked and still finds at the same path.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from pathlib import Path

PREFIX = "safe-run-"
# The names tempfile.mkdtemp gives with that prefix; nothing else in TMPDIR is ever touched. Eight
# digits are not one: that is where a user whose uid has eight digits keeps their sessions
# (`places.temporary_root`), so a run never keeps a directory of that name (see `_make_locked`).
NAME = re.compile(re.escape(PREFIX) + r"(?![0-9]{8}\Z)[a-z0-9_]{8}")
# A directory swept from under its maker before it was locked is made again; more than a few in a
# row would take a sweeper that finds each new one within microseconds.
ATTEMPTS = 5
OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class HeldDirectory:
    """A private directory only this user can read, and the lock that says its owner lives, until
    `remove` (which a second call leaves as it is)."""

    def __init__(self, path: Path, lock: int) -> None:
        self.path = path
        self.lock = lock

    @classmethod
    def make(cls, parent: Path | None = None) -> HeldDirectory:
        """Made in $TMPDIR, after sweeping the directories that runs killed there left behind, or
        in `parent` (a session's directory, so that the leftovers of a holder that was killed go
        with the session)."""
        if parent is None:
            sweep_leftovers(Path(tempfile.gettempdir()))
        return cls(*_make_locked(parent))

    def remove(self) -> None:
        if self.lock < 0:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        os.close(self.lock)
        self.lock = -1


def sweep_leftovers(directory: Path) -> None:
    """Remove the private directories in `directory` whose runs are gone (their lock is free)."""
    try:
        with os.scandir(directory) as entries:
            names = [entry.name for entry in entries if NAME.fullmatch(entry.name)]
    except OSError:
        return
    for name in names:
        _sweep(directory / name)


def _sweep(path: Path) -> None:
    try:
        fd = os.open(path, OPEN_FLAGS)
    except OSError:
        return  # gone already, not a directory, a symlink, or not ours to read
    try:
        if os.fstat(fd).st_uid == os.geteuid() and _try_lock(fd) and _still_at(fd, path):
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def _make_locked(parent: Path | None) -> tuple[Path, int]:
    for _ in range(ATTEMPTS):
        path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=parent))
        if not NAME.fullmatch(path.name):  # all digits, once in 35,000 names: made again
            path.rmdir()
            continue
        try:
            fd = os.open(path, OPEN_FLAGS)
        except FileNotFoundError:
            continue  # swept before it could be locked
        if _try_lock(fd) and _still_at(fd, path):
            return path, fd
        os.close(fd)
    raise OSError(f"cannot keep a private directory in {parent or tempfile.gettempdir()}: each one was removed at once")


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _still_at(fd: int, path: Path) -> bool:
    """Whether `path` still names the directory open as `fd` (not removed, not replaced)."""
    try:
        named = os.lstat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)

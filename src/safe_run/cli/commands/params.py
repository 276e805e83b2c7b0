"""What only the command line accepts, checked before anything runs.

Its words become the values `calls.py` checks for every front end (a number of seconds is held to
`calls.seconds_refusal` as it is parsed), and the files safe-run reads or writes must be regular
files: opening a FIFO with no one on the other side blocks for ever, and a device such as
/dev/zero never ends. Nothing here waits: a path is looked at with stat before it is opened, and
opened non-blocking.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

import click

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# MAX_COMMAND_BYTES: what --command-file (or stdin) may hold, as for every front end
from ...calls import MAX_COMMAND_BYTES, seconds_refusal, typed_line


class Seconds(click.ParamType[float, object]):
    """A number of seconds as text, held to the rule every front end's seconds follow."""

    name = "seconds"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        else:
            try:
                number = float(str(value))
            except ValueError:
                self.fail(f"{value!r} is not a number of seconds", param, ctx)
        refusal = seconds_refusal(number, value)
        if refusal is not None:
            self.fail(refusal, param, ctx)
        return number


SECONDS = Seconds()


@contextmanager
def refused_as_usage() -> Iterator[None]:
    """calls.py's refusal of an argument, as the command line reports bad input: one line, exit status 2."""
    try:
        yield
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def complete_directories(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """A directory option completes as the shell completes directories; what it names is checked
    when the run is built (calls.directory), as every front end's directory is."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="dir")]


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_command_file(path: str, stdin_open: bool) -> bytes:
    """The bytes of --command-file: a regular file, or stdin for '-'; at most MAX_COMMAND_BYTES."""
    option = "--command-file"
    if path == "-":
        if not stdin_open:
            raise click.BadParameter("standard input is closed: there is no command to read", param_hint="--command-file")
        return _read_bounded(0, "standard input")
    try:
        info = os.stat(path)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=option) from exc
    if not stat.S_ISREG(info.st_mode):
        hint = " (use --command-file - for a pipe on stdin)" if stat.S_ISFIFO(info.st_mode) else ""
        raise click.BadParameter(f"{path} is {_kind(info.st_mode)}, not a regular file{hint}", param_hint=option)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}", param_hint=option) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # replaced between the stat and the open
            raise click.BadParameter(f"{path} is {_kind(mode)}, not a regular file", param_hint=option)
        return _read_bounded(fd, path)
    finally:
        os.close(fd)


def _read_bounded(fd: int, name: str, limit: int = MAX_COMMAND_BYTES, option: str = "--command-file",
                  what: str = "a command") -> bytes:
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError as exc:
            raise click.BadParameter(f"cannot read {name}: {exc.strerror}", param_hint=option) from exc
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    raise click.BadParameter(f"{name} holds more than {limit} bytes, the most {what} may have", param_hint=option)


def read_secret_text(stdin_open: bool, limit: int) -> str:
    """The text `send ID -` types, from standard input rather than the command line, where every
    user sees it (ps, /proc/PID/cmdline). A pipe is read to its end; at a terminal, one line is
    read with echo off, as a password prompt does. One final line break is the input's own, not
    the text's."""
    option = "TEXT"
    if not stdin_open:
        raise click.BadParameter("standard input is closed: there is no text to read", param_hint=option)
    data = _line_unechoed(limit) if os.isatty(0) else _read_bounded(0, "standard input", limit, option, "a send")
    try:
        return typed_line(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise click.BadParameter(f"standard input is not valid UTF-8 (byte {exc.start})", param_hint=option) from exc


def _line_unechoed(limit: int) -> bytes:
    """One line typed at the terminal on descriptor 0, not shown; the prompt goes to stderr. A stop
    signal (Ctrl-C) interrupts the read, and the terminal's echo is put back however it ends."""
    import termios

    sys.stderr.write("text to send (not shown): ")
    sys.stderr.flush()
    saved = termios.tcgetattr(0)
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHONL)
    termios.tcsetattr(0, termios.TCSAFLUSH, quiet)
    try:
        return os.read(0, limit)  # the terminal hands over one line, of at most 4095 bytes
    finally:
        termios.tcsetattr(0, termios.TCSAFLUSH, saved)
        sys.stderr.write("\n")


# As many symbolic links as the kernel follows for one name before it gives up (ELOOP).
MAX_LINKS = 40


def open_log(path: str) -> BinaryIO:
    """--log FILE opened for writing: a regular file of this user's, private, emptied; never blocks.

    A shared directory (/tmp) lets another user put something at the name first: a link to a file
    of ours, which we would empty, or a file of theirs, which would get the transcript with its
    marks. So a symbolic link is followed only when it is ours (or root's, as /dev/stdout), what is
    written to must be ours with no other name (a hard link), and a file made here is made by this
    call alone (O_EXCL), mode 0600. An existing one of ours loses its group and other permissions:
    the transcript holds whatever the terminal showed.
    A write of nothing is tried at once: files that refuse every write (/proc, /sys) say so here,
    before the command runs. It is unbuffered, so a write that fails is seen (and reported) at the
    moment it fails rather than lost at close.
    """
    if path == "-":
        raise click.BadParameter("the transcript needs a file: standard output holds the result", param_hint="--log")
    try:
        fd = _open_unemptied(path)
    except OSError as exc:
        raise click.BadParameter(f"cannot write {path}: {exc.strerror or exc}", param_hint="--log") from exc
    try:
        _make_private_and_empty(fd, path)
    except OSError as exc:
        os.close(fd)
        raise click.BadParameter(f"cannot write {path}: {exc.strerror}", param_hint="--log") from exc
    except click.BadParameter:
        os.close(fd)
        raise
    return open(fd, "wb", buffering=0)


def log_refusal(path: str, info: os.stat_result, uid: int) -> str | None:
    """Why the file found at `path` must not get the transcript; None when it may."""
    if not stat.S_ISREG(info.st_mode):
        return f"{path} is {_kind(info.st_mode)}, not a regular file"
    if info.st_uid != uid:
        return f"{path} belongs to another user; the transcript is written only to a file of this user's"
    if info.st_nlink > 1:
        return f"{path} has other names (hard links); the transcript is written only to a file with one name"
    return None


def _open_unemptied(path: str) -> int:
    """A descriptor on what `path` names, for writing, nothing emptied yet: made 0600 by this call
    when nothing is there; through symbolic links only when each is this user's or root's. A FIFO
    or a device is refused before it is opened (opening one may block, or act)."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    if stat.S_ISLNK(info.st_mode):
        _check_links(path)
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise click.BadParameter(
                f"{path} is a symbolic link to {os.path.realpath(path)}, which does not exist; the transcript is "
                "made only under its own name", param_hint="--log",
            ) from None
    else:
        flags |= os.O_NOFOLLOW
    if not stat.S_ISREG(info.st_mode):
        raise click.BadParameter(f"{path} is {_kind(info.st_mode)}, not a regular file", param_hint="--log")
    return os.open(path, flags)


def _check_links(path: str) -> None:
    """Refuse the chain of symbolic links at `path` if another user made one of them.

    Only the last part of the path is followed, link by link (the directories on the way are the
    caller's to choose); a link into /proc (/dev/stdout's) ends the walk, as its target is no path.
    """
    for _ in range(MAX_LINKS):
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISLNK(info.st_mode):
            return
        if info.st_uid not in (os.geteuid(), 0):
            raise click.BadParameter(
                f"{path} is a symbolic link of another user's; the transcript never follows one", param_hint="--log",
            )
        path = os.path.join(os.path.dirname(path), os.readlink(path))


def _make_private_and_empty(fd: int, path: str) -> None:
    info = os.fstat(fd)
    refusal = log_refusal(os.path.realpath(path), info, os.geteuid())  # the file itself, when a link led to it
    if refusal is not None:
        raise click.BadParameter(refusal, param_hint="--log")
    if info.st_mode & 0o077:
        os.fchmod(fd, stat.S_IMODE(info.st_mode) & 0o700)
    os.ftruncate(fd, 0)
    os.write(fd, b"")


def given(option: str) -> bool:
    """Whether the caller wrote `option` (its parameter's name) on the command line, rather than
    leaving its default: an option given where it does not apply is a usage error."""
    source = click.get_current_context().get_parameter_source(option)
    return source is click.core.ParameterSource.COMMANDLINE


def stdin_is_open() -> bool:
    """Python sets sys.stdin to None when descriptor 0 was closed at start-up."""
    return sys.stdin is not None

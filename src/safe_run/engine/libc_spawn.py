"""The C library's posix_spawn, to start the shell without forking safe-run's own process.

Forking a Python process of some tens of megabytes copies its page tables, and then every page
either side writes before the child's exec; posix_spawn runs the child on the parent's memory
until exec, as vfork does. Here that is under 1 ms against 3 ms for a fork (bench/bench_spawn.py),
on every shell safe-run starts.

Python's own `os.posix_spawn` cannot start the shell as `spawn` must: it has no change of
directory and no closing of inherited descriptors, and it refuses the C library's internal
signals (32 and 33 in glibc) in the set to reset to default, which glibc's child then leaves
ignored (an ignored disposition survives exec). Here that set is written bit by bit, so that every
signal reaches the shell at its default. The functions used need glibc 2.34 or later; elsewhere
`available` is False and `spawn` forks as before.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
from collections.abc import Iterable

# <spawn.h> flags, the same in glibc and musl.
POSIX_SPAWN_SETSIGDEF = 0x04
POSIX_SPAWN_SETSIGMASK = 0x08
POSIX_SPAWN_SETSID = 0x80
# Room for the opaque posix_spawnattr_t (336 bytes in glibc on x86-64) and file actions (80).
OPAQUE_SIZE = 1024
SIGSET_WORDS = 16  # sigset_t: 1024 bits in unsigned longs
NEEDED = (2, 34)  # posix_spawn_file_actions_addclosefrom_np


def _libc() -> ctypes.CDLL | None:
    version = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else None
    found = re.fullmatch(r"glibc (\d+)\.(\d+).*", version or "")
    if found is None or (int(found[1]), int(found[2])) < NEEDED:
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def available() -> bool:
    return _LIBC is not None


def _sigset(signals: Iterable[int]) -> ctypes.Array[ctypes.c_ulong]:
    """A sigset_t with exactly `signals`, the C library's internal ones included."""
    words = (ctypes.c_ulong * SIGSET_WORDS)()
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    for signum in signals:
        words[(signum - 1) // bits] |= 1 << ((signum - 1) % bits)
    return words


def _every_signal() -> list[int]:
    """Every signal a disposition can be set for, internal ones too: 1 up to the last real-time one."""
    return [n for n in range(1, signal.SIGRTMAX + 1) if n not in (signal.SIGKILL, signal.SIGSTOP)]


def _strings(words: list[bytes]) -> ctypes.Array[ctypes.c_char_p]:
    return (ctypes.c_char_p * (len(words) + 1))(*words, None)


def spawn_session(
    program: bytes, argv: list[bytes], env: dict[bytes, bytes], cwd: bytes, terminal: bytes,
    given: tuple[int, int] | None = None,
) -> int:
    """Start `program` as the leader of a new session in `cwd`, with the terminal at path `terminal`
    (opened after the new session, so it becomes the controlling one) as 0-2, no other descriptor
    but `given` (this process's descriptor, and the number it has in the program), every signal at
    its default and none blocked. Its pid; OSError with the errno of the step that failed (changing
    directory, opening the terminal, exec), which the C library does not name."""
    assert _LIBC is not None, "available() first"
    libc = _LIBC
    attributes = ctypes.create_string_buffer(OPAQUE_SIZE)
    actions = ctypes.create_string_buffer(OPAQUE_SIZE)
    _check(libc.posix_spawnattr_init(attributes))
    try:
        _check(libc.posix_spawn_file_actions_init(actions))
        try:
            flags = POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
            _check(libc.posix_spawnattr_setflags(attributes, ctypes.c_short(flags)))
            _check(libc.posix_spawnattr_setsigdefault(attributes, _sigset(_every_signal())))
            _check(libc.posix_spawnattr_setsigmask(attributes, _sigset(())))
            _check(libc.posix_spawn_file_actions_addchdir_np(actions, cwd))
            if given is not None:  # first: the given descriptor may be 0
                _check(libc.posix_spawn_file_actions_adddup2(actions, *given))
            _check(libc.posix_spawn_file_actions_addopen(actions, 0, terminal, os.O_RDWR, 0))
            _check(libc.posix_spawn_file_actions_adddup2(actions, 0, 1))
            _check(libc.posix_spawn_file_actions_adddup2(actions, 0, 2))
            if given is None:
                _check(libc.posix_spawn_file_actions_addclosefrom_np(actions, 3))
            else:
                # A close of a descriptor that is not open is no error to the C library.
                for fd in range(3, given[1]):
                    _check(libc.posix_spawn_file_actions_addclose(actions, fd))
                _check(libc.posix_spawn_file_actions_addclosefrom_np(actions, given[1] + 1))
            pid = ctypes.c_int()
            environment = [key + b"=" + value for key, value in env.items()]
            _check(libc.posix_spawn(ctypes.byref(pid), program, actions, attributes, _strings(argv), _strings(environment)))
            return pid.value
        finally:
            libc.posix_spawn_file_actions_destroy(actions)
    finally:
        libc.posix_spawnattr_destroy(attributes)


def _check(code: int) -> None:
    """posix_spawn and its helpers return the error number rather than setting errno."""
    if code:
        raise OSError(code, os.strerror(code))

"""The exit status of a shell this process did not start: a named shell's, once its keeper holds
it (`processes.keeper`).

Only a process's parent can collect its status, and a named shell's parent is its keeper once the
holder process that started it has handed over; the process that serves the shell later is the
keeper's child, the shell's sibling. Since Linux 6.15 the kernel keeps the status with the pid
once the parent has collected it (PIDFD_GET_INFO with PIDFD_INFO_EXIT), for anyone holding a
pidfd opened before the end: the terminal's own pidfd, opened as the shell started. On an older
kernel a holder keeps its shell itself, and nothing here is used.
"""

from __future__ import annotations

import fcntl
import os
import struct

# <linux/pidfd.h>: _IOWR(0xFF, 11, struct pidfd_info), in its first, 64-byte form.
PIDFD_GET_INFO = (3 << 30) | (64 << 16) | (0xFF << 8) | 11
PIDFD_INFO_EXIT = 1 << 3
INFO_SIZE = 64
EXIT_CODE_AT = 60  # the struct's `exit_code`: a status as waitpid gives it
FIRST_KERNEL = (6, 15)


def kept_by_kernel(release: str | None = None) -> bool:
    """Whether this kernel tells a pidfd's holder the status its parent collected (`release`:
    `uname -r`, this machine's when None)."""
    numbers = (release or os.uname().release).split("-")[0].split(".")
    try:
        return (int(numbers[0]), int(numbers[1])) >= FIRST_KERNEL
    except (IndexError, ValueError):
        return False


def collected_status(pidfd: int | None) -> int | None:
    """The wait status of the process `pidfd` names, once its parent has collected it; None
    before, or where the kernel cannot say."""
    if pidfd is None:
        return None
    info = bytearray(INFO_SIZE)
    struct.pack_into("Q", info, 0, PIDFD_INFO_EXIT)
    try:
        fcntl.ioctl(pidfd, PIDFD_GET_INFO, info)
    except OSError:
        return None
    if not struct.unpack_from("Q", info, 0)[0] & PIDFD_INFO_EXIT:
        return None
    return int(struct.unpack_from("i", info, EXIT_CODE_AT)[0])

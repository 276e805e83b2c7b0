"""Making a forked process's memory its own before it is needed.

A fork shares every page with its parent until one side writes to it, and CPython writes to
almost every object it touches (reference counts): a child forked from a warm process pays a page
fault and a page copy for each page it touches first, about half of the time a call spends in
Python here. A child forked ahead of its work (a warm process's spare) asks the kernel to copy
its writable pages at once (`MADV_POPULATE_WRITE`, Linux 5.14), while nothing waits for it: the
work then runs without those faults. The cost is memory: the child's writable pages (some 15 MB)
become its own rather than shared. The holder the spare forks ahead does not: its share of a call
is small, no faster measured with its pages its own, and the 7 MB it would hold are what the
shell it keeps ready costs (`shell_start.KeptShell`).
"""

from __future__ import annotations

import ctypes

MADV_POPULATE_WRITE = 23  # <linux/mman.h>
# Mappings left as they are: the stack grows on its own, and the kernel's own pages are not ours.
SKIPPED = ("[stack]", "[vvar]", "[vvar_vclock]", "[vsyscall]", "[vdso]")


def take_own_pages() -> None:
    """Copy this process's shared writable pages now (nothing where the kernel cannot)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps", encoding="ascii", errors="replace") as maps:
            ranges = [_writable_range(line) for line in maps]
    except (OSError, AttributeError):
        return
    for found in ranges:
        if found is not None:
            madvise(found[0], found[1] - found[0], MADV_POPULATE_WRITE)  # refused before 5.14: nothing done


def _writable_range(line: str) -> tuple[int, int] | None:
    """The start and end of a private writable mapping in a line of /proc/self/maps."""
    fields = line.split()
    if len(fields) < 5 or fields[1] != "rw-p" or (len(fields) > 5 and fields[5] in SKIPPED):
        return None
    start, _, end = fields[0].partition("-")
    return int(start, 16), int(end, 16)

"""Everything about a process that its children inherit and a warm process could get wrong.

A call is handed to a warm process only when the two fingerprints are equal, byte for byte: a
caller in another container, cgroup, sandbox, user, limit or interpreter gets its own warm process
(or none), never one that would run its command somewhere else. What a child can take over
exactly (descriptors, directory, environment, signal dispositions and mask) is sent with each
call instead. Reading it costs a dozen small reads of /proc/self, well under a millisecond.
"""

from __future__ import annotations

import os
import sys

# /proc/self/status lines a child inherits (the rest name the process itself: pid, memory, state).
STATUS_FIELDS = (
    b"Umask", b"Uid", b"Gid", b"Groups", b"NoNewPrivs", b"Seccomp", b"Seccomp_filters", b"CapInh", b"CapPrm",
    b"CapEff", b"CapBnd", b"CapAmb", b"Cpus_allowed_list", b"Mems_allowed_list",
)
PROC_FILES = ("cgroup", "limits", "loginuid", "sessionid", "oom_score_adj", "attr/current", "personality")
NAMESPACES = ("cgroup", "ipc", "mnt", "net", "pid", "pid_for_children", "time", "time_for_children", "user", "uts")
# Variables read when Python starts (encodings, paths, hash seed, time zone): the warm process
# was started with them, so a caller must have the same.
STARTUP_PREFIXES = ("PYTHON", "LC_")
STARTUP_NAMES = ("LANG", "TZ", "HOME")
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fingerprint(environ: dict[str, str], status: bytes) -> bytes:
    """This process's context; `status` is /proc/self/status, read before any handler was set."""
    parts = [b"%d %d %d" % (os.getpriority(os.PRIO_PROCESS, 0), sys.flags.utf8_mode, sys.flags.isolated)]
    parts.append(b"%d %d" % (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority))  # chrt
    parts.append(os.fsencode(sys.executable))
    parts.extend(line for line in status.splitlines() if line.partition(b":")[0] in STATUS_FIELDS)
    parts.extend(_read(f"/proc/self/{name}") for name in PROC_FILES)
    parts.extend(os.fsencode(_readlink(f"/proc/self/ns/{name}")) for name in NAMESPACES)
    parts.append(os.fsencode(_readlink("/proc/self/root")))
    parts.extend(
        os.fsencode(f"{name}={value}") for name, value in sorted(environ.items())
        if name.startswith(STARTUP_PREFIXES) or name in STARTUP_NAMES
    )
    parts.extend(os.fsencode(f"{entry} {_mtime(entry)}") for entry in sys.path)  # an install changes these
    parts.append(_package_signature())
    return b"\n".join(part.replace(b"\n", b"\\n").replace(b"\0", b"\\0") for part in parts)


# /proc/self/sessionid of a process outside any login session (audit's "unset").
NO_AUDIT_SESSION = 4294967295


def read_status() -> bytes:
    return _read("/proc/self/status")


def read_proc(path: str) -> str:
    return _read(path).decode("ascii", "replace")


def start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot, field 22 of its stat), None if it is gone."""
    fields = _read(f"/proc/{pid}/stat").rpartition(b")")[2].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def _package_signature() -> bytes:
    """safe-run's own files and when each last changed: an edited or upgraded safe-run is another one."""
    stamps = []
    pending = [PACKAGE]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    pending.append(entry.path)
                elif entry.name.endswith((".py", ".bash", ".zsh", ".fish", ".sh")):
                    stamps.append(f"{entry.path} {entry.stat().st_mtime_ns}")
    return os.fsencode("\n".join(sorted(stamps)))


def _mtime(path: str) -> int:
    """When packages were last added to or removed from a directory of installed packages (0 for
    any other entry: the caller's own directory, first on the path of `python -m`, changes all the time)."""
    if os.path.basename(path) not in ("site-packages", "dist-packages"):
        return 0
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _read(path: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b"-"
    try:
        return os.read(fd, 1 << 16)
    except OSError:
        return b"-"
    finally:
        os.close(fd)


def _readlink(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "-"

"""Both ways of starting the shell leave it in the state of a fresh terminal window's shell.

`spawn` uses the C library's posix_spawn where it can and forks elsewhere; each way is run here,
on a real terminal, and the started program reports its own state from /proc: a session of its
own with the terminal as its controlling one, every signal at its default and none blocked (the C
library's internal ones too), only descriptors 0-2, and the directory asked for.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from safe_run.engine import libc_spawn, spawn

BOUND_S = 10.0
REPORT = (
    "grep -E '^Sig(Ign|Blk)' /proc/self/status; cut -d' ' -f6,7 /proc/self/stat; "
    "ls /proc/self/fd | tr '\\n' ' '; echo; pwd; echo done"
)


@pytest.fixture(params=["posix_spawn", "fork"])
def way(request: pytest.FixtureRequest) -> bool:
    """Whether the C library's posix_spawn starts the program (else a fork and exec)."""
    if request.param == "posix_spawn" and not libc_spawn.available():
        pytest.skip("this C library has no posix_spawn that can start the shell")
    return bool(request.param == "posix_spawn")


def read_all(fd: int, pid: int) -> str:
    """What the program wrote to its terminal, until it exits (bounded)."""
    out = b""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    return out.decode().replace("\r\n", "\n")


def test_the_started_program_is_in_a_fresh_terminals_state(way: bool, tmp_path: Path) -> None:
    previous = signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # what this process ignores is not passed on
    try:
        started = spawn.spawn(["sh", "-c", REPORT], dict(os.environ), str(tmp_path), 24, 80, posix_spawn=way)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    try:
        lines = read_all(started.master_fd, started.pid).splitlines()
    finally:
        os.close(started.master_fd)
    assert lines[-1] == "done", lines
    blocked, ignored, ids, fds, cwd = lines[:5]
    assert ignored.split() == ["SigIgn:", "0000000000000000"]
    assert blocked.split() == ["SigBlk:", "0000000000000000"]
    session, terminal = ids.split()
    assert int(session) == started.pid and int(terminal) != 0  # its own session, with a controlling terminal
    assert fds.split() == ["0", "1", "2", "3"]  # 3: the directory ls itself reads
    assert cwd == str(tmp_path)


@pytest.mark.parametrize(
    ("argv", "where", "message"),
    [
        (["sh"], "missing", "cannot enter {where}: no such file or directory"),
        (["{where}/not-a-program"], ".", "cannot run {where}/not-a-program: exec format error"),
    ],
)
def test_a_failed_start_says_which_step_failed(way: bool, tmp_path: Path, argv: list[str], where: str, message: str) -> None:
    place = tmp_path / where
    program = tmp_path / "not-a-program"
    program.write_bytes(b"\x7fELF not really")
    program.chmod(0o755)
    words = [word.format(where=tmp_path) for word in argv]
    with pytest.raises(spawn.SpawnError) as raised:
        spawn.spawn(words, dict(os.environ), str(place), 24, 80, posix_spawn=way)
    assert str(raised.value) == message.format(where=place if where == "missing" else tmp_path)

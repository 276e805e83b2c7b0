"""A named shell left alone is kept by its holder process alone, and a worker it forks serves the
next call from where the last one left off (`processes.keeper`): real shells, through the CLI.

The test of shells waits for a hand-over, which comes once a shell has been left alone for
HIBERNATE_AFTER_S: it is slow, and starts first.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from conftest import SHELLS, SafeRun, alive, children_of, workers_of
from safe_run.engine.exits import collected_status, kept_by_kernel
from safe_run.processes import keeper
from safe_run.session.hibernation import HIBERNATE_AFTER_S, frozen, thawed
from test_persistent import Shells, _session_metas, gone_within, shells  # noqa: F401 - a fixture

needs_keeper = pytest.mark.skipif(not keeper.possible(), reason="the kernel does not tell a pidfd's status (Linux < 6.15)")
# How long past HIBERNATE_AFTER_S a hand-over may take on a loaded machine.
HAND_OVER_BOUND_S = 30.0


def holder_of(safe_run: SafeRun, name: str) -> int:
    """The holder pid `sessions` knows the named shell by (its own session's, not a command's),
    of the shell that runs under that name now."""
    metas = [m for m in _session_metas(safe_run)
             if m.get("shell_name") == name and "shell_id" not in m and alive(m.get("holder_pid", 0))]
    assert len(metas) == 1, metas
    pid: int = metas[0]["holder_pid"]
    return pid


def kept_alone(holder: int) -> None:
    """Wait until the holder keeps its shell with no worker (bounded)."""
    deadline = time.monotonic() + HIBERNATE_AFTER_S + HAND_OVER_BOUND_S
    while workers_of(holder) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(holder) and not workers_of(holder), "the shell was never handed over"


@needs_keeper
@pytest.mark.slow
@pytest.mark.long
def test_shells_left_alone_go_on_where_they_were_and_end_as_ever(shells: Shells, tmp_path: Path) -> None:
    """One wait for the hand-over, for every shell at once: each goes on with its directory,
    variables and job, and closes with its job listed; a stop signal to a holder that keeps its
    shell ends it, and the name's next call starts a new one."""
    (tmp_path / "sub").mkdir()
    names = [name for name in SHELLS if shutil.which(name)]
    for name in names:
        keep = "set -g v kept" if name == "fish" else "v=kept"
        started = shells.result(name, f"cd {tmp_path / 'sub'}; {keep}; sleep 300 &", shell=name)
        assert started["status"] == "completed", started
    assert shells.result("stopped", "true")["status"] == "completed"
    holders = {name: holder_of(shells.safe_run, name) for name in [*names, "stopped"]}
    for holder in holders.values():
        kept_alone(holder)

    for name in names:
        holder = holders[name]
        shell = [pid for pid in children_of(holder) if pid not in workers_of(holder)]
        assert len(shell) == 1  # the shell is the holder's own child now
        later = shells.result(name, "echo $v; pwd", shell=name)
        assert later["status"] == "completed", later
        assert later["output"].split() == ["kept", str(tmp_path / "sub")]
        assert holder_of(shells.safe_run, name) == holder
        closed = shells.close(name)
        assert closed.returncode == 0, closed.stderr
        assert [k["command"] for k in closed.json["killed"]] == ["sleep"]
        assert gone_within(holder, 10) and gone_within(shell[0], 10)

    holder = holders["stopped"]
    shell = children_of(holder)
    os.kill(holder, signal.SIGTERM)
    assert gone_within(holder, 10) and all(gone_within(pid, 10) for pid in shell)
    again = shells.result("stopped", "echo again")
    assert again["status"] == "completed" and again["output"] == "again\n"
    assert holder_of(shells.safe_run, "stopped") != holder


def test_a_kernel_tells_a_pidfds_status_from_6_15_on() -> None:
    assert not kept_by_kernel("6.14.11-300.fc42.x86_64")
    assert kept_by_kernel("6.15.0")
    assert kept_by_kernel("7.0.1-arch1-1")
    assert not kept_by_kernel("unknown")


@needs_keeper
def test_a_childs_status_is_told_to_a_pidfd_once_collected(tmp_path: Path) -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(7)
    pidfd = os.pidfd_open(pid)
    try:
        os.waitpid(pid, 0)
        status = collected_status(pidfd)
        assert status is not None and os.waitstatus_to_exitcode(status) == 7
    finally:
        os.close(pidfd)


def test_a_socket_named_twice_is_one_socket_again_around_its_descriptor() -> None:
    import socket

    ours, theirs = socket.socketpair()
    try:
        first, second = thawed(frozen((ours, [ours])))
        assert first is second[0] and first.fileno() == ours.fileno()
        first.detach()  # the same descriptor as `ours`: closed once, below
    finally:
        ours.close()
        theirs.close()

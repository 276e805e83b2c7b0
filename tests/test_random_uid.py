"""A random uid with HOME=/ and no passwd entry, as OpenShift and many pods run a container."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from throwaway_user import Unavailable, interpreter

UID = 12345 + os.getpid() % 1000


@pytest.fixture
def shared_tmp() -> Iterator[Path]:
    """A TMPDIR the random uid can write to, as /tmp is in a container."""
    path = Path(tempfile.mkdtemp(prefix="safe-run-uid-"))
    path.chmod(0o1777)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def as_random_uid(args: list[str], tmp: Path) -> subprocess.CompletedProcess[bytes]:
    def become() -> None:
        os.setgroups([])
        os.setgid(UID)
        os.setuid(UID)

    try:
        python, extra = interpreter()
    except Unavailable as why:
        pytest.skip(str(why))
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/", "TMPDIR": str(tmp), "LANG": "C.UTF-8",
           "SAFE_RUN_WARM": "0", **extra}
    return subprocess.run([python, "-m", "safe_run", *args], env=env, cwd="/", preexec_fn=become,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take another uid")
def test_a_random_uid_with_home_slash_runs_in_a_session_and_in_the_foreground(shared_tmp: Path) -> None:
    for options in ([], ["--wait"]):
        done = as_random_uid(["--format", "json", *options, "--", "echo hi; id -u"], shared_tmp)
        result = json.loads(done.stdout)
        assert (result["status"], result["output"]) == ("completed", f"hi\n{UID}\n"), done.stderr
    store = shared_tmp / f"safe-run-{UID}"
    assert store.is_dir() and store.stat().st_uid == UID and store.stat().st_mode & 0o777 == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take another uid")
def test_a_store_name_another_user_made_first_leaves_the_user_its_sessions(shared_tmp: Path) -> None:
    squatted = shared_tmp / f"safe-run-{UID}"
    squatted.mkdir(mode=0o755)  # made by root, before the user's first call: /tmp is everyone's
    done = as_random_uid(["--format", "json", "--", "echo hi"], shared_tmp)
    assert json.loads(done.stdout)["status"] == "completed", done.stderr
    instead = shared_tmp / f"safe-run-{UID}.1"
    assert f"{squatted} belongs to another user; this user's sessions are kept in {instead} instead" in (
        done.stderr.decode())
    assert instead.stat().st_uid == UID and instead.stat().st_mode & 0o777 == 0o700
    again = as_random_uid(["--format", "json", "--", "echo again"], shared_tmp)
    assert json.loads(again.stdout)["status"] == "completed"
    assert b"belongs to another user" not in again.stderr, "said once, when the place is made"

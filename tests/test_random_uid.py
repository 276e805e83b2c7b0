"""A random uid with HOME=/ and no passwd entry, as OpenShift and many pods run a container."""

from __future__ import annotations

import json
import os
import shutil
import socket
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


def as_random_uid(args: list[str], tmp: Path, **extra_env: str) -> subprocess.CompletedProcess[bytes]:
    def become() -> None:
        os.setgroups([])
        os.setgid(UID)
        os.setuid(UID)

    try:
        python, extra = interpreter()
    except Unavailable as why:
        pytest.skip(str(why))
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": "/", "TMPDIR": str(tmp), "LANG": "C.UTF-8",
           "SAFE_RUN_WARM": "0", **extra, **extra_env}
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


def squat_every_name(tmp: Path) -> list[Path]:
    """What another user can do in a /tmp that everyone writes in: take each name the store had."""
    squatted = [tmp / f"safe-run-{UID}{suffix}" for suffix in ["", *(f".{n}" for n in range(1, 10))]]
    for n, path in enumerate(squatted):
        path.mkdir(mode=0o755 if n % 2 else 0o700)  # root's: readable by others or not, never the user's
    return squatted


def theirs_instead(tmp: Path, squatted: list[Path]) -> list[Path]:
    return sorted(set(tmp.glob(f"safe-run-{UID}*")) - set(squatted))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take another uid")
def test_every_store_name_taken_by_another_user_leaves_the_user_runs_and_sessions(shared_tmp: Path) -> None:
    squatted = squat_every_name(shared_tmp)
    for one_shot in (["--timeout", "30"], ["--format", "pretty"], ["--wait"], ["--wait"]):
        # Warm calls on: the second of a context would start a warm process, which lives in the store.
        done = as_random_uid([*one_shot, "--", "echo one-shot"], shared_tmp, SAFE_RUN_WARM="1")
        assert done.returncode == 0 and b"one-shot" in done.stdout and b"safe-run:" not in done.stderr, done.stderr
    assert theirs_instead(shared_tmp, squatted) == [], "a run that keeps no session makes no place for one"

    done = as_random_uid(["--format", "json", "--", "echo hi"], shared_tmp)  # the default bound: a session
    assert json.loads(done.stdout)["status"] == "completed", done.stderr
    [instead] = theirs_instead(shared_tmp, squatted)
    assert instead.stat().st_uid == UID and instead.stat().st_mode & 0o777 == 0o700
    assert f"{squatted[0]} belongs to another user; this user's sessions are kept in {instead} instead" in (
        done.stderr.decode())

    waiting = as_random_uid(["--yield-after", "30", "--", "read x; echo got $x"], shared_tmp)
    started = json.loads(waiting.stdout)
    assert (started["status"], waiting.stderr) == ("input_required", b""), "said once, when the place is made"
    assert (instead / started["session_id"]).is_dir()
    answered = as_random_uid(["send", started["session_id"], "hello", "--wait", "30"], shared_tmp)
    assert json.loads(answered.stdout)["output"].endswith("got hello\n"), answered.stderr
    assert theirs_instead(shared_tmp, squatted) == [instead], "every later call finds the same place"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take another uid")
def test_an_xdg_runtime_dir_the_user_cannot_enter_is_one_line_for_a_session_and_nothing_for_a_run(
    shared_tmp: Path,
) -> None:
    """su keeps the caller's XDG_RUNTIME_DIR, which the new user may not enter."""
    runtime = shared_tmp / "runtime"
    runtime.mkdir(mode=0o700)  # root's
    done = as_random_uid(["--timeout", "30", "--", "echo one-shot"], shared_tmp, XDG_RUNTIME_DIR=str(runtime))
    assert json.loads(done.stdout)["status"] == "completed", done.stderr
    expected = (f"XDG_RUNTIME_DIR is {runtime}, a directory this user cannot enter or write in, so no session can "
                "be kept there; unset it, or set it to this user's own runtime directory")
    for call in (["--", "echo in a session"], ["--in", "dev", "--", "echo hi"], ["poll", "0" * 24], ["sessions"]):
        refused = as_random_uid(call, shared_tmp, XDG_RUNTIME_DIR=str(runtime))
        assert refused.returncode == 125, refused.stderr
        assert refused.stderr.decode() == f"safe-run: {expected}\n"
        assert json.loads(refused.stdout)["message"] == expected


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can take another uid")
def test_a_warm_call_is_never_handed_to_a_process_of_another_user(shared_tmp: Path) -> None:
    """Whatever path the socket has (another user can make the place first in a shared TMPDIR,
    and listen where the call looks), its listener must be of the caller's uid: the call carries
    the caller's environment and descriptors."""
    from safe_run.warm.client import _served_by_us

    try:
        python, _ = interpreter()
    except Unavailable as why:
        pytest.skip(str(why))
    path = shared_tmp / "listening"
    listener = subprocess.Popen(
        [python, "-c", "import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); "
         "s.listen(); print('up', flush=True); time.sleep(60)", str(path)],
        stdout=subprocess.PIPE, preexec_fn=lambda: (os.setgroups([]), os.setgid(UID), os.setuid(UID)),
    )
    try:
        assert listener.stdout is not None and listener.stdout.readline() == b"up\n"
        with socket.socket(socket.AF_UNIX) as theirs:
            theirs.connect(str(path))
            assert not _served_by_us(theirs)
        with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as ours:
            server.bind(str(shared_tmp / "ours"))
            server.listen()
            ours.connect(str(shared_tmp / "ours"))
            assert _served_by_us(ours)
    finally:
        listener.kill()
        listener.wait()

"""Bad input and faults, through the command line as a caller meets them.

Every case answers with an exact status, exit status and one line on stderr, and leaves nothing:
no private directory in the test's TMPDIR, no process carrying the test's marker in its
environment. Inputs are refused before anything runs (a refused call creates no file either);
faults during a run (a full disk under --log, a stdout that goes away, a stop signal) keep the
result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import SafeRun
from safe_run.core.tracker import NO_KERNEL_VIEW

MARKER = "SAFE_RUN_TEST_MARK"


@dataclass
class Call:
    returncode: int
    stdout: bytes
    stderr: str

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)

    @property
    def line(self) -> str:
        """The one line safe-run printed on stderr."""
        lines = self.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("safe-run: "), self.stderr
        assert "Traceback" not in self.stderr
        return lines[0]


@pytest.fixture
def caller(safe_run: SafeRun) -> Iterator[Caller]:
    caller = Caller(safe_run)
    yield caller
    assert caller.marked_processes() == [], "a process of this test is still running"
    assert safe_run.leftovers() == [], "a private directory was left in TMPDIR"


class Caller:
    """Runs safe-run with arguments that may be bytes, and any stdin, stdout or working directory."""

    def __init__(self, safe_run: SafeRun) -> None:
        self.safe_run = safe_run
        self.mark = uuid.uuid4().hex

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return self.safe_run.environment({MARKER: self.mark, **(extra or {})})

    def argv(self, *args: str | bytes) -> list[str | bytes]:
        return [sys.executable, "-m", "safe_run", *args]

    def __call__(self, *args: str | bytes, env: dict[str, str] | None = None, timeout: float = 30,
                 **popen: object) -> Call:
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("stdout", subprocess.PIPE)
        proc = subprocess.run(self.argv(*args), stderr=subprocess.PIPE, env=self.env(env), timeout=timeout,
                              **popen)  # type: ignore[call-overload]
        return Call(proc.returncode, proc.stdout or b"", proc.stderr.decode("utf-8", "replace"))

    def marked_processes(self) -> list[int]:
        found = []
        needle = f"{MARKER}={self.mark}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        return found


def assert_usage_error(call: Call, message: str) -> None:
    assert call.returncode == 2
    assert call.line == f"safe-run: {message} (try 'safe-run --help')"
    answer = call.json
    assert answer["status"] == "error" and answer["command"] is None and answer["message"] == message


# ---- 1. inputs are checked before anything runs ----------------------------------------------

RUN_SECONDS = ["--timeout", "--idle", "--activation-timeout", "--silence-timeout", "--no-output-timeout",
               "--yield-after"]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e400"])
@pytest.mark.parametrize("option", RUN_SECONDS)
def test_every_number_of_seconds_is_finite(caller: Caller, tmp_path: Path, option: str, value: str) -> None:
    made = tmp_path / "made"
    call = caller(option, value, "--", f"touch {made}")
    assert_usage_error(call, f"Invalid value for '{option}': {value!r} is not a finite number of seconds")
    assert not made.exists()


@pytest.mark.parametrize("verb", [["poll", "0" * 24], ["send", "0" * 24, "text"]])
def test_the_session_verbs_wait_a_finite_time(caller: Caller, verb: list[str]) -> None:
    call = caller(*verb, "--wait", "nan")
    assert call.returncode == 2
    assert call.line == (
        f"safe-run: Invalid value for '--wait': 'nan' is not a finite number of seconds (try 'safe-run {verb[0]} --help')"
    )


def test_a_timeout_of_zero_is_no_limit(caller: Caller) -> None:
    call = caller("--timeout", "0", "--", "sleep 0.2; echo still here")
    assert call.returncode == 0
    assert call.json["status"] == "completed" and call.json["output"] == "still here\n"


def test_a_fifo_without_a_writer_is_refused_at_once(caller: Caller, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    call = caller("--command-file", str(fifo), timeout=20)
    assert_usage_error(
        call,
        f"Invalid value for --command-file: {fifo} is a FIFO, not a regular file "
        "(use --command-file - for a pipe on stdin)",
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/dev/zero", "Invalid value for --command-file: /dev/zero is a device, not a regular file"),
        ("/", "Invalid value for '--command-file': File '/' is a directory."),
    ],
)
def test_the_command_file_must_be_a_regular_file(caller: Caller, path: str, message: str) -> None:
    assert_usage_error(caller("--command-file", path), message)


def test_a_command_read_from_stdin_is_bounded(caller: Caller) -> None:
    with open("/dev/zero", "rb") as zero:
        call = caller("--command-file", "-", stdin=zero)
    assert_usage_error(
        call,
        "Invalid value for --command-file: standard input holds more than 1048576 bytes, the most a command may have",
    )


def test_a_command_read_from_a_closed_stdin(caller: Caller) -> None:
    call = caller("--command-file", "-", stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert_usage_error(call, "Invalid value for --command-file: standard input is closed: there is no command to read")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/no/such/dir/log", "Invalid value for --log: cannot write /no/such/dir/log: No such file or directory"),
        ("/dev/full", "Invalid value for --log: /dev/full is a device, not a regular file"),
        # Root is refused by the file itself, anyone else by its mode.
        ("/proc/version", "Invalid value for --log: cannot write /proc/version: "
                          + ("Input/output error" if os.geteuid() == 0 else "Permission denied")),
        ("-", "Invalid value for --log: the transcript needs a file: standard output holds the result"),
    ],
)
def test_the_log_must_be_a_writable_regular_file(caller: Caller, tmp_path: Path, path: str, message: str) -> None:
    made = tmp_path / "made"
    assert_usage_error(caller("--log", path, "--", f"touch {made}"), message)
    assert not made.exists()


def test_a_log_fifo_without_a_reader_is_refused_at_once(caller: Caller, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    call = caller("--log", str(fifo), "--", "true", timeout=20)
    assert_usage_error(call, f"Invalid value for --log: {fifo} is a FIFO, not a regular file")


def test_the_log_is_created_private(caller: Caller, tmp_path: Path) -> None:
    log = tmp_path / "transcript"
    call = caller("--log", str(log), "--", "echo logged", preexec_fn=lambda: os.umask(0o022))
    assert call.returncode == 0 and call.json["output"] == "logged\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    assert b"logged" in log.read_bytes()


# Another user's, for files a test makes as root and then gives away (no such account is needed).
OTHER_UID = 54321


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a file or a link another user owns")
@pytest.mark.parametrize("theirs", ["link", "file"])
def test_the_log_is_never_what_another_user_put_at_its_name(caller: Caller, tmp_path: Path, theirs: str) -> None:
    """In a shared /tmp another user can be first at the name: with a link to a file of ours, or a
    file of theirs that everyone may write and that would get the transcript."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    ours = tmp_path / "ours"
    ours.write_text("keep me\n")
    log = shared / "build.log"
    if theirs == "link":
        log.symlink_to(ours)
        os.lchown(log, OTHER_UID, OTHER_UID)
        message = f"Invalid value for --log: {log} is a symbolic link of another user's; the transcript never follows one"
    else:
        log.write_text("theirs\n")
        log.chmod(0o666)
        os.chown(log, OTHER_UID, OTHER_UID)
        message = (f"Invalid value for --log: {log} belongs to another user; "
                   "the transcript is written only to a file of this user's")
    made = tmp_path / "made"
    assert_usage_error(caller("--log", str(log), "--", f"touch {made}"), message)
    assert not made.exists() and ours.read_text() == "keep me\n"
    assert log.read_text() == ("keep me\n" if theirs == "link" else "theirs\n")


def test_a_log_with_another_name_is_refused(caller: Caller, tmp_path: Path) -> None:
    """A hard link another user made to a file of ours (where the kernel lets them) looks like ours."""
    ours = tmp_path / "ours"
    ours.write_text("keep me\n")
    log = tmp_path / "build.log"
    os.link(ours, log)
    message = (f"Invalid value for --log: {log} has other names (hard links); "
               "the transcript is written only to a file with one name")
    assert_usage_error(caller("--log", str(log), "--", "true"), message)
    assert ours.read_text() == "keep me\n"


def test_an_existing_log_of_ours_is_emptied_and_made_private(caller: Caller, tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text("an older transcript\n")
    log.chmod(0o664)
    through = tmp_path / "link"
    through.symlink_to(log.name)  # ours: followed
    call = caller("--log", str(through), "--", "echo logged")
    assert call.returncode == 0 and call.json["output"] == "logged\n"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and through.is_symlink()
    assert b"logged" in log.read_bytes() and b"older" not in log.read_bytes()


def test_a_log_link_of_ours_to_nothing_is_refused_saying_so(caller: Caller, tmp_path: Path) -> None:
    through = tmp_path / "link"
    through.symlink_to(tmp_path / "missing")
    message = (f"Invalid value for --log: {through} is a symbolic link to {tmp_path / 'missing'}, which does not "
               "exist; the transcript is made only under its own name")
    assert_usage_error(caller("--log", str(through), "--", "true"), message)
    assert not (tmp_path / "missing").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can make a file another user owns")
def test_a_log_link_of_ours_to_another_users_file_names_that_file(caller: Caller, tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.write_text("theirs\n")
    os.chown(theirs, OTHER_UID, OTHER_UID)
    through = tmp_path / "link"
    through.symlink_to(theirs)
    message = (f"Invalid value for --log: {theirs} belongs to another user; "
               "the transcript is written only to a file of this user's")
    assert_usage_error(caller("--log", str(through), "--", "true"), message)
    assert theirs.read_text() == "theirs\n"


def test_what_may_get_the_transcript() -> None:
    from safe_run.cli.commands.params import log_refusal

    def found(mode: int, uid: int = 1000, links: int = 1) -> os.stat_result:
        return os.stat_result((mode, 0, 0, links, uid, uid, 0, 0, 0, 0))

    assert log_refusal("f", found(stat.S_IFREG | 0o644), 1000) is None
    assert "another user" in str(log_refusal("f", found(stat.S_IFREG | 0o600, uid=0), 1000))
    assert "other names" in str(log_refusal("f", found(stat.S_IFREG | 0o600, links=2), 1000))
    assert "a FIFO, not a regular file" in str(log_refusal("f", found(stat.S_IFIFO | 0o600), 1000))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([b"--env", b"NAME=\xff", b"true"], "argument 2 is not valid UTF-8: NAME=\\xff"),
        ([b"--cwd", b"/tmp/\xfe", b"true"], "argument 2 is not valid UTF-8: /tmp/\\xfe"),
        ([b"--", b"echo \xff"], "argument 2 is not valid UTF-8: echo \\xff"),
        ([b"send", b"0" * 24, b"\xff"], "argument 3 is not valid UTF-8: \\xff"),
    ],
)
def test_arguments_that_are_not_utf8(caller: Caller, args: list[bytes], message: str) -> None:
    assert_usage_error(caller(*args), message)


def test_a_current_directory_whose_name_is_not_utf8(caller: Caller, tmp_path: Path) -> None:
    odd = os.path.join(os.fsencode(tmp_path), b"odd\xff")
    os.mkdir(odd)
    call = caller("--", "pwd", cwd=odd)
    position = len(odd) - 1
    assert_usage_error(call, f"the name of the current directory is not valid UTF-8 (byte {position})")


def test_a_current_directory_that_was_removed(caller: Caller, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    call = caller("--", "pwd", cwd=gone, preexec_fn=lambda: os.rmdir(gone))
    assert_usage_error(call, "the current directory no longer exists; give --cwd DIR")


@pytest.mark.parametrize("output_format", ["json", "jsonl"])
@pytest.mark.parametrize("env", [{"LC_ALL": "C", "PYTHONUTF8": "0"}, {"PYTHONIOENCODING": "ascii"}])
def test_non_ascii_under_an_ascii_locale(caller: Caller, env: dict[str, str], output_format: str) -> None:
    call = caller("--format", output_format, "--", "echo hé", env=env)
    assert call.returncode == 0 and call.stderr == ""
    last = json.loads(call.stdout.splitlines()[-1])
    result = last["result"] if output_format == "jsonl" else last
    assert result["status"] == "completed" and result["output"] == "hé\n" and result["command"] == "echo hé"


# ---- 2. faults during a run keep the result --------------------------------------------------

class FullAfter:
    """A file that takes `room` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()

    def write(self, data: bytes | memoryview) -> int:
        if self.room == 0:
            raise OSError(28, "No space left on device")
        taken = bytes(data[: self.room])
        self.data += taken
        self.room -= len(taken)
        return len(taken)

    def fileno(self) -> int:
        raise OSError("not a real file")


def test_a_log_that_fills_up_is_reported_and_the_run_goes_on(safe_run: SafeRun, monkeypatch) -> None:
    from safe_run.core.request import RunRequest
    from safe_run.engine.runner import execute

    for name, value in safe_run.environment().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr("tempfile.tempdir", str(safe_run.tmpdir))  # Python caches the first TMPDIR it saw
    log = FullAfter(100)
    result = execute(RunRequest(command="seq 1 2000", shell="/bin/bash", log=log))  # type: ignore[arg-type]
    assert result.status.value == "completed" and result.exit_code == 0
    assert result.output == "".join(f"{n}\n" for n in range(1, 2001))
    assert result.message == (
        "the --log transcript stops after 100 bytes: No space left on device; "
        "the command ran on and this result is complete"
    )
    assert len(log.data) == 100
    assert safe_run.leftovers() == []


def private_mount(script: str) -> list[str]:
    """`script` in a mount namespace of its own, where it may mount a small tmpfs; skip where not allowed."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) to mount a tmpfs in a private mount namespace")
    probe = subprocess.run([unshare, "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare -m is not allowed here: {probe.stderr.decode().strip()}")
    return [unshare, "-m", "sh", "-ec", script]


def test_a_disk_that_fills_under_the_log_keeps_the_result(caller: Caller, tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    argv = " ".join(f"'{a}'" for a in caller.argv("--shell", "/bin/bash", "--log", f"{mount}/transcript", "--",
                                                      "seq 1 30000; echo done"))
    script = f"mount -t tmpfs -o size=64k tmpfs {mount}; exec {argv}"
    proc = subprocess.run(private_mount(script), stdin=subprocess.DEVNULL, capture_output=True, env=caller.env(),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "completed" and result["exit_code"] == 0
    assert result["output"].endswith("29999\n30000\ndone\n")
    assert re.fullmatch(
        r"the --log transcript stops after \d+ bytes: No space left on device; "
        r"the command ran on and this result is complete",
        result["message"],
    )


def test_a_full_tmpdir_is_one_line(caller: Caller, tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    argv = " ".join(f"'{a}'" for a in caller.argv("--shell", "/bin/bash", "--", "true"))
    script = (f"mount -t tmpfs -o size=12k tmpfs {mount}; head -c 6000 /dev/zero > {mount}/fill; "
              f"status=0; TMPDIR={mount} {argv} || status=$?; echo \"status $status\" >&2; ls -A {mount} >&2")
    proc = subprocess.run(private_mount(script), stdin=subprocess.DEVNULL, capture_output=True, env=caller.env(),
                          timeout=60)
    message = f"cannot prepare the run in {mount}: No space left on device"
    assert proc.stderr.decode().splitlines() == [f"safe-run: {message}", "status 125", "fill"]
    result = json.loads(proc.stdout)
    assert result["status"] == "error" and result["message"] == message and result["command"] == "true"


def test_a_closed_stdout_runs_nothing(caller: Caller, tmp_path: Path) -> None:
    made = tmp_path / "made"
    call = caller("--", f"touch {made}", stdout=subprocess.DEVNULL, preexec_fn=lambda: os.close(1))
    assert call.returncode == 141
    assert call.line == "safe-run: standard output is closed: there is nowhere to write the answer; nothing ran"
    assert not made.exists()


def test_a_stdout_whose_reader_went_away_loses_only_the_answer(caller: Caller, tmp_path: Path) -> None:
    made = tmp_path / "made"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        call = caller("--", f"touch {made}", stdout=write_end)
    finally:
        os.close(write_end)
    assert call.returncode == 141
    assert call.line == "safe-run: the reader of standard output went away; the answer was lost: completed, exit code 0"
    assert made.exists()


def test_an_unbuffered_stdout_whose_reader_goes_away_mid_answer_says_so(caller: Caller) -> None:
    """PYTHONUNBUFFERED makes stdout a raw file: a write its reader cut short takes part of the
    answer and raises nothing, and the rest must still fail rather than vanish with status 0."""
    proc = subprocess.Popen(caller.argv("--", "head -c 300000 /dev/zero | tr '\\0' x"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=caller.env({"PYTHONUNBUFFERED": "1"}))
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.read(1) == b"{"  # the answer, far longer than the pipe holds, is being written
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=30) == 141
    assert err == "safe-run: the reader of standard output went away; the answer was lost: completed, exit code 0\n"


def reading_stdin(pid: int, bound: float = 20.0) -> None:
    """Wait until `pid` sits in read(0, ...): past start-up, before any command could start."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        try:
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
        except OSError:
            fields = []
        if fields[:2] == ["0", "0x0"]:
            return
        time.sleep(0.01)
    pytest.fail("safe-run never read its stdin")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_before_the_command_started_is_answered(caller: Caller, signum: signal.Signals) -> None:
    read_end, write_end = os.pipe()
    proc = subprocess.Popen(caller.argv("--command-file", "-"), stdin=read_end, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=caller.env())
    os.close(read_end)
    try:
        reading_stdin(proc.pid)
        proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=20)
    finally:
        os.close(write_end)
        proc.kill()
    message = f"safe-run was interrupted by {signum.name} before the command started; nothing ran"
    assert proc.returncode == 128 + signum
    assert stderr.decode() == f"safe-run: {message}\n"
    result = json.loads(stdout)
    assert result["status"] == "interrupted" and result["signal"] == signum.name and result["message"] == message


def test_a_signal_during_the_run_stops_the_command_and_answers(caller: Caller, tmp_path: Path) -> None:
    started = tmp_path / "started"
    proc = subprocess.Popen(caller.argv("--", f"touch {started}; sleep 30"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=caller.env())
    try:
        deadline = time.monotonic() + 20
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    result = json.loads(stdout)
    assert proc.returncode == 143
    assert result["status"] == "interrupted" and result["signal"] == "SIGTERM" and result["completion_reason"] == "interrupted"


# ---- 3. the error funnel ---------------------------------------------------------------------

def test_an_internal_error_asks_to_be_reported(monkeypatch, capsys) -> None:
    from safe_run.cli import main as cli
    from safe_run.engine import runner

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.delenv("SAFE_RUN_DEBUG", raising=False)
    monkeypatch.setenv("SAFE_RUN_YIELD_AFTER", "never")
    monkeypatch.setattr(runner, "execute", broken)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        with pytest.raises(SystemExit) as exited:
            cli.main(["--format", "json", "--", "true"])
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert exited.value.code == 125
    message = ("internal error: RuntimeError: boom (a bug in safe-run: please report it, with the traceback "
               "SAFE_RUN_DEBUG=1 prints)")
    captured = capsys.readouterr()
    assert captured.err == f"safe-run: {message}\n"
    assert json.loads(captured.out)["message"] == message


def test_the_verbs_are_known_before_they_are_loaded() -> None:
    from safe_run.cli.verbs import VERBS
    from safe_run.cli.commands import cli

    assert tuple(cli.commands) == VERBS


def test_a_session_store_error_names_the_command(caller: Caller, tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    (runtime / "safe-run").mkdir(parents=True, mode=0o755)
    (runtime / "safe-run").chmod(0o755)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    message = f"{runtime}/safe-run is not a private directory of this user (mode 0700); refusing to keep sessions there"
    run = caller("--yield-after", "5", "--", "true", env=env)
    assert run.returncode == 125 and run.line == f"safe-run: {message}"
    assert run.json["command"] == "true" and run.json["message"] == message
    poll = caller("poll", "0" * 24, env=env)
    assert poll.returncode == 125 and poll.json["command"] is None and poll.json["message"] == message


def test_a_session_verb_without_its_id_points_to_its_own_help(caller: Caller) -> None:
    call = caller("poll")
    assert call.returncode == 2
    assert call.line == "safe-run: Missing argument 'ID'. (try 'safe-run poll --help')"


def test_stop_signals_end_safe_run_until_a_run_keeps_them() -> None:
    from safe_run.engine.interrupts import Interrupted, StopSignals

    signals = StopSignals()
    with pytest.raises(Interrupted) as raised:
        signals._handle(signal.SIGTERM, None)
    assert raised.value.name == "SIGTERM"
    signals.keep()
    signals._handle(signal.SIGINT, None)
    signals._handle(signal.SIGHUP, None)
    assert signals.wakeup.pending == [signal.SIGINT, signal.SIGHUP]


def test_a_run_in_this_process_leaves_it_as_it_was(monkeypatch, capsys) -> None:
    """The command line's own run adopts what its command detaches only while it runs: called in
    another program's process, it leaves that process no subreaper and its SIGCHLD handler as it was."""
    import ctypes

    from safe_run.cli import main as cli

    monkeypatch.setenv("SAFE_RUN_YIELD_AFTER", "never")
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)}
    try:
        with pytest.raises(SystemExit) as exited:
            cli.main(["--format", "json", "--", "(sleep 0.1 &); true"])
        assert signal.getsignal(signal.SIGCHLD) == handlers[signal.SIGCHLD]
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert exited.value.code == 0, capsys.readouterr()
    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    assert flag.value == 0


def test_without_proc_every_answer_and_doctor_say_what_is_missing(caller: Caller) -> None:
    """/proc hidden (a container's choice, or a system without it): the run still answers, and says
    that input waits are judged from the screen and timers alone; doctor says it once, as a note
    that is no shell's problem."""
    run = " ".join(f"'{a}'" for a in caller.argv("--shell", "/bin/bash", "--format", "json", "--", "echo hi"))
    doctor = " ".join(f"'{a}'" for a in caller.argv("doctor", "--shell", "/bin/bash", "--format", "json"))
    script = f"mount -t tmpfs none /proc; {run}; {doctor}"
    proc = subprocess.run(private_mount(script), stdin=subprocess.DEVNULL, capture_output=True, env=caller.env(),
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    answer, report = (json.loads(line) for line in proc.stdout.decode().splitlines())
    assert (answer["status"], answer["exit_code"], answer["output"]) == ("completed", 0, "hi\n")
    assert [(d["from"], d["to"], d["reason"]) for d in answer["downgrades"]] == [("rich", "rich", NO_KERNEL_VIEW)]
    assert (report["ok"], report["kernel_view"], report["notes"]) == (True, False, [NO_KERNEL_VIEW])
    assert report["shells"][0]["integration"] and report["shells"][0]["problem"] is None

"""The command line run in a fork of a process that has already imported safe-run (unless --real-cli).

Most tests call `safe-run`; a new Python and its imports cost ~0.2 s of CPU each time, which on a
2-core machine would be most of the suite's time. So each call instead forks a "zygote" started
once per test process (in UTF-8 mode, safe-run imported, nothing run): the child gets the call's argv, environment, directory and stdio, resets its signal
dispositions to those Python starts with, and runs `cli.main()` as the real program does; the
session holders it starts are forked from it too, rather than started as a new interpreter. A call
that depends on how Python itself starts (its locale or I/O encoding variables) still gets a real
subprocess. `--real-cli` starts every call as the installed program starts: CI runs the suite
once that way too, as an ordinary user.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Whether calls fork the zygote: not with --real-cli (set by conftest).
ENABLED = True
LAUNCHER = Path(__file__).with_name("fastcli_launch.py")
ZYGOTE_VARIABLE = "SAFE_RUN_TEST_ZYGOTE"
# Variables that change how Python starts: such calls get a real interpreter.
STARTUP_VARIABLES = ("PYTHONIOENCODING", "PYTHONUTF8", "LC_ALL", "LC_CTYPE", "PYTHONWARNINGS", "PYTHONPATH")

ZYGOTE = r'''
import io, json, os, select, signal, socket, sys
import safe_run.cli.main, safe_run.cli.commands.run, safe_run.cli.commands.sessions, safe_run.engine.runner, safe_run.session.client
import safe_run.session.holder, safe_run.session.launch, safe_run.core.render, safe_run.display, safe_run.process_title
import safe_run.core.emulator, safe_run.cli.commands.doctor, safe_run.doctor.run, safe_run.session.adoption
import safe_run.display.yielding, rich.console, rich.table, rich.text, concurrent.futures
if sys.argv[2] == "mcp":  # the MCP server's SDK: its import is most of a server's start
    import safe_run.mcp.server, safe_run.mcp.http, mcp.server.stdio, uvicorn
import setproctitle
setproctitle.setproctitle("safe-run test zygote")  # takes over the argv area before argv changes

import ctypes
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: gone with the test process
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: holders outliving their call end here, as with a warm process
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1] + ".new")
listener.listen(64)
os.rename(sys.argv[1] + ".new", sys.argv[1])  # the path appears once it takes connections
wake_r, wake_w = os.pipe()
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *_: None)
waiting = {}

def child(conn, request, fds):
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, 65536)
        signal.set_wakeup_fd(-1)
        for signum in signal.valid_signals():
            try:
                signal.signal(signum, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGPIPE, signal.SIGXFSZ):
            signal.signal(signum, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        def stream(fd, mode, errors, lines):
            return io.TextIOWrapper(io.open(fd, mode, closefd=False), encoding="utf-8", errors=errors,
                                    line_buffering=lines)
        sys.stdin = sys.__stdin__ = stream(0, "rb", "surrogateescape", False)
        sys.stdout = sys.__stdout__ = stream(1, "wb", "surrogateescape", os.isatty(1))
        sys.stderr = sys.__stderr__ = stream(2, "wb", "backslashreplace", True)
        sys.argv = [os.path.join(os.path.dirname(safe_run.__file__), "__main__.py"), *request["argv"]]
        try:
            safe_run.cli.main.main()
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:
        import traceback
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code)

while True:
    ready, _, _ = select.select([listener, wake_r, *waiting.values()], [], [])
    if wake_r in ready:
        os.read(wake_r, 4096)
    for pid, conn in list(waiting.items()):
        if conn in ready and not conn.recv(1, socket.MSG_PEEK):  # its caller is gone: so is the child
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if listener in ready:
        conn, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        while message and not message.endswith(b"\n"):  # a long request comes in more than one piece
            more = conn.recv(1 << 20)
            if not more:
                break
            message += more
        request = json.loads(message)
        pid = os.fork()
        if pid == 0:
            child(conn, request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
        waiting[pid] = conn
    for pid, status in safe_run.session.adoption.ended_children():
        conn = waiting.pop(pid, None)
        if conn is not None:
            try:
                conn.sendall((json.dumps({"status": status}) + "\n").encode())
            except OSError:
                pass
            conn.close()
'''


class Zygote:
    """A pre-imported process of this test process, started on first use: `cli` for command-line
    calls, `mcp` (the SDK imported too, three times the memory to fork) for MCP servers."""

    def __init__(self, kind: str) -> None:
        self._dir = tempfile.mkdtemp(prefix="safe-run-zygote-")
        self.path = os.path.join(self._dir, "socket")
        self._process = subprocess.Popen(
            [sys.executable, "-X", "utf8", "-c", ZYGOTE, self.path, kind],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while not os.path.exists(self.path):
            if self._process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the test zygote did not start")
            time.sleep(0.01)

    def close(self) -> None:
        self._process.kill()
        self._process.wait()
        Path(self.path).unlink(missing_ok=True)
        os.rmdir(self._dir)


_zygotes: dict[str, Zygote] = {}


def program() -> list[str]:
    """How a test starts `safe-run` itself (an MCP server, the far side of a prefix)."""
    return [sys.executable, str(LAUNCHER)] if ENABLED else [sys.executable, "-m", "safe_run"]


def program_env(kind: str = "cli") -> dict[str, str]:
    """What the environment of a process started with `program()` needs (`kind`: see Zygote)."""
    return {ZYGOTE_VARIABLE: _started(kind).path} if ENABLED else {}


def _started(kind: str = "cli") -> Zygote:
    if kind not in _zygotes:
        _zygotes[kind] = Zygote(kind)
    return _zygotes[kind]


def usable(env: dict[str, str]) -> bool:
    return not any(name in env for name in STARTUP_VARIABLES) and env.get("LANG", "C.UTF-8") == "C.UTF-8"


def run(args: list[str], stdin: bytes | None, env: dict[str, str], timeout: float) -> tuple[int, bytes, bytes]:
    """What `subprocess.run([python, -m, safe_run, *args])` would give: status, stdout, stderr."""
    zygote = _started()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    if stdin is None:
        in_r, in_w = os.open(os.devnull, os.O_RDONLY), None
    else:
        in_r, in_w = os.pipe()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(zygote.path)
    request = {"argv": args, "env": env, "cwd": os.getcwd()}
    message = json.dumps(request).encode() + b"\n"
    sent = socket.send_fds(conn, [message], [in_r, out_w, err_w])
    if sent < len(message):  # a long argument does not fit in one message (sending nothing more may
        conn.sendall(message[sent:])  # meet a zygote that already answered and closed: EPIPE)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if in_w is not None:
        try:  # a call that exits before it reads (a usage error) closes the pipe: EPIPE, here or as it closes
            with open(in_w, "wb") as writer:
                writer.write(stdin or b"")
        except BrokenPipeError:
            pass
    return _collect(conn, out_r, err_r, time.monotonic() + timeout, args)


def _collect(conn: socket.socket, out_r: int, err_r: int, deadline: float, args: list[str]) -> tuple[int, bytes, bytes]:
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    replies = b""
    pid = None
    status = None
    open_fds = [out_r, err_r, conn.fileno()]
    try:
        while open_fds:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if pid is not None:
                    os.kill(pid, signal.SIGKILL)
                raise subprocess.TimeoutExpired(args, 0)
            ready, _, _ = select.select(open_fds, [], [], remaining)
            for fd in ready:
                data = os.read(fd, 1 << 16)
                if fd == conn.fileno():
                    replies += data
                    if not data:
                        open_fds.remove(fd)
                    for line in replies.split(b"\n")[:-1]:
                        message = json.loads(line)
                        pid = message.get("pid", pid)
                        status = message.get("status", status)
                    replies = replies.rsplit(b"\n", 1)[-1]
                elif data:
                    chunks[fd].append(data)
                else:
                    open_fds.remove(fd)
    finally:
        os.close(out_r)
        os.close(err_r)
        conn.close()
    assert status is not None, "the zygote did not report the exit status"
    return os.waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def stop() -> None:
    for zygote in _zygotes.values():
        zygote.close()
    _zygotes.clear()

"""Persistent shells: a command in a warm shell, against a fresh run and pexpect's replwrap.

    .venv/bin/python bench/bench_persistent.py [--runs N] [--count 100] [--shell bash]

Prints, for the machine it runs on, all measured in this invocation:
  warm call     median wall of `safe-run --in X --format json -- true` against the same command
                run fresh (`safe-run --format json -- true`), and the ratio (target <= 0.5)
  holder part   median round trip of a `run` request for `true` sent straight to the shell's
                socket (no Python start-up, no CLI): call received to result sent, plus the
                socket (target <= 5 ms)
  100 echoes    `echo $i` 100 times through one persistent shell (CLI calls, and straight to the
                socket), through `pexpect.replwrap.bash()` (delaybeforesend=None), and as 100 fresh
                safe-run calls: the totals
  idle CPU      CPU time the shell's holder uses in 3 s between commands (target: near zero)
No figure here is asserted; these machines are shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_sessions import cpu_seconds
from private import scratch

SAFE_RUN = [sys.executable, "-m", "safe_run"]
NAME = "bench"


def environment(home: str, runtime: str, shell: str) -> dict[str, str]:
    return {
        "PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell,
        "XDG_RUNTIME_DIR": runtime,
    }


def call(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([*SAFE_RUN, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return json.loads(proc.stdout)


def timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = call(args, env)
    elapsed = time.perf_counter() - started
    assert result["status"] == "completed", result
    return elapsed


def ask(socket_path: Path, request: dict[str, object]) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(str(socket_path))
        conn.sendall((json.dumps(request) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def holder_pid(runtime: str, shell_id: str) -> int:
    meta = json.loads((Path(runtime) / "safe-run" / shell_id / "meta.json").read_text())
    return int(meta["holder_pid"])


def bench_warm(env: dict[str, str], runs: int) -> str:
    first = call(["--in", NAME, "--format", "json", "--", "true"], env)
    warm = [timed(["--in", NAME, "--format", "json", "--", "true"], env) for _ in range(runs)]
    fresh = [timed(["--format", "json", "--", "true"], env) for _ in range(runs)]
    ours, reference = statistics.median(warm) * 1000, statistics.median(fresh) * 1000
    print(f"warm call    safe-run --in X -- true: {ours:6.1f} ms   fresh safe-run -- true: {reference:6.1f} ms"
          f"   ratio {ours / reference:.2f} (target <= 0.5)")
    return str(first["shell_id"])


def bench_holder(socket_path: Path, runs: int) -> None:
    trips, durations = [], []
    for _ in range(runs):
        started = time.perf_counter()
        result = ask(socket_path, {"op": "run", "command": "true", "wait": 30})
        trips.append(time.perf_counter() - started)
        durations.append(result["duration_s"])
    print(f"holder part  request to result over the socket: {statistics.median(trips) * 1000:5.2f} ms median"
          f" (the command's own cycle in it: {statistics.median(durations) * 1000:.2f} ms; target <= 5)")


def bench_echoes(env: dict[str, str], socket_path: Path, count: int) -> None:
    started = time.perf_counter()
    for i in range(count):
        result = call(["--in", NAME, "--format", "json", "--", f"echo {i}"], env)
        assert result["output"] == f"{i}\n", result
    cli = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(count):
        result = ask(socket_path, {"op": "run", "command": f"echo {i}", "wait": 30})
        assert result["output"] == f"{i}\n", result
    direct = time.perf_counter() - started
    replwrap = bench_replwrap(env, count)
    started = time.perf_counter()
    for i in range(count):
        call(["--format", "json", "--", f"echo {i}"], env)
    fresh = time.perf_counter() - started
    print(f"{count} echoes   persistent (CLI calls): {cli:6.2f} s   persistent (socket): {direct:6.2f} s   "
          f"replwrap.bash(): {replwrap:6.2f} s   fresh safe-run calls: {fresh:6.2f} s")


def bench_replwrap(env: dict[str, str], count: int) -> float:
    from pexpect import replwrap

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        started = time.perf_counter()
        bash = replwrap.bash()
        bash.child.delaybeforesend = None
        for i in range(count):
            assert bash.run_command(f"echo {i}").strip() == str(i)
        elapsed = time.perf_counter() - started
        bash.child.close(force=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return elapsed


def bench_idle(pid: int) -> None:
    before = cpu_seconds(pid)
    time.sleep(3.0)
    used = cpu_seconds(pid) - before
    print(f"idle CPU     holder between commands: {used * 1000:.0f} ms of CPU in 3 s (target: near zero)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--shell", default="/bin/bash")
    args = parser.parse_args()
    with scratch() as home, scratch() as runtime:
        os.chmod(runtime, 0o700)
        env = environment(home, runtime, args.shell)
        shell_id = bench_warm(env, args.runs)
        socket_path = Path(runtime) / "safe-run" / shell_id / "socket"
        try:
            bench_holder(socket_path, args.runs)
            bench_echoes(env, socket_path, args.count)
            bench_idle(holder_pid(runtime, shell_id))
        finally:
            call(["close", NAME, "--format", "json"], env)


if __name__ == "__main__":
    main()

"""A person joining a session: how soon the screen is drawn, and how soon a key reaches the command.

    .venv/bin/python bench/bench_attach.py [--runs 30]

Prints, for the machine it runs on, all measured in this invocation:
  first screen   the holder's answer to an attach (connect, ask, the whole screen drawn back:
                 target <= 100 ms), and `safe-run attach` from its start to the screen on the
                 person's terminal (Python's start-up included), next to `python3 -c pass`
  key -> echo    a key typed into an attached terminal until the command's terminal echoes it
                 back (`cat`, which the line discipline echoes at once): target <= 20 ms; next to
                 the same key typed into `cat` in a plain pseudo-terminal (pexpect's own)
Medians of RUNS. Each run has its own HOME and session store; the session is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import pexpect

from private import private_environment, scratch

from safe_run.session import wire
from safe_run.session.onlookers import SCREEN, frames
from safe_run.session.store import SessionStore

BOUND_S = 30.0


def start(env: dict[str, str], command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "safe_run", "--format", "json", "--yield-after", "20", "--", command],
                          env=env, capture_output=True, timeout=BOUND_S, stdin=subprocess.DEVNULL)
    return str(json.loads(done.stdout)["session_id"])


def holder_screen(env: dict[str, str], session_id: str) -> float:
    """Seconds from connecting to the holder to the whole first screen back, as `watch` asks."""
    os.environ.update(env)
    session = SessionStore.open(sweep=False).get(session_id)
    began = time.perf_counter()
    conn = session.connect(BOUND_S)
    assert conn is not None
    with conn:
        conn.sendall(wire.encode_request(wire.Attach(watch=True, rows=50, columns=200)))
        buffer = bytearray()
        while not any(kind == SCREEN for kind, _ in frames(buffer)):
            buffer += conn.recv(1 << 16)
        return time.perf_counter() - began


def cli_screen(env: dict[str, str], session_id: str) -> float:
    began = time.perf_counter()
    person = pexpect.spawn(sys.executable, ["-m", "safe_run", "watch", session_id], env=env, dimensions=(50, 200),
                           timeout=BOUND_S)
    person.expect("type here")
    took = time.perf_counter() - began
    person.sendcontrol("c")
    person.expect(pexpect.EOF)
    return took


def echoes(terminal: pexpect.spawn, runs: int) -> list[float]:
    times = []
    for index in range(runs):
        key = "abcdefghijklmnopqrstuvwxyz"[index % 26]
        began = time.perf_counter()
        terminal.send(key)
        terminal.expect_exact(key)
        times.append(time.perf_counter() - began)
    return times


def python_start() -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with scratch("bench-attach-") as root:
        env = private_environment(root)
        session_id = start(env, "echo type here; cat")
        try:
            holder = [holder_screen(env, session_id) for _ in range(args.runs)]
            cli = [cli_screen(env, session_id) for _ in range(min(args.runs, 10))]
            python = [python_start() for _ in range(min(args.runs, 10))]
            person = pexpect.spawn(sys.executable, ["-m", "safe_run", "attach", session_id], env=env,
                                   dimensions=(50, 200), timeout=BOUND_S, encoding="utf-8")
            person.delaybeforesend = None
            person.expect("type here")
            ours = echoes(person, args.runs)
            person.send("\x1cd")
            person.expect(pexpect.EOF)
        finally:
            subprocess.run([sys.executable, "-m", "safe_run", "stop", session_id], env=env, capture_output=True,
                           timeout=BOUND_S)
        plain = pexpect.spawn("cat", env=env, timeout=BOUND_S, encoding="utf-8")
        plain.delaybeforesend = None
        reference = echoes(plain, args.runs)
        plain.terminate(force=True)
    print(f"{os.cpu_count()} CPUs; medians of {args.runs} runs")
    print(f"first screen   holder answers an attach in {statistics.median(holder) * 1000:.1f} ms (target <= 100 ms); "
          f"`safe-run watch` to its screen {statistics.median(cli) * 1000:.0f} ms, of which Python starting "
          f"(`python3 -c pass`) {statistics.median(python) * 1000:.0f} ms")
    print(f"key -> echo    attached {statistics.median(ours) * 1000:.2f} ms, worst {max(ours) * 1000:.2f} ms "
          f"(target <= 20 ms); cat in a plain pseudo-terminal {statistics.median(reference) * 1000:.2f} ms")


if __name__ == "__main__":
    main()

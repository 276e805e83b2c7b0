"""Programs at a prompt in an event loop, and questions to the terminal: how soon safe-run answers.

    .venv/bin/python bench/bench_event_loops.py [--runs 3]

Prints, for the machine it runs on, all measured in this invocation:
  prompt -> answer   for node, python3 -m asyncio, a prompt_toolkit prompt, IPython and top (those
                     installed): when the program alone, in a plain pseudo-terminal driven by
                     pexpect, has drawn its prompt; when `safe-run --format json --yield-after 20`
                     has answered about it; and the difference (target <= 2 s). Medians of RUNS.
  query -> answer    a program in raw mode asks for the cursor position 50 times and times each
                     round trip: inside safe-run, and in pexpect with this script answering as the
                     terminal (the reference). Median and worst (target <= 10 ms).
Each run has its own HOME and session store; every session is stopped at the end. No figure here
is asserted: these machines are shared, so compare the two columns.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import pexpect

from private import private_environment, scratch

BOUND_S = 30.0
ROUND_TRIPS = 50
TOOLKIT = 'from prompt_toolkit import prompt; print(prompt("name? "))'
# Asks for the cursor position in raw mode and prints each round trip in milliseconds.
ASK = f'''
import os, select, termios, time, tty
saved = termios.tcgetattr(0)
tty.setraw(0)
times = []
try:
    for _ in range({ROUND_TRIPS}):
        began = time.perf_counter()
        os.write(1, b"\\x1b[6n")
        got = b""
        while not got.endswith(b"R") and select.select([0], [], [], 2.0)[0]:
            got += os.read(0, 32)
        times.append((time.perf_counter() - began) * 1000)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
print("trips", " ".join(f"{{t:.3f}}" for t in times))
'''


def programs() -> list[tuple[str, str, str]]:
    """(name, command, what its prompt looks like on the screen) for what is installed here."""
    found = []
    if shutil.which("node"):
        found.append(("node", "node", "> "))
    found.append(("asyncio REPL", f"{sys.executable} -m asyncio", ">>> "))
    try:
        import prompt_toolkit  # noqa: F401

        found.append(("prompt_toolkit", f"{sys.executable} -c '{TOOLKIT}'", "name"))
    except ImportError:
        pass
    if shutil.which("ipython"):
        found.append(("IPython", "ipython --no-banner", r"In \["))
    if shutil.which("top"):
        found.append(("top", "top", "load average"))
    return found


def drawn_alone(command: str, prompt: str, env: dict[str, str]) -> float:
    """Seconds until the program, alone in a pseudo-terminal, has drawn its prompt."""
    began = time.perf_counter()
    child = pexpect.spawn("/bin/bash", ["-c", command], env=env, dimensions=(50, 200), timeout=BOUND_S)
    try:
        child.expect(prompt)
        return time.perf_counter() - began
    finally:
        child.terminate(force=True)


def answered(command: str, env: dict[str, str]) -> tuple[float, str]:
    """Seconds until safe-run answered about the program at its prompt, and what it answered."""
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "safe_run", "--format", "json", "--yield-after", "20", "--", command],
        env=env, capture_output=True, timeout=BOUND_S, stdin=subprocess.DEVNULL,
    )
    took = time.perf_counter() - began
    result = json.loads(done.stdout)
    if result.get("session_id"):
        subprocess.run([sys.executable, "-m", "safe_run", "stop", result["session_id"]], env=env,
                       capture_output=True, timeout=BOUND_S)
    keyboard = " (reads_keyboard)" if result.get("reads_keyboard") else ""
    return took, f"{result['status']}{keyboard}"


def trips_inside(env: dict[str, str], root: str) -> list[float]:
    script = os.path.join(root, "ask.py")
    with open(script, "w") as handle:
        handle.write(ASK)
    done = subprocess.run(
        [sys.executable, "-m", "safe_run", "--format", "json", "--", f"{sys.executable} {script}"],
        env=env, capture_output=True, timeout=BOUND_S, stdin=subprocess.DEVNULL,
    )
    return _trips(json.loads(done.stdout)["output"])


def trips_pexpect(env: dict[str, str], root: str) -> list[float]:
    script = os.path.join(root, "ask.py")
    child = pexpect.spawn(sys.executable, [script], env=env, dimensions=(50, 200), timeout=BOUND_S)
    child.delaybeforesend = None  # pexpect's own 50 ms pause before each send is not the terminal's
    for _ in range(ROUND_TRIPS):
        child.expect_exact(b"\x1b[6n")
        child.send(b"\x1b[1;1R")
    child.expect(pexpect.EOF)
    return _trips((child.before or b"").decode())


def _trips(output: str) -> list[float]:
    line = next(line for line in output.splitlines() if line.startswith("trips"))
    return [float(word) for word in line.split()[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; medians of {args.runs} runs")
    for name, command, prompt in programs():
        alone, inside, said = [], [], ""
        for _ in range(args.runs):
            with scratch("bench-loops-") as root:
                env = private_environment(root)
                alone.append(drawn_alone(command, prompt, env))
                took, said = answered(command, env)
                inside.append(took)
        drawn, answer = statistics.median(alone), statistics.median(inside)
        print(f"prompt -> answer  {name:15} prompt drawn at {drawn:5.2f} s alone; safe-run answered {said} at "
              f"{answer:5.2f} s: prompt -> answer {answer - drawn:5.2f} s (target <= 2 s)")
    with scratch("bench-loops-") as root:
        env = private_environment(root)
        ours, reference = trips_inside(env, root), trips_pexpect(env, root)
    print(f"query -> answer   cursor position, {ROUND_TRIPS} round trips: safe-run median {statistics.median(ours):.2f} ms, "
          f"worst {max(ours):.2f} ms (target <= 10 ms); pexpect answering from Python median "
          f"{statistics.median(reference):.2f} ms, worst {max(reference):.2f} ms")


if __name__ == "__main__":
    main()

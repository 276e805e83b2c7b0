"""A person's own run at their terminal, side by side with script(1) doing the same.

    .venv/bin/python bench/bench_interactive.py [--keys 100] [--lines 1000000] [--pairs 5]

Prints, for the machine it runs on, all measured in this invocation:
  key -> echo   a key typed into `cat` until its echo is back on the person's terminal (pexpect's
                pseudo-terminal): under `safe-run` and under `script -qc`; medians, and the
                difference (target: within 5 ms of script)
  throughput    `seq 1 LINES` shown on the terminal to its end: safe-run / script wall time, as
                the median of PAIRS alternating pairs (target: within 10%)
  fg -> redrawn less, suspended with Ctrl-Z in an interactive bash, until its screen is back after
                `fg`: under safe-run and run plainly in the same bash; medians of PAIRS
  piped key -> echo  the same keys with safe-run's stdin a pipe (`true | safe-run -- cat /dev/tty`:
                the pipe is the command's, the keys come from the terminal) against `true | cat
                /dev/tty` run plainly, where the terminal's own echo is all there is
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import pexpect

from private import private_environment, scratch

BOUND_S = 120.0


def safe_run(command: str) -> tuple[str, list[str]]:
    return sys.executable, ["-m", "safe_run", "--shell", "/bin/bash", command]


def script(command: str) -> tuple[str, list[str]]:
    return "script", ["-qc", command, "/dev/null"]


def piped(program: tuple[str, list[str]] | None, command: str) -> tuple[str, list[str]]:
    """`command` with stdin a pipe, under `program` (None: plainly)."""
    inner = command if program is None else " ".join([program[0], *program[1][:-1], f"'{command}'"])
    return "/bin/bash", ["-c", f"true | {inner}"]


def echo_times(program: tuple[str, list[str]], env: dict[str, str], keys: int) -> list[float]:
    terminal = pexpect.spawn(program[0], program[1], env=env, dimensions=(50, 200), timeout=BOUND_S)
    terminal.delaybeforesend = None
    terminal.send(b"ready\r")
    terminal.expect(b"ready\r\n.*ready\r\n")  # cat is reading: its echo and its answer came back
    times = []
    for index in range(keys):
        key = bytes([ord("a") + index % 26])
        began = time.perf_counter()
        terminal.send(key)
        terminal.expect_exact(key)
        times.append(time.perf_counter() - began)
    terminal.sendcontrol("d")
    terminal.sendcontrol("d")
    terminal.expect(pexpect.EOF)
    return times


def shown_in(program: tuple[str, list[str]], env: dict[str, str]) -> float:
    began = time.perf_counter()
    terminal = pexpect.spawn(program[0], program[1], env=env, dimensions=(50, 200), timeout=BOUND_S, maxread=1 << 16)
    terminal.expect(pexpect.EOF)
    took = time.perf_counter() - began
    terminal.close()
    return took


def redrawn_after_fg(plainly: bool, env: dict[str, str], text: str) -> float:
    """Seconds from `fg` to less's screen drawn again, in a bash at a terminal."""
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env={**env, "PS1": "$ "}, dimensions=(30, 100),
                          timeout=BOUND_S)
    shell.delaybeforesend = None
    shell.expect_exact("$ ")
    line = f"less {text}" if plainly else f"{sys.executable} -m safe_run --shell /bin/bash -- 'less {text}'"
    shell.send(line + "\r")
    shell.expect_exact("row 29")
    shell.sendcontrol("z")
    shell.expect_exact("Stopped")
    shell.expect_exact("$ ")
    began = time.perf_counter()
    shell.send("fg\r")
    shell.expect_exact("row 29")
    took = time.perf_counter() - began
    shell.send("q")
    shell.expect_exact("$ ")
    shell.sendline("exit")
    shell.expect(pexpect.EOF)
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    with scratch("bench-interactive-") as root:
        env = private_environment(root)
        ours = echo_times(safe_run("cat"), env, args.keys)
        theirs = echo_times(script("cat"), env, args.keys)
        ratios, mine, reference = [], [], []
        for _ in range(args.pairs):
            a = shown_in(safe_run(f"seq 1 {args.lines}"), env)
            b = shown_in(script(f"seq 1 {args.lines}"), env)
            mine.append(a)
            reference.append(b)
            ratios.append(a / b)
        text = os.path.join(root, "rows.txt")
        with open(text, "w") as rows:
            rows.write("".join(f"row {n}\n" for n in range(1, 300)))
        fg_ours = [redrawn_after_fg(False, env, text) for _ in range(args.pairs)]
        fg_plain = [redrawn_after_fg(True, env, text) for _ in range(args.pairs)]
        piped_ours = echo_times(piped(safe_run("-"), "cat /dev/tty"), env, args.keys)
        piped_plain = echo_times(piped(None, "cat /dev/tty"), env, args.keys)
    ours_ms, theirs_ms = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
    print(f"{os.cpu_count()} CPUs")
    print(f"key -> echo   safe-run {ours_ms:.2f} ms, script {theirs_ms:.2f} ms: {ours_ms - theirs_ms:+.2f} ms "
          f"(target: within 5 ms); worst {max(ours) * 1000:.2f} / {max(theirs) * 1000:.2f} ms")
    print(f"throughput    seq 1 {args.lines} on the terminal: safe-run {statistics.median(mine):.2f} s, script "
          f"{statistics.median(reference):.2f} s; safe-run/script {statistics.median(ratios):.2f}x "
          f"(target <= 1.10x; median of {args.pairs} pairs)")
    print(f"fg -> redrawn less after Ctrl-Z: safe-run {statistics.median(fg_ours) * 1000:.1f} ms, plainly "
          f"{statistics.median(fg_plain) * 1000:.1f} ms (medians of {args.pairs})")
    print(f"piped key -> echo  safe-run {statistics.median(piped_ours) * 1000:.2f} ms, plainly "
          f"{statistics.median(piped_plain) * 1000:.2f} ms (medians of {args.keys} keys)")


if __name__ == "__main__":
    main()

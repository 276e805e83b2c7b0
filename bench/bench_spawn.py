"""Starting a program on a new terminal, in a process the size of a holder: posix_spawn against fork.

    .venv/bin/python bench/bench_spawn.py [--pairs 9] [--runs 50]

Every start is `spawn` itself (a new terminal, a session of its own, every signal at its default)
of /bin/true, waited for, in this process after safe-run's holder and run machinery are imported.
Each pair measures the median of RUNS starts one way, then the other:
  posix_spawn  through the C library (`libc_spawn`), as safe-run starts each shell where it can
  fork         by fork and exec, as it does where the C library cannot (the reference)
and prints the medians and the median of the pairs' ratios. Next to them, Python's own
`os.posix_spawn` of /bin/true with no terminal at all: the floor of starting a program from here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import safe_run.engine.runner  # noqa: F401 - the size of a holder: what it has imported is what a fork copies
import safe_run.session.holder  # noqa: F401
from safe_run.engine import libc_spawn, spawn

ENV = {"PATH": os.defpath}


def spawned() -> None:
    started = spawn.spawn(["/bin/true"], ENV, "/", 24, 80)
    os.waitpid(started.pid, 0)
    os.close(started.master_fd)


def forked() -> None:
    available = libc_spawn.available
    libc_spawn.available = lambda: False
    try:
        spawned()
    finally:
        libc_spawn.available = available


def bare() -> None:
    os.waitpid(os.posix_spawn("/bin/true", ["/bin/true"], ENV), 0)


def median_of(runs: int, start: Callable[[], None]) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        start()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    if not libc_spawn.available():
        print("posix_spawn cannot start the shell with this C library: safe-run forks here")
        return
    ours, theirs, ratios = [], [], []
    for _ in range(args.pairs):
        a, b = median_of(args.runs, spawned), median_of(args.runs, forked)
        ours.append(a)
        theirs.append(b)
        ratios.append(a / b)
    floor = median_of(args.runs, bare)
    print(f"posix_spawn {statistics.median(ours) * 1000:6.2f} ms   fork {statistics.median(theirs) * 1000:6.2f} ms   "
          f"ratio {statistics.median(ratios):4.2f}   (os.posix_spawn, no terminal: {floor * 1000:.2f} ms)")


if __name__ == "__main__":
    main()

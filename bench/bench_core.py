"""Speed and memory of one safe-run call, each against a reference measured in the same invocation.

    .venv/bin/python bench/bench_core.py [--runs N] [--shell bash]

Prints, for the machine it runs on:
  start-up   `safe-run -- true` (empty HOME), in the foreground and under the JSON bound (a session),
             vs `pexpect.replwrap.bash()` + `true`
  latency    how long after `sleep 1` ends safe-run has exited (the command prints its end time)
  output     `seq 1 3000000` through safe-run (JSON, and pretty output to a pipe) vs
             `script -qc 'seq 1 3000000' /dev/null`, in pairs, as the median of the pairs' ratios
  profile    the same flood run in one interpreter under cProfile: CPU, page faults, the costliest functions
  memory     peak RSS of safe-run for 26 MB and for 1 GB of output (bounded: should not grow)
No figure here is asserted; these machines are shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from private import scratch

SAFE_RUN = [sys.executable, "-m", "safe_run", "--format", "json"]
PRETTY = [sys.executable, "-m", "safe_run", "--format", "pretty"]
SEQ = "seq 1 3000000"


def environment(home: str, shell: str) -> dict[str, str]:
    # Foreground runs, so that throughput and memory are the run's own, not a session holder's.
    return {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell,
            "SAFE_RUN_YIELD_AFTER": "never"}


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def replwrap_true(env: dict[str, str]) -> float:
    code = "import pexpect.replwrap as r; r.bash().run_command('true')"
    return timed([sys.executable, "-c", code], env)


def bench_startup(env: dict[str, str], runs: int) -> None:
    ours = [timed([*SAFE_RUN, "--", "true"], env) for _ in range(runs)]
    bounded_env = {k: v for k, v in env.items() if k != "SAFE_RUN_YIELD_AFTER"}
    bounded = [timed([*SAFE_RUN, "--", "true"], bounded_env) for _ in range(runs)]
    reference = [replwrap_true(env) for _ in range(runs)]
    ratio = median_ms(ours) / median_ms(reference)
    print(f"start-up  safe-run -- true        median {median_ms(ours):7.1f} ms  (min {min(ours)*1000:.1f})")
    print(f"          ... under the JSON bound median {median_ms(bounded):7.1f} ms  (a session: fork, socket)")
    print(f"          replwrap.bash() + true  median {median_ms(reference):7.1f} ms")
    print(f"          ratio {ratio:.2f} (target <= 0.60; target median <= 150 ms)")


def bench_latency(env: dict[str, str], runs: int) -> None:
    """The command stamps the moment it ends; the gap to safe-run's exit is the completion latency."""
    gaps = []
    for _ in range(runs):
        proc = subprocess.run(
            [*SAFE_RUN, "--", "sleep 1; date +%s.%N"], env=env, stdin=subprocess.DEVNULL,
            capture_output=True, check=True,
        )
        exited = time.time()
        ended = float(json.loads(proc.stdout)["output"].strip())
        gaps.append(exited - ended)
    print(f"latency   sleep 1: safe-run exits {median_ms(gaps):.1f} ms after the command ends "
          f"(median of {runs}, max {max(gaps)*1000:.1f}; target <= 30 ms)")


def bench_output(env: dict[str, str], runs: int) -> None:
    """Pairs, script(1) then safe-run, so that both meet the same moment of a shared machine; the
    figure is the median of the pairs' ratios. JSON is how agents read it; pretty output through a
    pipe is what a CI log gets (cleaned lines as they come)."""
    reference = ["script", "-qc", SEQ, "/dev/null"]
    for label, argv in (("json", [*SAFE_RUN, "--", SEQ]), ("pretty to a pipe", [*PRETTY, "--", SEQ])):
        ratios, ours, theirs = [], [], []
        timed(argv, env)  # the warm process starts on the second call of a context: not measured
        for _ in range(runs):
            theirs.append(timed(reference, env))
            ours.append(timed(argv, env))
            ratios.append(theirs[-1] / ours[-1])
        print(f"output    {SEQ} (26 MB) as {label}: safe-run {median_ms(ours):5.0f} ms, "
              f"script(1) {median_ms(theirs):5.0f} ms")
        print(f"          speed vs script(1), median of {runs} pairs: {statistics.median(ratios):.2f}x (target >= 1.0)")


PROFILED = """
import cProfile, pstats, resource, sys, time
from safe_run.core.request import RunRequest
from safe_run.engine.runner import execute
profile = cProfile.Profile()
before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
profile.enable()
execute(RunRequest(sys.argv[1]))
profile.disable()
wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
print(f"          in one process: {wall:.2f} s wall (profiler on), {after.ru_utime - before.ru_utime:.2f} s user, "
      f"{after.ru_stime - before.ru_stime:.2f} s system, {after.ru_minflt - before.ru_minflt} page faults")
stats = pstats.Stats(profile)
rows = sorted(stats.stats.items(), key=lambda item: -item[1][2])[:8]  # type: ignore[attr-defined]
for (path, line, name), (calls, _, own, _, _) in rows:
    print(f"          {own:6.3f} s own  {calls:6d} calls  {name} ({path.rsplit('/', 1)[-1]}:{line})")
"""


def bench_profile(env: dict[str, str]) -> None:
    """Where a flood's time goes inside safe-run: the run in this interpreter under cProfile. Most
    of the wall time is the kernel's pseudo-terminal and waiting for the command; what is left is
    ours, per piece of output."""
    print(f"profile   {SEQ} through the run loop (runner.execute):")
    subprocess.run([sys.executable, "-c", PROFILED, SEQ], env=env, stdin=subprocess.DEVNULL, check=True)


def peak_rss_mb(argv: list[str], env: dict[str, str]) -> float:
    """Peak RSS of one child, measured in a fresh process so earlier runs do not count."""
    code = (
        "import resource, subprocess, sys;"
        "subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL);"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], env=env, capture_output=True, check=True)
    return int(out.stdout) / 1024


def bench_memory(env: dict[str, str]) -> None:
    small = peak_rss_mb([*SAFE_RUN, "--", SEQ], env)
    start = time.perf_counter()
    large = peak_rss_mb([*SAFE_RUN, "--", "head -c 1000000000 /dev/zero | tr '\\0' x | fold -w 100"], env)
    seconds = time.perf_counter() - start
    print(f"memory    peak RSS: {small:.0f} MB for 26 MB of output, {large:.0f} MB for 1 GB ({seconds:.1f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--shell", default="/bin/bash")
    parser.add_argument("--skip-memory", action="store_true", help="skip the 1 GB run")
    args = parser.parse_args()
    with scratch() as home:
        env = environment(home, args.shell)
        print(f"shell {args.shell}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
        bench_startup(env, args.runs)
        bench_latency(env, max(3, args.runs // 3))
        bench_output(env, max(3, args.runs // 5))
        bench_profile(env)
        if not args.skip_memory:
            bench_memory(env)


if __name__ == "__main__":
    main()

"""How long safe-run takes to start, against the floor of starting Python and a shell at all.

    .venv/bin/python bench/bench_startup.py [--runs N]

Prints the median wall time of N runs (empty temporary HOME, TERM=dumb, stdin /dev/null, no tty) of
  python3 -c pass                    the floor: an interpreter that imports nothing of ours
  bash --norc -i -c true             the floor of the shell every run starts
  safe-run --version                 the answer that needs nothing beyond the entry point
  safe-run --format json -- true     a whole run with the default JSON bound, as an agent makes it
                                     again and again: handed to the warm process after the second call
  ... with SAFE_RUN_WARM=0           the same run started from scratch in its own process
each in ms and as a ratio to `python3 -c pass`, all measured in the same invocation (interleaved,
so that a busy moment of the machine costs every line alike). Nothing here is asserted; these
machines are shared, so compare ratios, not absolutes. Targets: the run <= 60 ms, --version <= 30 ms.
"""

from __future__ import annotations

import argparse
import glob
import os
import signal
import shutil
import statistics
import subprocess
import sys
import time

from private import scratch


def safe_run_argv() -> list[str]:
    """The installed entry point next to this interpreter, as a user starts it; else the module."""
    script = os.path.join(os.path.dirname(sys.executable), "safe-run")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "safe_run"]


COLD = {"SAFE_RUN_WARM": "0"}


def cases() -> list[tuple[str, list[str], dict[str, str]]]:
    safe_run = safe_run_argv()
    bash = shutil.which("bash") or "/bin/bash"
    run = [*safe_run, "--format", "json", "--", "true"]
    return [
        ("python3 -c pass", [sys.executable, "-c", "pass"], {}),
        ("bash --norc -i -c true", [bash, "--norc", "-i", "-c", "true"], {}),
        ("safe-run --version", [*safe_run, "--version"], {}),
        ("safe-run --format json -- true", run, {}),
        ("... with SAFE_RUN_WARM=0", run, COLD),
    ]


def environment(home: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": "/bin/bash"}


def stop_warm(home: str) -> None:
    """End the warm process the runs started (its pid is in the lock file beside its socket)."""
    for lock in glob.glob(os.path.join(home, ".local/state/safe-run/sessions/warm/*.lock")):
        try:
            os.kill(int(open(lock).read()), signal.SIGTERM)
        except (ValueError, OSError):
            pass


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, start_new_session=True, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    measured = cases()
    samples: dict[str, list[float]] = {name: [] for name, _, _ in measured}
    with scratch() as home:
        env = environment(home)
        try:
            # Two unmeasured rounds: the page cache, not the code, on the first; the second call of
            # a caller starts its warm process, which then has a moment to get ready.
            for _ in range(2):
                for name, argv, extra in measured:
                    timed(argv, {**env, **extra})
            time.sleep(1)
            for _ in range(args.runs):
                for name, argv, extra in measured:
                    samples[name].append(timed(argv, {**env, **extra}))
        finally:
            stop_warm(home)
    floor = statistics.median(samples[measured[0][0]])
    print(f"{os.cpu_count()} cores, python {sys.version.split()[0]}, median of {args.runs} runs")
    for name, _, _ in measured:
        median = statistics.median(samples[name])
        print(f"  {name:32} {median * 1000:7.1f} ms  {median / floor:5.2f}x python3 -c pass"
              f"  (min {min(samples[name]) * 1000:.1f})")
    print("  targets: safe-run --format json -- true <= 60 ms, safe-run --version <= 30 ms")


if __name__ == "__main__":
    main()

"""What a call costs beyond its command: from the command's last moment to the caller's return.

    .venv/bin/python bench/bench_answer.py [--runs 8] [--pause 1.0] [--shell /bin/bash]

Each command line ends by printing `date +%s.%N`; the figure is the time from that stamp to the
moment `safe-run` has exited, as its caller sees it. Calls alternate `true` and `sleep 1` (so that
whatever ran before differs), with a pause before each, as an agent's calls come; each context has
an empty HOME, and the warm process that agents' calls find.

  json        --format json, no terminal, TERM=dumb: an agent (target at most 10 ms)
  pretty      --format pretty with CI=true and no terminal: a CI job step (target at most 10 ms)
  reference   the same command line run by `bash -c` in a subprocess: the floor of any program
              that starts one and waits for it
  one-shot    `safe-run --format pretty -- true` against the same call in JSON, both as an agent
              calls, in pairs, as the median of the pairs' ratios (target at most 1.15)
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

from bench_startup import stop_warm
from private import scratch

SAFE_RUN = [os.path.join(os.path.dirname(sys.executable), "safe-run")]
COMMANDS = ("true", "sleep 1")
STAMP = "; date +%s.%N"


def environment(home: str, shell: str, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell, **extra}


def gap_ms(argv: list[str], env: dict[str, str], parse: str) -> float:
    """Milliseconds from the stamp the command line printed last to this call's return."""
    proc = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    returned = time.time()
    text = json.loads(proc.stdout)["output"] if parse == "json" else proc.stdout.decode()
    stamp = [line for line in text.split() if line[:1].isdigit()][-1]
    return (returned - float(stamp)) * 1000


def series(label: str, argv: list[str], env: dict[str, str], parse: str, runs: int, pause: float) -> dict[str, list[float]]:
    for _ in range(2):  # the first call of a context starts the warm process; the second finds it
        subprocess.run([*argv, "true"], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    gaps: dict[str, list[float]] = {command: [] for command in COMMANDS}
    for _ in range(runs):
        for command in COMMANDS:
            time.sleep(pause)
            gaps[command].append(gap_ms([*argv, command + STAMP], env, parse))
    for command, values in gaps.items():
        print(f"{label:10} {command:8} median {statistics.median(values):6.1f} ms  max {max(values):6.1f} ms  "
              f"(target <= 10)")
    return gaps


def one_shot_ratio(env: dict[str, str], runs: int) -> None:
    def timed(argv: list[str], env: dict[str, str]) -> float:
        began = time.perf_counter()
        subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        return time.perf_counter() - began

    pretty, plain, ratios = [], [], []
    for _ in range(runs):
        plain.append(timed([*SAFE_RUN, "--format", "json", "--", "true"], env))
        pretty.append(timed([*SAFE_RUN, "--format", "pretty", "--", "true"], env))
        ratios.append(pretty[-1] / plain[-1])
    print(f"one-shot   pretty {statistics.median(pretty) * 1000:6.1f} ms   json {statistics.median(plain) * 1000:6.1f} ms"
          f"   ratio {statistics.median(ratios):.2f}  (target <= 1.15)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--pause", type=float, default=1.0)
    parser.add_argument("--shell", default="/bin/bash")
    args = parser.parse_args()
    os.environ.pop("CI", None)  # in CI no warm process is started: each series says whether it is one
    with scratch("bench-answer-") as agent, \
            scratch("bench-answer-ci-") as ci:
        json_env = environment(agent, args.shell)
        pretty_env = environment(ci, args.shell, CI="true")
        reference: dict[str, list[float]] = {command: [] for command in COMMANDS}
        for _ in range(args.runs):
            for command in COMMANDS:
                reference[command].append(gap_ms(["bash", "-c", command + STAMP], json_env, "text"))
        for command, values in reference.items():
            print(f"{'reference':10} {command:8} median {statistics.median(values):6.1f} ms  max {max(values):6.1f} ms")
        series("json", [*SAFE_RUN, "--format", "json", "--"], json_env, "json", args.runs, args.pause)
        series("pretty", [*SAFE_RUN, "--format", "pretty", "--"], pretty_env, "text", args.runs, args.pause)
        one_shot_ratio(json_env, args.runs * 2)
        stop_warm(agent)
    return 0


if __name__ == "__main__":
    sys.exit(main())

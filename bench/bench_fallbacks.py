"""How soon safe-run answers when a command would otherwise hang, each figure next to its target.

    .venv/bin/python bench/bench_fallbacks.py [--runs N]

Every case runs N times (default 5) with the default --idle, in an empty temporary HOME
(plus the one rc file the case needs), and prints the median and the max:
  syntax       `echo "unclosed` in bash and zsh: wall time of the whole call
  check        the syntax check alone, in this process: a 200 KB command checked twice (sound,
               then with an unclosed quote added), and a one-line `if` checked once
  input        python3 REPL, `read x`, `less FILE`: from the moment the command stamps
               (just before the waiting program starts) to safe-run's exit; also wall time
  no-integr.   .bashrc ends in `exec dash`: downgrades[0].at_s, and an upper bound on the
               time from the shell going quiet (stamped just before `exec dash`) to the decision;
               at_s is such a bound too, so the smaller of the two is printed
  broken       the command removes the integration, sleeps 1 s and stamps its end:
               from that stamp to safe-run's exit (bare bash, and a .bashrc with its own PS1)
  timeout      `--timeout 2` on a long sleep: wall time, and whether that sleep outlived the run
The last column is how each run ended (status/completion_reason), so a case that went
another way than intended shows up instead of being timed as if it had not.
No figure here is asserted; these machines are shared, so read the max with that in mind.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SAFE_RUN = [sys.executable, "-m", "safe_run", "--format", "json"]
STAMP = "date +%s.%N > {stamp}"
# Far beyond any figure measured here: a run that gets this far is hung, and is stopped.
HANG_LIMIT_S = 60.0


@dataclass
class Call:
    report: dict
    wall_s: float
    exited_at: float

    @property
    def outcome(self) -> str:
        return f"{self.report.get('status')}/{self.report.get('completion_reason')}"


@dataclass
class Row:
    case: str
    measure: str
    target: str
    samples: list[float] = field(default_factory=list)
    outcomes: list[str] = field(default_factory=list)


def environment(home: str, shell: str) -> dict[str, str]:
    # Foreground runs: under the default bound an input wait would be kept in a session, not answered.
    return {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell,
            "SAFE_RUN_YIELD_AFTER": "never"}


def call(argv: list[str], env: dict[str, str]) -> Call:
    """One safe-run call; a hung one gets SIGTERM, which safe-run answers by cleaning up and reporting."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, _ = proc.communicate(timeout=HANG_LIMIT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate()
    exited_at = time.time()
    wall = time.perf_counter() - start
    try:
        report = json.loads(out)
    except ValueError:
        report = {"status": f"no-json(rc={proc.returncode})"}
    return Call(report, wall, exited_at)


def stamped(path: Path) -> float:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return float("nan")


def fresh_home(rc: str | None = None) -> tempfile.TemporaryDirectory:
    home = tempfile.TemporaryDirectory()
    if rc is not None:
        Path(home.name, ".bashrc").write_text(rc)
    return home


def bench_syntax(runs: int) -> list[Row]:
    rows = []
    for shell in ("/bin/bash", "/usr/bin/zsh"):
        row = Row(f"syntax error ({Path(shell).name})", "wall", "<= 0.5 s")
        with fresh_home() as home:
            env = environment(home, shell)
            for _ in range(runs):
                result = call([*SAFE_RUN, "--shell", shell, "--", 'echo "unclosed'], env)
                row.samples.append(result.wall_s)
                row.outcomes.append(result.outcome)
        rows.append(row)
    return rows


BIG_COMMAND = "".join(f"echo 'line {i}' \"$HOME\" > /dev/null\n" for i in range(7000))


def bench_check(runs: int) -> list[Row]:
    """The check `safe-run` makes before it types a line that is not simple, timed alone."""
    from safe_run.syntax import check_syntax

    rows = []
    for shell in ("/bin/bash", "/usr/bin/zsh"):
        big = Row(f"check: 200 KB ({Path(shell).name})", "sound + broken", "<= 2 s")
        small = Row(f"check: one line ({Path(shell).name})", "one check", "<= 0.25 s")
        with tempfile.TemporaryDirectory() as directory:
            command = Path(directory, "command")
            for _ in range(runs):
                started = time.monotonic()
                command.write_text(BIG_COMMAND)
                sound = check_syntax(Path(shell).name, shell, command, 3.0)
                command.write_text(BIG_COMMAND + 'echo "unclosed\n')
                broken = check_syntax(Path(shell).name, shell, command, 3.0)
                big.samples.append(time.monotonic() - started)
                big.outcomes.append("sound/broken" if sound is None and broken is not None else "not checked")
                command.write_text("if true; then echo x; fi\n")
                started = time.monotonic()
                found = check_syntax(Path(shell).name, shell, command, 3.0)
                small.samples.append(time.monotonic() - started)
                small.outcomes.append("sound" if found is None else "refused")
        rows += [big, small]
    return rows


def bench_input(runs: int) -> list[Row]:
    """The stamp precedes the program's start-up, so the gap overstates the wait by that start-up."""
    cases = [
        ("python3 REPL", "{stamp}; python3"),
        ("read x", "printf 'name? '; {stamp}; read x"),
        ("less FILE", "{stamp}; less {file}"),
    ]
    rows = []
    for name, template in cases:
        gap = Row(f"input: {name}", "wait -> exit", "<= 2 s")
        wall = Row(f"input: {name}", "wall", "-")
        with fresh_home() as home:
            stamp = Path(home, "stamp")
            page = Path(home, "page.txt")
            page.write_text("".join(f"line {n}\n" for n in range(500)))
            command = template.format(stamp=STAMP.format(stamp=stamp), file=page)
            env = environment(home, "/bin/bash")
            for _ in range(runs):
                stamp.unlink(missing_ok=True)
                result = call([*SAFE_RUN, "--", command], env)
                gap.samples.append(result.exited_at - stamped(stamp))
                wall.samples.append(result.wall_s)
                gap.outcomes.append(result.outcome)
        rows += [gap, wall]
    return rows


def decided_at(result: Call) -> float:
    """Wall-clock moment of the first downgrade, as late as it can have been.

    at_s and duration_s share safe-run's start; duration_s is taken before the report is
    written and the process exits, so counting back from the exit places the decision no
    earlier than it really was.
    """
    downgrades = result.report.get("downgrades") or []
    if not downgrades or "duration_s" not in result.report:
        return float("nan")
    return result.exited_at - (result.report["duration_s"] - downgrades[0]["at_s"])


def bench_no_integration(runs: int) -> list[Row]:
    at_s = Row("no integration (exec dash)", "downgrades[0].at_s", "well < 2 s")
    quiet = Row("no integration (exec dash)", "quiet -> decided (bound)", "<= 2 s")
    wall = Row("no integration (exec dash)", "wall, echo hi", "-")
    with fresh_home() as home:
        stamp = Path(home, "stamp")
        Path(home, ".bashrc").write_text(f"{STAMP.format(stamp=stamp)}; exec dash\n")
        env = environment(home, "/bin/bash")
        for _ in range(runs):
            stamp.unlink(missing_ok=True)
            result = call([*SAFE_RUN, "--", "echo hi"], env)
            downgrades = result.report.get("downgrades") or [{"at_s": float("nan")}]
            at_s.samples.append(downgrades[0]["at_s"])
            # Both are upper bounds (the shell cannot go quiet before safe-run starts); keep the tighter.
            quiet.samples.append(min(downgrades[0]["at_s"], decided_at(result) - stamped(stamp)))
            wall.samples.append(result.wall_s)
            at_s.outcomes.append(f"{result.outcome} strategy={result.report.get('strategy')}")
    return [at_s, quiet, wall]


def bench_broken(runs: int) -> list[Row]:
    cases = [
        ("broken: hooks removed", None, "unset PROMPT_COMMAND; trap - DEBUG; sleep 1; {stamp}"),
        ("broken: own PS1", "PS1='mine$ '\n", "unset PROMPT_COMMAND; PS1='mine$ '; sleep 1; {stamp}"),
    ]
    rows = []
    for name, rc, template in cases:
        gap = Row(name, "end -> exit", "<= 2 s (VS Code: 30 s)")
        with fresh_home(rc) as home:
            stamp = Path(home, "stamp")
            command = template.format(stamp=STAMP.format(stamp=stamp))
            env = environment(home, "/bin/bash")
            for _ in range(runs):
                stamp.unlink(missing_ok=True)
                result = call([*SAFE_RUN, "--", command], env)
                gap.samples.append(result.exited_at - stamped(stamp))
                gap.outcomes.append(f"{result.outcome} strategy={result.report.get('strategy')}")
        rows.append(gap)
    return rows


def processes_running(argv: list[str]) -> list[int]:
    wanted = "\0".join(argv).encode() + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def bench_timeout(runs: int) -> tuple[Row, list[int]]:
    """The sleep's duration carries this process's pid so no one else's sleep is counted."""
    duration = f"1234.{os.getpid()}"
    row = Row("--timeout 2, sleep", "wall", "<= 3 s")
    left: list[int] = []
    with fresh_home() as home:
        env = environment(home, "/bin/bash")
        for _ in range(runs):
            result = call([*SAFE_RUN, "--timeout", "2", "--", f"sleep {duration}"], env)
            row.samples.append(result.wall_s)
            row.outcomes.append(result.outcome)
            left += processes_running(["sleep", duration])
    for pid in set(left):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return row, sorted(set(left))


def outcome_summary(outcomes: list[str]) -> str:
    counts = collections.Counter(outcomes)
    return ", ".join(f"{what} x{n}" for what, n in counts.most_common())


def print_table(rows: list[Row]) -> None:
    print(f"{'case':<28} {'measure':<25} {'median':>8} {'max':>8}  {'target':<23} outcome")
    for row in rows:
        median = statistics.median(row.samples)
        print(f"{row.case:<28} {row.measure:<25} {median:7.3f}s {max(row.samples):7.3f}s  "
              f"{row.target:<23} {outcome_summary(row.outcomes)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.runs} runs each, default --idle, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    rows = bench_syntax(args.runs)
    rows += bench_check(args.runs)
    rows += bench_input(args.runs)
    rows += bench_no_integration(args.runs)
    rows += bench_broken(args.runs)
    timeout_row, left = bench_timeout(args.runs)
    rows.append(timeout_row)
    print_table(rows)
    print(f"--timeout 2: left running: {' '.join(map(str, left)) if left else 'none'}")


if __name__ == "__main__":
    main()

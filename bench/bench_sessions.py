"""Sessions: how fast poll and send answer, and what a waiting holder costs, with references.

    .venv/bin/python bench/bench_sessions.py [--runs N] [--shell bash]

Prints, for the machine it runs on:
  poll --wait   how long after the command ends (it prints its end time) `poll --wait 30` exits,
                next to the same gap for a foreground run in this invocation
  send          a REPL round trip (`send ID 'x = 1'` until the answer is back): the whole
                `safe-run send` process and the holder's part alone (asked from this process), next
                to the start-up of `safe-run --version` (the part that is Python starting)
  idle CPU      CPU time a holder uses in 20 s while its command sleeps, while it holds an input
                wait nobody answers (--sessions of them), and a named shell's between commands
  memory        what an idle named shell's holder holds (proportional set size, and its private
                dirty pages), next to a bare interpreter asleep (`python -I -S`) started alongside
  wake          a call on a named shell left alone (its holder keeps it, and forks a worker for
                the call), next to the same call on the shell once served
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
from pathlib import Path

from private import scratch

SAFE_RUN = [sys.executable, "-m", "safe_run"]
ENDS_AT = "sleep 2; date +%s.%N"
IDLE_WINDOW_S = 20.0


def environment(home: str, shell: str) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": home, "LANG": "C.UTF-8", "TERM": "dumb", "SHELL": shell}


def call(args: list[str], env: dict[str, str]) -> dict:
    proc = subprocess.run([*SAFE_RUN, *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    return json.loads(proc.stdout)


def start(command: str, env: dict[str, str], shell: str, yield_after: float = 0.3) -> dict:
    return call(["--shell", shell, "--format", "json", "--yield-after", str(yield_after), "--", command], env)


def end_gap(result: dict, exited: float) -> float:
    return exited - float(result["output"].strip().splitlines()[-1])


def bench_poll(env: dict[str, str], shell: str, runs: int) -> None:
    polled, foreground = [], []
    for _ in range(runs):
        session = start(ENDS_AT, env, shell)["session_id"]
        result = call(["poll", session, "--wait", "30", "--format", "json"], env)
        polled.append(end_gap(result, time.time()))
        result = call(["--shell", shell, "--format", "json", "--", ENDS_AT], env)
        foreground.append(end_gap(result, time.time()))
    ours, reference = statistics.median(polled) * 1000, statistics.median(foreground) * 1000
    print(f"poll --wait  exits {ours:6.1f} ms after the command ends (max {max(polled) * 1000:.1f}; target <= 50)")
    print(f"             foreground run: {reference:6.1f} ms; ratio {ours / reference:.2f}")


def bench_send(env: dict[str, str], shell: str, runs: int) -> None:
    from safe_run.session import wire
    from safe_run.session.client import ask

    session = start("python3 -q", env, shell, yield_after=10)["session_id"]
    os.environ.pop("XDG_RUNTIME_DIR", None)  # so that this process finds the session where the CLI put it
    os.environ.pop("XDG_STATE_HOME", None)
    os.environ["HOME"] = env["HOME"]
    whole, holder, startup = [], [], []
    try:
        for index in range(runs):
            began = time.perf_counter()
            answer = call(["send", session, f"x = {index}", "--format", "json"], env)
            whole.append(time.perf_counter() - began)
            assert answer["status"] == "input_required", answer
            began = time.perf_counter()
            assert ask(session, wire.Send(text=f"y = {index}\r", wait=1.0)).status.value == "input_required"
            holder.append(time.perf_counter() - began)
            began = time.perf_counter()
            subprocess.run([*SAFE_RUN, "--version"], env=env, capture_output=True, check=True)
            startup.append(time.perf_counter() - began)
    finally:
        call(["stop", session], env)
    median = {name: statistics.median(values) * 1000 for name, values in
              (("whole", whole), ("holder", holder), ("startup", startup))}
    print(f"send         `safe-run send` process {median['whole']:6.1f} ms; holder round trip "
          f"{median['holder']:6.1f} ms (target < 100)")
    print(f"             `safe-run --version` start-up {median['startup']:6.1f} ms "
          f"(process minus start-up {median['whole'] - median['startup']:.1f} ms)")


def cpu_seconds(pid: int) -> float:
    """Time on a CPU, all threads, to the nanosecond (schedstat): the tick counts of /proc/PID/stat
    are too coarse for a process that wakes for a fraction of a millisecond."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError):
            continue
    return total / 1e9


def holder_cpu_seconds(pid: int) -> float:
    """A holder's CPU time: its own, its worker's where it keeps its shell in a keeper, and (in
    ticks) that of the workers it has collected, which handed their shell over and ended."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        collected = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime
    except (OSError, IndexError, ValueError):
        collected = 0.0
    return sum(map(cpu_seconds, holder_processes(pid))) + collected


def holder_processes(pid: int) -> list[int]:
    """The holder and the worker it forked to serve, if one serves now (`processes.keeper`)."""
    try:
        children = [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        children = []
    return [pid, *(child for child in children if _title(child).startswith(b"safe-run worker"))]


def _title(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def holder_pid(home: str, session: str) -> int:
    root = Path(home) / ".local" / "state" / "safe-run" / "sessions" / session
    return int(json.loads((root / "meta.json").read_text())["holder_pid"])


# The input waits of the idle figure: a shell's `read` and a program's password prompt.
WAITS = ("read -r x", f"{sys.executable} -c 'import getpass; getpass.getpass()'")
# What an input wait held in a session may cost while nobody answers it: a thousand of them in half a core.
HELD_WAIT_TARGET = 0.05


def bench_idle(env: dict[str, str], shell: str, sessions: int) -> None:
    """CPU of holders over IDLE_WINDOW_S: of a command that sleeps, of input waits nobody answers
    (`sessions` of them, the two kinds in turn), and of named shells between commands."""
    holders: dict[str, list[int]] = {"sleeping": [], "input wait": [], "idle shell": []}
    started: list[tuple[str, str]] = []
    for n in range(sessions):
        session = start(WAITS[n % 2], env, shell, yield_after=1)["session_id"]
        holders["input wait"].append(holder_pid(env["HOME"], session))
        started.append(("stop", session))
        call(["--in", f"idle-{n}", "--shell", shell, "--format", "json", "--", "true"], env)
        holders["idle shell"].append(shell_holder_pid(env["HOME"], f"idle-{n}"))
        started.append(("close", f"idle-{n}"))
    session = start("sleep 600", env, shell, yield_after=1)["session_id"]
    holders["sleeping"].append(holder_pid(env["HOME"], session))
    started.append(("stop", session))
    time.sleep(2)  # past the first, frequent looks
    before = {label: sum(map(holder_cpu_seconds, pids)) for label, pids in holders.items()}
    time.sleep(IDLE_WINDOW_S)
    for label, pids in holders.items():
        each = (sum(map(holder_cpu_seconds, pids)) - before[label]) / len(pids)
        target = f"   target at most {HELD_WAIT_TARGET:.2f} %" if label == "input wait" else ""
        print(f"idle CPU     holder, {label:10s} x{len(pids):<3d} {each * 1000:7.1f} ms CPU each in "
              f"{IDLE_WINDOW_S:g} s ({each / IDLE_WINDOW_S * 100:.3f} % of one core){target}")
    bench_memory(holders["idle shell"])
    bench_wake(env, shell, [name for verb, name in started if verb == "close"][:5])
    for verb, name in started:
        call([verb, name], env)


# What an idle named shell's holder may hold: 1,000 named shells in 3 GB beside their shells.
IDLE_SHELL_TARGET_MB = 3.0


def rollup(pid: int) -> dict[str, int]:
    """The process's memory totals, in kB (/proc/PID/smaps_rollup)."""
    totals = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            totals[name] = int(value.split()[0])
    return totals


def bench_memory(holders: list[int]) -> None:
    """Idle named shells' holders, after the idle window: the median of each figure, in MB (a
    holder with its worker, where one still serves)."""
    bare = subprocess.Popen([sys.executable, "-I", "-S", "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(1.0)
        reference = rollup(bare.pid)
    finally:
        bare.kill()
        bare.wait()
    pss = statistics.median(sum(rollup(p)["Pss"] for p in holder_processes(pid)) for pid in holders) / 1024
    private = statistics.median(sum(rollup(p)["Private_Dirty"] for p in holder_processes(pid)) for pid in holders) / 1024
    print(f"memory       idle named shell's holder x{len(holders)}: {pss:5.2f} MB proportional, {private:5.2f} MB "
          f"private dirty (target at most {IDLE_SHELL_TARGET_MB:g} MB proportional)")
    print(f"             a bare interpreter asleep: {reference['Pss'] / 1024:5.2f} MB proportional, "
          f"{reference['Private_Dirty'] / 1024:5.2f} MB private dirty; ratio {pss / (reference['Pss'] / 1024):.2f}")


def bench_wake(env: dict[str, str], shell: str, names: list[str]) -> None:
    """A call on a named shell its holder keeps alone (its worker handed it over, left alone past
    HIBERNATE_AFTER_S: a worker is forked for the call), next to the same call once it is served."""
    woken, served = [], []
    for name in names:
        for times in (woken, served):
            began = time.perf_counter()
            assert call(["--in", name, "--shell", shell, "--format", "json", "--", "true"], env)["status"] == "completed"
            times.append(time.perf_counter() - began)
    ours, reference = statistics.median(woken) * 1000, statistics.median(served) * 1000
    print(f"wake         a call on a shell left alone x{len(names)}: {ours:6.1f} ms; the next call {reference:6.1f} ms; "
          f"ratio {ours / reference:.2f}")


def shell_holder_pid(home: str, name: str) -> int:
    for meta in (Path(home) / ".local" / "state" / "safe-run" / "sessions").glob("*/meta.json"):
        record = json.loads(meta.read_text())
        if record.get("shell_name") == name:
            return int(record["holder_pid"])
    raise LookupError(name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shell", default="/bin/bash")
    parser.add_argument("--sessions", type=int, default=30, help="input waits and named shells held at once for the idle figures")
    args = parser.parse_args()
    with scratch("bench-sessions-") as home:
        env = environment(home, args.shell)
        bench_poll(env, args.shell, args.runs)
        bench_send(env, args.shell, args.runs * 2)
        bench_idle(env, args.shell, args.sessions)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""safe-run against the tools it replaces, each figure a ratio to its reference measured in pairs.

    .venv/bin/python bench/bench_speed.py [--pairs 7] [--calls 50] [--only NAME ...]

Each line runs the reference and safe-run in turn (A B A B ...), so that both meet the same moment
of a shared machine, and prints the median of the pairs' ratios beside the target:
  startup      `safe-run --format json -- true` with its warm process up / `python3 -c pass` of the
               same interpreter (target <= 2.5)
  rc SHELL     the same call with a user's rc file that takes 0.15 s (bash's .bashrc, zsh's .zshrc,
               fish's config.fish), calls 0.4 s apart as an agent makes them / the same call with
               --no-rc (target <= 1.5); then what the warm context's processes hold between calls
               (proportional set size, shared pages split among their sharers): the warm process,
               its spare child, the holder forked ahead and the shell it keeps
  warm run     median of CALLS `Shell.run("echo i")` in a started shell / the same through
               `pexpect.replwrap.bash()` without its send delay (target <= 3)
  100 calls    100 `Shell.run("echo i")` in a row / 100 through replwrap (target <= 3)
  json         `seq 1 3000000` as JSON: script(1)'s time / safe-run's, i.e. how many times as fast
               (target >= 1.2)
  pretty       the same as pretty output to a pipe (target >= 1.2)
  pty floor    with json or pretty: the same seq read to its end by a bare poll-and-read loop in
               this process, no safe-run at all / script(1): the most any reader of a
               pseudo-terminal gets here (the writer blocks once the terminal's buffer is full)
  json floor   the bare loop's time / safe-run's JSON run of the same seq, i.e. how near the floor
               safe-run reads (target >= 0.95)
  json pexpect pexpect reading the same seq to its end (`pexpect.spawn`, its default buffer, as
               the reference agents drive a terminal) / safe-run's JSON run (target >= 1)
  mcp          median of CALLS MCP `tools/call` of `run` in the connection's warm shell, from the
               SDK's client over stdio / the same calls to the SDK's own server whose `run` is a
               warm `Shell.run` (safe-run's tool list, its answer): the SDK's floor plus
               Shell.run, paid in one call (target <= 1); skipped without the SDK
  mcp apart    the same calls / the SDK's floor and a warm Shell.run measured apart and added up;
               lower than the composed reference, because in one call four processes share the
               cores and the server sleeps and wakes once more
  mcp floor    the SDK's own share: a tool that does nothing on the SDK's own server, with
               safe-run's tool list and answer / the median of CALLS warm `Shell.run`
Nothing here is asserted; these machines are shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import os
import select
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from private import private_environment, scratch

SEQ = "seq 1 3000000"
# The reference for the floods: script(1) running SEQ on a terminal of its own, its output dropped.
SCRIPT = ["script", "-qc", SEQ, "/dev/null"]
Pair = Callable[[], tuple[float, float]]


def whole_process(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def startup(env: dict[str, str]) -> Pair:
    safe_run = [os.path.join(os.path.dirname(sys.executable), "safe-run"), "--format", "json", "--", "true"]
    reference = [sys.executable, "-c", "pass"]
    for _ in range(3):  # the second call of a context starts the warm process
        whole_process(safe_run, env)
    time.sleep(0.5)
    return lambda: (whole_process(safe_run, env), whole_process(reference, env))


# A user's rc file that costs what pyenv's, nvm's or conda's initialisation costs.
SLOW_RC = {"bash": ".bashrc", "zsh": ".zshrc", "fish": ".config/fish/config.fish"}
RC_PACE_S = 0.4


def with_slow_rc(env: dict[str, str], shell: str) -> Pair:
    """A call with the rc and one with --no-rc, each after RC_PACE_S of quiet, as an agent calls."""
    path = os.path.join(env["HOME"], SLOW_RC[shell])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as rc:
        rc.write("sleep 0.15\n")
    called = {**env, "SHELL": f"/usr/bin/{shell}" if shell != "bash" else "/bin/bash"}
    safe_run = [os.path.join(os.path.dirname(sys.executable), "safe-run"), "--format", "json"]
    for _ in range(3):
        whole_process([*safe_run, "--", "true"], called)

    def pair() -> tuple[float, float]:
        time.sleep(RC_PACE_S)
        loaded = whole_process([*safe_run, "--", "true"], called)
        time.sleep(RC_PACE_S)
        return loaded, whole_process([*safe_run, "--no-rc", "--", "true"], called)

    return pair


def held(env: dict[str, str]) -> str:
    """What the warm context's processes hold between calls, by name, in MB of proportional set size."""
    time.sleep(1.0)  # the spare, its holder and its shell are made once a call has ended
    warm_dir = os.path.join(env["XDG_RUNTIME_DIR"], "safe-run", "warm")
    locks = [os.path.join(warm_dir, name) for name in os.listdir(warm_dir) if name.endswith(".lock")]
    with open(locks[0]) as lock:
        pids = [int(lock.read().strip())]
    names = ["warm", "spare", "holder ahead", "kept shell"]
    parts = []
    for name in names:
        if not pids:
            break
        parts.append((name, _pss_mb(pids[0])))
        pids = _children(pids[0])
    total = sum(size for _, size in parts)
    return ", ".join(f"{name} {size:.1f}" for name, size in parts) + f": {total:.1f} MB"


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as listing:
            return [int(word) for word in listing.read().split()]
    except OSError:
        return []


def _pss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    return 0.0


def drained(env: dict[str, str]) -> float:
    """SEQ on a new terminal, read to its end by a bare loop of poll and read (no safe-run at
    all): what any reader of a pseudo-terminal can reach here."""
    master, slave = os.openpty()
    started = time.perf_counter()
    child = subprocess.Popen(["sh", "-c", SEQ], stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    poller = select.poll()
    poller.register(master, select.POLLIN)
    try:
        while True:
            poller.poll()
            if not os.read(master, 1 << 16):
                break
    except OSError:  # EIO: the last writer is gone
        pass
    child.wait()
    os.close(master)
    return time.perf_counter() - started


def pexpected(env: dict[str, str]) -> float:
    """SEQ read to its end by pexpect, as an agent drives a terminal with it."""
    import pexpect

    started = time.perf_counter()
    child = pexpect.spawn("sh", ["-c", SEQ], env=env, timeout=None)
    child.expect(pexpect.EOF)
    child.close()
    return time.perf_counter() - started


def floor(env: dict[str, str]) -> Pair:
    return lambda: (whole_process(SCRIPT, env), drained(env))


def throughput(env: dict[str, str], output_format: str) -> Pair:
    safe_run = [sys.executable, "-m", "safe_run", "--format", output_format, "--", SEQ]
    whole_process(safe_run, env)
    return lambda: (whole_process(SCRIPT, env), whole_process(safe_run, env))


class Calls:
    """A started safe-run shell and a started replwrap bash, timed call by call."""

    def __init__(self) -> None:
        from pexpect import replwrap

        from safe_run import Shell

        self.shell = Shell()
        self.shell.run("true")
        self.repl = replwrap.bash()
        self.repl.child.delaybeforesend = None
        self._count = 0

    def ours(self) -> float:
        self._count += 1
        started = time.perf_counter()
        result = self.shell.run(f"echo {self._count}")
        elapsed = time.perf_counter() - started
        assert result.output == f"{self._count}\n", result
        return elapsed

    def theirs(self) -> float:
        self._count += 1
        started = time.perf_counter()
        output = self.repl.run_command(f"echo {self._count}")
        elapsed = time.perf_counter() - started
        assert output.strip() == str(self._count), output
        return elapsed

    def close(self) -> None:
        self.shell.close()
        self.repl.child.close()


def median_of(calls: int, one: Callable[[], float]) -> float:
    return statistics.median(one() for _ in range(calls))


def total_of(calls: int, one: Callable[[], float]) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        one()
    return time.perf_counter() - started


# A stdio MCP server of the SDK's own, with safe-run's tool list and answer; {tool} is its `run`.
SDK_SERVER = """
import atexit

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from safe_run import Shell
from safe_run.mcp.server import TOOLS, StdinLines, StdoutLines, _answer
from safe_run.core.result import Reason, Result, ShellInfo, Status, Strategy

RESULT = Result(Status.COMPLETED, 0, Strategy.RICH, Reason.SHELL_INTEGRATION, "true", ShellInfo("bash", "/bin/bash"),
                shell_id="0123456789abcdef01234567", shell_name="mcp-0123456789ab", cwd="/tmp", fresh=False,
                recording="/tmp/safe-run/sessions/0123456789abcdef01234567/recording.cast")
DONE = _answer(RESULT)  # the answer the server gives, both its texts and its structured content

async def listed(ctx, params):
    return types.ListToolsResult(tools=TOOLS)

{tool}

async def main():
    server = Server("floor", on_list_tools=listed, on_call_tool=called)
    answers = StdoutLines()
    async with stdio_server(stdin=StdinLines(answers), stdout=answers) as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""
# What a call costs the SDK alone, client and server: a `run` that does nothing and answers a
# completed result.
NOTHING_SERVER = SDK_SERVER.format(tool="""async def called(ctx, params):
    return DONE""")
# The SDK's floor plus Shell.run, paid in one call: a `run` that is a warm `Shell.run` of the
# command, its event loop waiting for it. Measured apart and added up, the two come out lower: in
# one call the client, the server, the shell's holder and the shell share the machine's cores, and
# the server sleeps and wakes once more.
RUN_SERVER = SDK_SERVER.format(tool="""SHELL = Shell()
atexit.register(SHELL.close)

async def called(ctx, params):
    return _answer(SHELL.run(params.arguments["command"]))""")


class Mcp:
    """An MCP client over stdio with the connection's warm shell started; None without the SDK."""

    def __init__(self, env: dict[str, str], server: list[str] | None = None) -> None:
        import anyio
        from anyio.from_thread import start_blocking_portal

        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._env = env
        self._server = server or ["-m", "safe_run", "mcp"]
        self._ready = anyio.Event()
        self._done = anyio.Event()
        self._session = None
        self._portal.start_task_soon(self._serve)
        self._portal.call(self._ready.wait)

    async def _serve(self) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(command=sys.executable, args=self._server, env=self._env)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("run", {"command": "true"})
            self._session = session
            self._ready.set()
            await self._done.wait()

    def call(self) -> float:
        async def one() -> float:
            assert self._session is not None
            started = time.perf_counter()
            result = await self._session.call_tool("run", {"command": "true"})
            elapsed = time.perf_counter() - started
            assert result.structured_content and result.structured_content["exit_code"] == 0, result
            return elapsed

        return self._portal.call(one)

    def close(self) -> None:
        self._portal.call(self._done.set)
        self._portal_cm.__exit__(None, None, None)


def paired(pairs: int, pair: Pair) -> tuple[float, float, float]:
    """Medians of A and B, and the median of the pairs' A/B ratios."""
    firsts, seconds = zip(*(pair() for _ in range(pairs)))
    return medians((list(firsts), list(seconds)))


def medians(figures: tuple[list[float], list[float]]) -> tuple[float, float, float]:
    """Medians of the firsts and the seconds, and the median of their ratios pair by pair."""
    firsts, seconds = figures
    return statistics.median(firsts), statistics.median(seconds), statistics.median(a / b for a, b in zip(firsts, seconds))


def show(name: str, a_name: str, b_name: str, figures: tuple[float, float, float], target: str, unit: float = 1000.0) -> None:
    a, b, ratio = figures
    scale = "ms" if unit == 1000.0 else "s"
    print(f"{name:10} {a_name} {a * unit:8.2f} {scale}   {b_name} {b * unit:8.2f} {scale}   ratio {ratio:5.2f}  ({target})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--only", nargs="*", default=None)
    args = parser.parse_args()
    wanted = set(args.only or ("startup", "rc", "warm", "100", "json", "pretty", "mcp"))
    with scratch("bench-speed-") as root:
        env = private_environment(root)
        env.pop("SAFE_RUN_WARM")  # the warm process is part of what is measured
        env["TERM"] = "dumb"  # as agents call it
        os.environ.update(env)
        os.environ.pop("CI", None)  # in CI no warm process is started
        print(f"{os.cpu_count()} CPUs, python {sys.version.split()[0]}, {args.pairs} pairs")
        if "startup" in wanted:
            show("startup", "safe-run", "python3 -c pass", paired(args.pairs, startup(env)), "target <= 2.5")
        if "rc" in wanted:
            for shell in SLOW_RC:
                if shutil.which(shell) is None:
                    print(f"rc {shell:7} skipped: {shell} is not installed")
                    continue
                with scratch(f"bench-rc-{shell}-") as home:
                    rc_env = private_environment(home)
                    rc_env.pop("SAFE_RUN_WARM")
                    rc_env["TERM"] = "dumb"
                    figures = paired(args.pairs, with_slow_rc(rc_env, shell))
                    show(f"rc {shell}", "0.15 s rc", "--no-rc", figures, "target <= 1.5")
                    whole_process([os.path.join(os.path.dirname(sys.executable), "safe-run"), "--format", "json",
                                   "--", "true"], {**rc_env, "SHELL": shutil.which(shell) or shell})
                    print(f"{'':10} held between calls: {held(rc_env)}")
        if wanted & {"warm", "100", "mcp"}:
            calls = Calls()
            try:
                if "warm" in wanted:
                    figures = paired(args.pairs, lambda: (median_of(args.calls, calls.ours), median_of(args.calls, calls.theirs)))
                    show("warm run", "Shell.run", "replwrap", figures, "target <= 3")
                if "100" in wanted:
                    figures = paired(args.pairs, lambda: (total_of(100, calls.ours), total_of(100, calls.theirs)))
                    show("100 calls", "Shell.run", "replwrap", figures, "target <= 3", unit=1.0)
                if "mcp" in wanted:
                    mcp_calls(args, calls, env)
            finally:
                calls.close()
        for name in ("json", "pretty"):
            if name in wanted:
                figures = paired(args.pairs, throughput(env, name))
                show(name, "script(1)", "safe-run", figures, "as fast as script(1), target >= 1.2", unit=1.0)
        if wanted & {"json", "pretty"}:
            figures = paired(args.pairs, floor(env))
            show("pty floor", "script(1)", "bare read", figures, "a loop that only reads the terminal, as fast as script(1)", unit=1.0)
        if "json" in wanted:
            json_run = [sys.executable, "-m", "safe_run", "--format", "json", "--", SEQ]
            figures = paired(args.pairs, lambda: (drained(env), whole_process(json_run, env)))
            show("json floor", "bare read", "safe-run", figures, "target >= 0.95", unit=1.0)
            figures = paired(args.pairs, lambda: (pexpected(env), whole_process(json_run, env)))
            show("json pexpect", "pexpect", "safe-run", figures, "target >= 1", unit=1.0)


def mcp_calls(args: argparse.Namespace, calls: Calls, env: dict[str, str]) -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("mcp        skipped: the MCP SDK is not installed (pip install 'safe-run[mcp]')")
        return
    servers = [Mcp(env), Mcp(env, ["-c", RUN_SERVER]), Mcp(env, ["-c", NOTHING_SERVER])]
    rows: dict[str, tuple[list[float], list[float]]] = {"mcp": ([], []), "apart": ([], []), "floor": ([], [])}
    try:
        for _ in range(args.pairs):
            call, floor_run, no_op = (median_of(args.calls, server.call) for server in servers)
            run = median_of(args.calls, calls.ours)
            for name, first, second in (("mcp", call, floor_run), ("apart", call, no_op + run), ("floor", no_op, run)):
                rows[name][0].append(first)
                rows[name][1].append(second)
    finally:
        for server in servers:
            server.close()
    show("mcp", "tools/call", "floor+run", medians(rows["mcp"]), "target <= 1: the SDK's floor plus Shell.run, in one call")
    show("mcp apart", "tools/call", "floor + run", medians(rows["apart"]), "the two measured apart and added up")
    show("mcp floor", "no-op call", "Shell.run", medians(rows["floor"]), "the SDK's own share")


if __name__ == "__main__":
    main()

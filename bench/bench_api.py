"""The Python API and the MCP server: a command in a warm shell, without a process per call.

    .venv/bin/python bench/bench_api.py [--runs 50] [--count 100] [--shell bash]

Prints, for the machine it runs on, all measured in this invocation:
  warm run      median wall of `Shell().run("true")` once the shell is started (target <= 5 ms)
  100 echoes    `echo $i` 100 times through one Shell (target <= 0.5 s), beside 100 through
                `pexpect.replwrap.bash()` (delaybeforesend=None): the totals
  mcp call      median round trip of an MCP `tools/call` of `run` for `true`, in the connection's
                warm shell, from the SDK's client over stdio (target <= 10 ms); skipped without
                the SDK
  first run     in a new process, the first `Shell().run("true")`, made PAUSE seconds after the
                `Shell()` (its fork server forks a holder ahead, with the shell started), and
                made at once; medians of RUNS/5 processes (target <= 20 ms after a pause)
  mcp first     the first `tools/call` of a new stdio connection, made PAUSE seconds after
                `initialize` and `tools/list` (its shell is not started yet, but the holder
                forked ahead is), written and read as plain JSON lines: the SDK's client spends
                30 to 150 ms of its own on a first call (it lists the tools again and compiles
                the output schema), which is not the server's
No figure here is asserted; these machines are shared, so compare ratios, not absolutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time

from private import scratch


def private_environment(root: str, shell: str) -> dict[str, str]:
    """A HOME and session store of the benchmark's own, so the user's rc files and shells stay out."""
    runtime = os.path.join(root, "run")
    os.mkdir(runtime, 0o700)
    env = {"HOME": root, "XDG_RUNTIME_DIR": runtime, "SHELL": shell, "LANG": "C.UTF-8"}
    os.environ.update(env)
    passed = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    return {**passed, **env}


def warm_run(runs: int) -> float:
    from safe_run import Shell

    with Shell() as sh:
        sh.run("true")
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            result = sh.run("true")
            times.append(time.perf_counter() - started)
            assert result.exit_code == 0, result
    return statistics.median(times)


def echoes_through_shell(count: int) -> float:
    from safe_run import Shell

    with Shell() as sh:
        sh.run("true")
        started = time.perf_counter()
        for index in range(count):
            assert sh.run(f"echo {index}").output == f"{index}\n"
        return time.perf_counter() - started


def echoes_through_replwrap(count: int) -> float | None:
    try:
        from pexpect import replwrap
    except ImportError:
        return None
    repl = replwrap.bash()
    repl.child.delaybeforesend = None
    started = time.perf_counter()
    for index in range(count):
        assert repl.run_command(f"echo {index}").strip() == str(index)
    elapsed = time.perf_counter() - started
    repl.child.close()
    return elapsed


def mcp_calls(env: dict[str, str], runs: int) -> list[float] | None:
    """The round trips of `runs` MCP calls of `run` for `true` over one new stdio connection, after
    a first call left out; None without the SDK."""
    try:
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client
    except ImportError:
        return None
    params = StdioServerParameters(command=sys.executable, args=["-m", "safe_run", "mcp"], env=env)
    times: list[float] = []

    async def main() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("run", {"command": "true"})
            for _ in range(runs):
                started = time.perf_counter()
                result = await session.call_tool("run", {"command": "true"})
                times.append(time.perf_counter() - started)
                assert result.structured_content and result.structured_content["exit_code"] == 0, result

    anyio.run(main)
    return times


def mcp_first_call(env: dict[str, str], pause: float) -> float:
    """The round trip of a new stdio connection's first `tools/call`, `pause` seconds after it was
    initialized and its tools listed, as a host does."""
    import json
    import subprocess

    server = subprocess.Popen([sys.executable, "-m", "safe_run", "mcp"], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None

    def ask(message: dict[str, object]) -> dict[str, object] | None:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline()) if "id" in message else None

    try:
        ask({"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
        ask({"method": "notifications/initialized"})
        ask({"id": 2, "method": "tools/list"})
        time.sleep(pause)
        started = time.perf_counter()
        answer = ask({"id": 3, "method": "tools/call", "params": {"name": "run", "arguments": {"command": "true"}}})
        took = time.perf_counter() - started
        assert answer is not None and answer["result"]["structuredContent"]["exit_code"] == 0, answer  # type: ignore[index]
        return took
    finally:
        server.stdin.close()
        server.wait(30)


FIRST_RUN = """
import sys, time
import safe_run
shell = safe_run.Shell()
time.sleep(float(sys.argv[1]))
started = time.perf_counter()
assert shell.run("true").exit_code == 0
print(time.perf_counter() - started)
shell.close()
"""


def first_run(pause: float, env: dict[str, str]) -> float:
    import subprocess

    out = subprocess.run([sys.executable, "-c", FIRST_RUN, str(pause)], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--shell", default="bash")
    parser.add_argument("--pause", type=float, default=0.5)
    args = parser.parse_args()
    shell = shutil.which(args.shell) or args.shell
    with scratch("bench-api-") as root:
        env = private_environment(root, shell)
        print(f"shell {shell}; {args.runs} runs; {os.cpu_count()} CPUs")
        print(f"warm run      Shell().run('true') median {warm_run(args.runs) * 1000:.2f} ms (target <= 5 ms)")
        ours = echoes_through_shell(args.count)
        theirs = echoes_through_replwrap(args.count)
        line = f"{args.count} echoes    Shell {ours:.3f} s (target <= 0.5 s)"
        line += "; replwrap not installed" if theirs is None else f"; pexpect.replwrap.bash() {theirs:.3f} s"
        print(line)
        trips = mcp_calls(env, args.runs)
        if trips is None:
            print("mcp call      skipped: the MCP SDK is not installed (pip install 'safe-run[mcp]')")
        else:
            print(f"mcp call      tools/call run 'true' median {statistics.median(trips) * 1000:.2f} ms (target <= 10 ms)")
        processes = max(5, args.runs // 5)
        paused = statistics.median(first_run(args.pause, env) for _ in range(processes))
        at_once = statistics.median(first_run(0.0, env) for _ in range(processes))
        print(f"first run     first Shell.run {args.pause:g} s after Shell() {paused * 1000:.1f} ms (target <= 20 ms); "
              f"at once {at_once * 1000:.1f} ms; medians of {processes} processes")
        if trips is not None:
            first = statistics.median(mcp_first_call(env, args.pause) for _ in range(processes))
            print(f"mcp first     a new connection's first tools/call, {args.pause:g} s after initialize: "
                  f"{first * 1000:.1f} ms (target <= 20 ms); median of {processes} connections")


if __name__ == "__main__":
    main()

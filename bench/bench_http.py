"""`safe-run mcp --http` on loopback: a command in a warm named shell, and many clients at once.

    .venv/bin/python bench/bench_http.py [--runs 50] [--clients 8] [--calls 50] [--cold 50] [--shell bash]

Prints, for the machine it runs on, all measured in this invocation:
  http call     median round trip of an MCP `tools/call` of `run` for `true` in a warm named shell,
                from the SDK's Streamable HTTP client (target <= 15 ms)
  stdio call    the same call over stdio, and the ratio http / stdio (target <= 3x)
  concurrent    CLIENTS clients at once, each with its own named shell, CALLS calls each
                (`echo CLIENT-CALL`, every output checked): total wall time and per-call median
  cold clients  COLD new connections at once, each starting its own shell for one `echo` and
                ending with DELETE (which closes it): wall time until all are done (target
                <= 3 s for 50 on 2 cores), and the ratio to one such client alone
The server runs with a HOME and session store of the benchmark's own, and every shell it started
is closed at the end. No figure here is asserted; these machines are shared, so compare ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2 as httpx  # what the SDK itself speaks HTTP with
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared._httpx_utils import create_mcp_http_client

from private import scratch

TOKEN = secrets.token_hex(16)
BOUND_S = 60.0


def private_environment(root: str, shell: str) -> dict[str, str]:
    runtime = os.path.join(root, "run")
    os.mkdir(runtime, 0o700)
    env = {"HOME": root, "XDG_RUNTIME_DIR": runtime, "TMPDIR": root, "SHELL": shell, "LANG": "C.UTF-8"}
    passed = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    return {**passed, **env}


def start_server(root: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    """The server on a free loopback port, and its URL once it says where it serves."""
    log = os.path.join(root, "server.log")
    with open(log, "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "safe_run", "mcp", "--http", "127.0.0.1:0"], env={**env, "SAFE_RUN_MCP_TOKEN": TOKEN},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
        )
    deadline = time.monotonic() + BOUND_S
    while not (found := re.search(r"serving MCP at (\S+)", open(log).read())):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: {open(log).read()}")
        time.sleep(0.05)
    return proc, found.group(1)


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def timed_calls(session: ClientSession, arguments: dict[str, Any], runs: int) -> list[float]:
    await session.call_tool("run", arguments)  # starts the shell
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await session.call_tool("run", arguments)
        times.append(time.perf_counter() - started)
        assert result.structured_content and result.structured_content["exit_code"] == 0, result
    return times


async def http_median(url: str, runs: int) -> float:
    async with http_session(url) as session:
        times = await timed_calls(session, {"command": "true", "shell_name": "bench-warm"}, runs)
        await session.call_tool("close", {"shell_name": "bench-warm"})
    return statistics.median(times)


async def stdio_median(env: dict[str, str], runs: int) -> float:
    params = StdioServerParameters(command=sys.executable, args=["-m", "safe_run", "mcp"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        times = await timed_calls(session, {"command": "true", "shell_name": "bench-stdio"}, runs)
        await session.call_tool("close", {"shell_name": "bench-stdio"})
    return statistics.median(times)


async def concurrent(url: str, clients: int, calls: int) -> tuple[float, list[float], int]:
    """Every client on its own shell at once; the wall time, each call's time, and wrong answers."""
    times: list[float] = []
    wrong = 0

    async def one(index: int) -> None:
        nonlocal wrong
        name = f"bench-{index}"
        async with http_session(url) as session:
            await session.call_tool("run", {"command": "true", "shell_name": name})
            for call in range(calls):
                started = time.perf_counter()
                result = await session.call_tool("run", {"command": f"echo {index}-{call}", "shell_name": name})
                times.append(time.perf_counter() - started)
                answer = result.structured_content or {}
                if answer.get("status") != "completed" or answer.get("output") != f"{index}-{call}\n":
                    wrong += 1
            await session.call_tool("close", {"shell_name": name})

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(clients):
            group.start_soon(one, index)
    return time.perf_counter() - started, times, wrong


async def cold(url: str, clients: int) -> tuple[float, int]:
    """CLIENTS new connections at once, each running one command in the shell the server starts
    for it, then ending its connection; the wall time until every one has its answer, and the
    wrong answers. Each client speaks the protocol itself (initialize, initialized, tools/call,
    DELETE) on connections of one pool: the SDK's client costs about 50 ms of CPU per client,
    which on a 2-core machine would measure the benchmark, not the server."""
    wrong = 0

    async def one(client: httpx.AsyncClient, index: int) -> None:
        nonlocal wrong
        opened = await client.post(url, json=rpc("initialize", INITIALIZE, 1))
        headers = {MCP_SESSION_ID_HEADER: opened.headers[MCP_SESSION_ID_HEADER], "MCP-Protocol-Version": PROTOCOL}
        await client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        called = await client.post(
            url, json=rpc("tools/call", {"name": "run", "arguments": {"command": f"echo cold-{index}"}}, 2), headers=headers,
        )
        answer = rpc_result(called).get("structuredContent") or {}
        if answer.get("status") != "completed" or answer.get("output") != f"cold-{index}\n":
            wrong += 1
        await client.delete(url, headers=headers)

    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": ACCEPT}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(headers=headers, timeout=BOUND_S, limits=limits) as client:
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index in range(clients):
                group.start_soon(one, client, index)
        return time.perf_counter() - started, wrong


ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"
INITIALIZE = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def rpc(method: str, params: dict[str, Any], ident: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def rpc_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a response sent as JSON or as one server-sent event."""
    text = response.text
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        text = "".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    result: dict[str, Any] = json.loads(text).get("result", {})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--cold", type=int, default=50, help="clients starting their shells at once")
    parser.add_argument("--shell", default="bash")
    args = parser.parse_args()
    shell = shutil.which(args.shell) or args.shell
    with scratch("bench-http-") as root:
        env = private_environment(root, shell)
        proc, url = start_server(root, env)
        try:
            print(f"shell {shell}; {args.runs} runs; {os.cpu_count()} CPUs; {url}")
            http = anyio.run(http_median, url, args.runs)
            print(f"http call     tools/call run 'true' in a warm named shell, median {http * 1000:.2f} ms (target <= 15 ms)")
            stdio = anyio.run(stdio_median, env, args.runs)
            print(f"stdio call    the same over stdio, median {stdio * 1000:.2f} ms; http/stdio {http / stdio:.2f}x (target <= 3x)")
            total, times, wrong = anyio.run(concurrent, url, args.clients, args.calls)
            calls = args.clients * args.calls
            print(
                f"concurrent    {args.clients} clients x {args.calls} calls on {args.clients} shells: {calls - wrong}/{calls} right, "
                f"total {total:.2f} s, per call median {statistics.median(times) * 1000:.2f} ms"
            )
            alone, _ = anyio.run(cold, url, 1)
            total, wrong = anyio.run(cold, url, args.cold)
            print(
                f"cold clients  {args.cold} new connections at once, each starting its shell: {args.cold - wrong}/{args.cold} right, "
                f"wall {total:.2f} s (target <= 3 s); one alone {alone:.2f} s; {total / alone:.1f}x one"
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(BOUND_S)


if __name__ == "__main__":
    main()

"""A process with more than 1024 descriptors open (an agent host with many connections) can use
every front end: select() refuses such descriptor numbers, so every wait polls instead.

Each part runs in a process of its own that first fills descriptors 3 to 1103, so that whatever
safe-run opens afterwards (its terminal, pidfds, pipes, sockets) is numbered above 1024.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import shell_path

FILL = 1100

# Descriptors 3.. FILL+2 held open (inheritable, for a server started with exec), then `code`.
OPEN_MANY = f"""
import os, resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < {FILL + 200}:
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, {FILL + 1000}), hard))
null = os.open(os.devnull, os.O_RDONLY)
for number in range(3, {FILL + 3}):
    if number != null:
        os.dup2(null, number, inheritable=True)
"""

THROUGH_THE_API = """
import json, safe_run
from safe_run import Session, Shell
answers = {}
answers["run"] = safe_run.run("echo hi").output
started = safe_run.run("sleep 0.3; echo later", yield_after=0.05)
answers["session"] = Session.of(started).poll(wait=20).output if started.session_id else started.output
with Shell() as shell:
    shell.run("cd /")
    answers["shell"] = shell.run("pwd; echo named").output
print(json.dumps(answers))
"""


def environment(tmp_path: Path) -> dict[str, str]:
    home, runtime, tmpdir = tmp_path / "home", tmp_path / "run", tmp_path / "tmp"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    tmpdir.mkdir()
    return {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime),
            "TMPDIR": str(tmpdir), "LANG": "C.UTF-8", "SHELL": shell_path("bash"), "SAFE_RUN_WARM": "0"}


def test_the_api_a_session_and_a_named_shell_work_above_descriptor_1024(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", OPEN_MANY + THROUGH_THE_API], env=environment(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    answers = json.loads(proc.stdout)
    assert answers == {"run": "hi\n", "session": "later\n", "shell": "/\nnamed\n"}, answers


def test_the_command_line_and_its_session_verbs_work_above_descriptor_1024(tmp_path: Path) -> None:
    env = environment(tmp_path)
    cli = OPEN_MANY + "import sys; from safe_run.cli.main import main; main(sys.argv[1:])"
    first = subprocess.run([sys.executable, "-c", cli, "--format", "json", "--yield-after", "0.05", "--",
                            "sleep 0.3; echo later"], env=env, capture_output=True, text=True, timeout=60)
    started = json.loads(first.stdout)
    assert started["status"] in ("running", "completed"), first.stderr
    if started["session_id"]:
        polled = subprocess.run([sys.executable, "-c", cli, "poll", started["session_id"], "--wait", "20"],
                                env=env, capture_output=True, text=True, timeout=60)
        assert json.loads(polled.stdout)["output"] == "later\n", polled.stderr


def test_the_mcp_server_works_above_descriptor_1024(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = OPEN_MANY + "sys.argv[1:] = ['mcp']; from safe_run.cli.main import main; main(sys.argv[1:])"
    params = StdioServerParameters(command=sys.executable, args=["-c", server], env=environment(tmp_path),
                                   cwd=str(tmp_path))

    async def test() -> None:
        with anyio.fail_after(60):
            async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                answer = await session.call_tool("run", {"command": "echo through mcp"})
                assert answer.structured_content is not None, answer.content
                assert answer.structured_content["output"] == "through mcp\n", answer.structured_content

    anyio.run(test)

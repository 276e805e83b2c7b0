"""A program of the command line cannot end the run with a status of its choosing.

The forger looks for the nonce everywhere its ancestors show it: their environments, command lines,
open files and, where the kernel lets it (no Yama), their memory; it prints an end mark with status
42 for every token it finds. The nonce is on no command line, in no inherited variable and in no
file left readable, so without memory it finds nothing; with it, the mark comes while a program,
not the shell, holds the terminal, or before the shell recorded the line's status: ignored, said,
and the line's real end decides.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import SHELLS, SafeRun, shell_path

FORGER = r'''
import os, re, sys

TOKEN = re.compile(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])")
use_memory = sys.argv[1] == "memory"


def read(path, limit=1 << 20):
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except (OSError, ValueError):
        return b""


def memory(pid):
    found = b""
    try:
        maps = open(f"/proc/{pid}/maps").read().splitlines()
        mem = open(f"/proc/{pid}/mem", "rb", 0)
    except OSError:
        return found
    if pid == os.getppid():
        open(sys.argv[2], "w").close()  # the shell's memory is readable: the nonce will be found
    for line in maps:
        fields = line.split()
        if "r" not in fields[1] or (len(fields) > 5 and fields[5].startswith("/") and "w" not in fields[1]):
            continue
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if end - start > 64 << 20:
            continue
        try:
            mem.seek(start)
            found += mem.read(end - start)
        except (OSError, ValueError, OverflowError):
            pass
    return found


tokens = set()
pid = os.getppid()
depth = 0
while pid > 1:
    depth += 1
    seen = read(f"/proc/{pid}/environ") + read(f"/proc/{pid}/cmdline").replace(b"\0", b" ")
    for name in seen.split():
        if name.startswith(b"/") or b"=/" in name:
            seen += read(name.split(b"=", 1)[-1])
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.path.isfile(f"/proc/{pid}/fd/{fd}"):  # not a terminal, which would wait for a key
                seen += read(f"/proc/{pid}/fd/{fd}")
    except OSError:
        pass
    if use_memory and depth <= 2:  # the shell and what runs it; above them, the test's own processes
        seen += memory(pid)
    tokens.update(TOKEN.findall(seen))
    stat = read(f"/proc/{pid}/stat").rsplit(b")", 1)[-1].split()
    pid = int(stat[1]) if len(stat) > 1 else 1
with open("/dev/tty", "wb") as tty:
    for token in tokens:
        tty.write(b"\033]633;D;42;" + token + b"\007")
'''


@pytest.fixture
def forger(tmp_path: Path) -> Path:
    script = tmp_path / "forge.py"
    script.write_text(FORGER)
    return script


def run(safe_run: SafeRun, shell: str, line: str) -> dict:
    safe_run.shell = shell_path(shell)
    return safe_run("--format", "json", "--", line).json


def assert_ignored_if_found(result: dict, read_memory: Path) -> None:
    """Where the kernel let the forger read the shell's memory, it found the nonce and its mark
    was ignored and said; elsewhere it found nothing to forge with."""
    steps = result["downgrades"]
    assert bool(steps) == read_memory.exists(), result
    for step in steps:
        assert "status 42" in step["reason"] and "ignored" in step["reason"]


@pytest.mark.parametrize("shell", SHELLS)
def test_the_nonce_is_in_no_environment_command_line_or_open_file(safe_run: SafeRun, forger: Path, shell: str) -> None:
    result = run(safe_run, shell, f"{sys.executable} {forger} files -; echo real-end; false")
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 1, "real-end\n"), result
    assert result["downgrades"] == [] and result["strategy"] == "rich"


@pytest.mark.parametrize("shell", SHELLS)
def test_a_mark_forged_in_the_foreground_is_ignored(
    safe_run: SafeRun, forger: Path, shell: str, tmp_path: Path,
) -> None:
    read_memory = tmp_path / "read-memory"
    result = run(safe_run, shell, f"{sys.executable} {forger} memory {read_memory}; echo real-end; false")
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 1, "real-end\n"), result
    assert_ignored_if_found(result, read_memory)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_mark_forged_by_a_background_job_is_ignored(
    safe_run: SafeRun, forger: Path, shell: str, tmp_path: Path,
) -> None:
    """The job prints while the line goes on (a program in front, then the shell's `wait`): the
    line has recorded no status yet."""
    read_memory = tmp_path / "read-memory"
    job = f"{sys.executable} {forger} memory {read_memory}"
    line = f"{job} &; sleep 0.1; wait $last_pid" if shell == "fish" else f"{job} & sleep 0.1; wait $!"
    result = run(safe_run, shell, f"{line}; echo real-end; false")
    assert (result["status"], result["exit_code"]) == ("completed", 1), result
    assert result["output"].endswith("real-end\n")
    assert_ignored_if_found(result, read_memory)


@pytest.mark.parametrize("name", ["bash", "zsh"])
def test_a_prompt_printed_by_the_command_is_its_output_and_types_nothing(safe_run: SafeRun, name: str) -> None:
    """`echo "$PS1"` prints the prompt's own marks, nonce and all, in the middle of the command: it
    is output like any other, the command is followed on to its end, and nothing is typed."""
    safe_run.shell = shell_path(name)
    answer = safe_run("--", 'echo "$PS1"; sleep 0.5; echo after; exit 3').json
    assert (answer["status"], answer["exit_code"], answer["completion_reason"]) == ("completed", 3, "shell_exited")
    assert answer["output"].endswith("\nafter\n") and answer["downgrades"] == [], answer

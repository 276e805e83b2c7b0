"""The pure modules stay pure: the evidence rules, the tracker, output cleaning and rendering import
nothing that reads a clock, a descriptor or /proc, directly or through another safe-run module.

Read from the source (every import, also those inside functions), so the test needs no process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "safe_run"

# Decisions and text: tested in microseconds, and what another platform's observer reuses.
PURE = ["evidence", "reading", "tracker", "output", "escapes", "sequences", "screen", "render", "events", "result", "request"]
# What does the I/O: the terminal, /proc, descriptors, signals, files, sockets, clocks.
IO_MODULES = {
    "kernel", "terminal", "spawn", "polling", "runner", "loop", "cleanup", "workdir", "interrupts",
    "transcript", "places", "process_title", "session", "warm", "commands", "cli", "api", "mcp_server",
    "mcp_http", "remote", "shells", "doctor", "syntax", "display",
}
IO_STDLIB = {"os", "select", "selectors", "socket", "subprocess", "termios", "fcntl", "pty", "time", "threading"}
# Built once by a front end from the process's streams and variables, then handed in: what the
# pure modules get is a value, so its own way of being built is not followed.
INJECTED = {"environment"}


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """The safe-run modules (first part of the name under the package) and the outside modules
    that `module` imports anywhere in its text."""
    path = PACKAGE / f"{module}.py"
    ours: set[str] = set()
    outside: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                names = [node.module] if node.module else [alias.name for alias in node.names]
                ours.update(name.split(".")[0] for name in names)
            elif node.module:
                outside.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            outside.update(alias.name.split(".")[0] for alias in node.names)
    return ours, outside


def reached_from(module: str) -> tuple[set[str], set[str]]:
    """Every safe-run module `module` reaches through imports, and every outside module they import."""
    seen: set[str] = set()
    outside: set[str] = set()
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name in INJECTED or not (PACKAGE / f"{name}.py").is_file():
            continue  # a value handed in, or a package: named in IO_MODULES or not pure anyway
        ours, theirs = imports_of(name)
        outside |= theirs
        todo.extend(ours - seen)
    return seen, outside


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_reaches_no_io(module: str) -> None:
    ours, outside = reached_from(module)
    assert not ours & IO_MODULES, f"{module} reaches {sorted(ours & IO_MODULES)}"
    assert not outside & IO_STDLIB, f"{module} reaches {sorted(outside & IO_STDLIB)}"


def test_the_kernel_reader_takes_its_rules_from_the_evidence() -> None:
    """The arrows of the engine: rules <- tracker <- run loop -> kernel reader."""
    assert "evidence" in imports_of("kernel")[0]
    assert "kernel" not in imports_of("tracker")[0]
    assert {"tracker", "kernel"} <= imports_of("runner")[0]

"""The pure modules stay pure: the evidence rules, the tracker, output cleaning and rendering import
nothing that reads a clock, a descriptor or /proc, directly or through another safe-run module.

Read from the source (every import, also those inside functions), so the test needs no process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "safe_run"

# Decisions and text: tested in microseconds, and what another platform's observer reuses. A
# module of a package is named with dots: a holder's answers are shaped without its socket.
PURE = [
    "evidence", "reading", "tracker", "output", "escapes", "relay", "sequences", "screen", "render", "events", "result",
    "request",
    "session.answers", "session.phrases",
]
# What does the I/O: the terminal, /proc, descriptors, signals, files, sockets, clocks; a package
# named here does it in all its modules but those named in PURE and its own `__init__`.
IO_MODULES = {
    "kernel", "terminal", "spawn", "polling", "runner", "loop", "cleanup", "workdir", "interrupts",
    "transcript", "places", "process_title", "session", "warm", "commands", "cli", "api", "mcp_server",
    "mcp_http", "remote", "shells", "doctor", "syntax", "display",
}
IO_STDLIB = {"os", "select", "selectors", "socket", "subprocess", "termios", "fcntl", "pty", "time", "threading"}
# Built once by a front end from the process's streams and variables, then handed in: what the
# pure modules get is a value, so its own way of being built is not followed.
INJECTED = {"environment"}


def source_of(module: str) -> Path | None:
    """The file of a module named with dots under the package (a package's `__init__`)."""
    base = PACKAGE.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


# Packages whose `__init__` is pure though their modules do I/O: reaching the package for a helper
# (`session.with_note`) is not reaching its sockets.
PURE_PACKAGES_OF_IO = {"session"}


def does_io(module: str) -> bool:
    package = module.split(".")[0]
    if package not in IO_MODULES or module in PURE:
        return False
    return not (module == package and package in PURE_PACKAGES_OF_IO)


def imports_of(module: str) -> tuple[set[str], set[str]]:
    """The safe-run modules (named with dots under the package) and the outside modules (first part
    of the name) that `module` imports anywhere in its text."""
    path = source_of(module)
    assert path is not None, module
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    ours: set[str] = set()
    outside: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                if node.module:
                    base = [*base, *node.module.split(".")]
                for alias in node.names:  # a module of the package, or a name its `__init__` holds
                    inner = ".".join([*base, alias.name])
                    ours.add(inner if source_of(inner) is not None else ".".join(base))
            elif node.module:
                outside.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            outside.update(alias.name.split(".")[0] for alias in node.names)
    ours.discard("")  # `from .. import TYPE_CHECKING`: the package's own `__init__`, which holds nothing else
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
        if name in INJECTED or does_io(name) or source_of(name) is None:
            continue  # a value handed in, or what does I/O: reported, not followed
        ours, theirs = imports_of(name)
        outside |= theirs
        todo.extend(ours - seen)
    return seen, outside


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_reaches_no_io(module: str) -> None:
    ours, outside = reached_from(module)
    io = sorted(name for name in ours if does_io(name))
    assert not io, f"{module} reaches {io}"
    assert not outside & IO_STDLIB, f"{module} reaches {sorted(outside & IO_STDLIB)}"


def test_the_kernel_reader_takes_its_rules_from_the_evidence() -> None:
    """The arrows of the engine: rules <- tracker <- run loop -> kernel reader."""
    assert "evidence" in imports_of("kernel")[0]
    assert "kernel" not in imports_of("tracker")[0]
    assert {"tracker", "kernel"} <= imports_of("runner")[0]

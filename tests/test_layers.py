"""The core stays pure: every module in `core/` (the evidence rules, the tracker, output cleaning,
rendering, the result, a holder's answers) imports only other modules of the core, and nothing
that reads a clock, a descriptor or /proc.

Read from the source (every import, also those inside functions), so the test needs no process.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "safe_run"
CORE = "core"
# What the core may import from the standard library and beyond: nothing that reads a clock, a
# descriptor or /proc.
IO_STDLIB = {"os", "select", "selectors", "socket", "subprocess", "termios", "fcntl", "pty", "time", "threading", "sys"}
# Built once by a front end from the process's streams and variables, then handed in: what the
# core gets is a value, so its own way of being built is not followed.
INJECTED = {"environment"}


def core_modules() -> list[str]:
    """Every module of the core folder, found on disk: a new one is held to the rule the day it is made."""
    return sorted(f"{CORE}.{path.stem}" for path in (PACKAGE / CORE).glob("*.py") if path.stem != "__init__")


def source_of(module: str) -> Path | None:
    """The file of a module named with dots under the package (a package's `__init__`)."""
    base = PACKAGE.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


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


def test_the_core_is_a_folder_of_its_own() -> None:
    assert {"core.tracker", "core.evidence", "core.output", "core.result", "core.answers"} <= set(core_modules())


@pytest.mark.parametrize("module", core_modules())
def test_a_core_module_imports_only_the_core(module: str) -> None:
    ours, outside = imports_of(module)
    beyond = sorted(name for name in ours if name.split(".")[0] != CORE and name not in INJECTED)
    assert not beyond, f"{module} imports {beyond}, outside the core"
    assert not outside & IO_STDLIB, f"{module} imports {sorted(outside & IO_STDLIB)}"


def test_the_kernel_reader_takes_its_rules_from_the_evidence() -> None:
    """The arrows of the engine: rules <- tracker <- run loop -> kernel reader."""
    assert "core.evidence" in imports_of("engine.kernel")[0]
    assert "engine.kernel" not in imports_of("core.tracker")[0]
    assert {"core.tracker", "engine.kernel"} <= imports_of("engine.runner")[0]

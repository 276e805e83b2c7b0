"""No function of the package is too branched to read at once: radon's grade D (a cyclomatic
complexity over 20) or worse fails. A dispatcher that grows past that becomes a table from what it
is given to the function that handles it, as the tracker's `HANDLERS` are.

Read from the source, so the test needs no process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from radon.complexity import cc_rank, cc_visit
from radon.visitors import Function

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "safe_run"
WORST_GRADE = "C"


def grades(path: Path) -> list[tuple[str, int, str]]:
    """Each function and method of a file (classes are not graded): its name, first line and grade."""
    return [
        (block.fullname, block.lineno, cc_rank(block.complexity))
        for block in cc_visit(path.read_text(encoding="utf-8")) if isinstance(block, Function)
    ]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_function_is_graded_worse_than_c(path: Path) -> None:
    worse = [f"{name} (line {line}): {grade}" for name, line, grade in grades(path) if grade > WORST_GRADE]
    assert not worse, f"{path.relative_to(PACKAGE)}: {worse}"

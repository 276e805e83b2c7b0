"""The check command run in each shell, its bounds, and what its output says.

It prints the program that actually runs it (Linux /proc; nothing elsewhere), so that a shell
replaced by an rc file's `exec` is named, and, where a shell can list them, the names the user's
files define (functions, aliases, exported variables), one `name:` line each. It always exits 0.
"""

from __future__ import annotations

from ..core.result import Downgrade, Result, Status, Strategy
from ..shells import fish, posix
from ..shells.registry import kind_of
from ..core.request import Timers
from ..core.tracker import NO_KERNEL_VIEW

# A check may take the activation time of a real run, and a little more; never longer than this.
CHECK_TIMERS = Timers(timeout=20.0)

POSIX_PROBE = posix.SHELL.doctor.exe_probe
FISH_PROBE = fish.SHELL.doctor.exe_probe
NAME_LINE = "name:"


def best_strategy(name: str) -> Strategy:
    """What a run can get at best: rich with integration (bash, zsh, fish), none without."""
    return Strategy.RICH if kind_of(name).integrated else Strategy.NONE


def gets_best(result: Result, best: Strategy) -> bool:
    """Whether the check command ran as it should, with the best strategy and nothing lost."""
    return (
        result.status is Status.COMPLETED
        and result.exit_code == 0
        and result.strategy is best
        and not steps_down(result)
    )


def steps_down(result: Result) -> list[Downgrade]:
    """What the run lost on its way. The kernel's view missing is the machine's, not the shell's:
    doctor says it once for all (`verdict.kernel_view`)."""
    return [step for step in result.downgrades if step.reason != NO_KERNEL_VIEW]


def probe(name: str) -> str:
    """The check command for this shell: the names its files define, then the program running it."""
    facts = kind_of(name).doctor
    return facts.names_probe + facts.exe_probe


def defined_names(output: str) -> frozenset[str]:
    """The names listed by the check command's `name:` lines."""
    return frozenset(line[len(NAME_LINE):].strip() for line in output.splitlines() if line.startswith(NAME_LINE))


def reported_zdotdir(result: Result) -> str | None:
    """The ZDOTDIR a zsh run ended up with, from the check command's `zdotdir:` line."""
    for line in result.output.splitlines():
        if line.startswith("zdotdir:"):
            return line[len("zdotdir:"):] or None
    return None


def runs_as(result: Result) -> str | None:
    """The program that ran the check command, from its own output (None if it could not tell)."""
    for line in reversed(result.output.splitlines()):
        line = line.strip().removesuffix(" (deleted)")
        if line.startswith("/"):
            return line
    return None


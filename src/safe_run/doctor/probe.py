"""The check command run in each shell, its bounds, and what its output says.

It prints the program that actually runs it (Linux /proc; nothing elsewhere), so that a shell
replaced by an rc file's `exec` is named, and, where a shell can list them, the names the user's
files define (functions, aliases, exported variables), one `name:` line each. It always exits 0.
"""

from __future__ import annotations

from ..result import Result, Status, Strategy
from ..runner import INTEGRATED
from ..tracker import Timers

# A check may take the activation time of a real run, and a little more; never longer than this.
CHECK_TIMERS = Timers(timeout=20.0)

POSIX_PROBE = "command readlink /proc/$$/exe 2>/dev/null; true"
FISH_PROBE = "command readlink /proc/$fish_pid/exe 2>/dev/null; true"
NAMES_PROBES = {
    "bash": "builtin printf 'name:%s\\n' $(builtin compgen -A function -A alias -A export); ",
    "zsh": "builtin printf 'name:%s\\n' ${(k)functions} ${(k)aliases} ${(k)parameters[(R)*export*]}; "
           "builtin printf 'zdotdir:%s\\n' \"${ZDOTDIR-}\"; ",
    "fish": "printf 'name:%s\\n' (functions -a -n) (set -xn); ",
}
NAME_LINE = "name:"


def best_strategy(name: str) -> Strategy:
    """What a run can get at best: rich with integration (bash, zsh, fish), none without."""
    return Strategy.RICH if name in INTEGRATED else Strategy.NONE


def gets_best(result: Result, best: Strategy) -> bool:
    """Whether the check command ran as it should, with the best strategy and nothing lost."""
    return (
        result.status is Status.COMPLETED
        and result.exit_code == 0
        and result.strategy is best
        and not result.downgrades
    )


def probe(name: str) -> str:
    """The check command for this shell: the names its files define, then the program running it."""
    return NAMES_PROBES.get(name, "") + (FISH_PROBE if name == "fish" else POSIX_PROBE)


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


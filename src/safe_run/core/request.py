"""What a caller decides about a run: the command, where and how it runs, and its time limits.

Kept apart from the engine so that a call that only hands a request to a session (a persistent
shell's next command) does not load the engine to build it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, BinaryIO, Literal, get_args

# What a caller may ask for: a strategy (result.Strategy), or `auto` to step down as needed.
StrategyChoice = Literal["auto", "rich", "basic", "none"]
STRATEGY_CHOICES: tuple[StrategyChoice, ...] = get_args(StrategyChoice)
# The emulated terminal's size (rows, columns).
DEFAULT_SIZE = (50, 200)
# What a terminal that reports no size is taken for: a pseudo-terminal nobody sized (`script`
# started from a non-terminal, some CI runners) says 0x0, and programs then assume 80x24.
UNSIZED = (24, 80)
# A persistent shell left without a command this long closes itself.
DEFAULT_IDLE_EXPIRE_S = 3600.0
# ... but an MCP connection's own shell sooner: a client that never ends its session leaves it.
DEFAULT_CONNECTION_IDLE_S = 600.0
# A session's input wait that no call asked about (and nobody is attached to) this long is stopped:
# an agent that never comes back is common, and a prompt left open holds what its program holds
# (apt's dpkg lock, a half-made commit). Minutes, not the hour a shell between commands is kept.
DEFAULT_WAIT_EXPIRE_S = 600.0


def sized(rows: int, columns: int) -> tuple[int, int]:
    """A person's terminal's size as the command's terminal takes it: each side it does not
    report (0) is the side programs assume then."""
    return rows or UNSIZED[0], columns or UNSIZED[1]


@dataclass(frozen=True)
class Timers:
    """Every fallback delay, in seconds; those a caller may need to change are command-line options."""

    activation: float = 10.0  # the shell must show it is ready within this
    idle: float = 0.5  # quiet this long before the kernel's or the screen's word is taken
    listen: float = 1.0  # in a session, quiet this long at its prompt before a keyboard listener is reported
    silence: float = 30.0  # no output this long, and nothing can tell whether the command still runs
    no_output: float = 10.0  # not a byte since the command was typed, and nothing can tell
    fetch: float = 2.0  # waiting for the answer to an exit-status question
    answer: float = 0.05  # after an answer was typed, quiet this long before the kernel's word on a new wait
    timeout: float | None = None  # the caller's hard limit for the whole run


TIMER_NAMES = frozenset(item.name for item in fields(Timers))


@dataclass(frozen=True)
class RunRequest:
    """Everything the caller decided about one run."""

    command: str
    shell: str | None = None
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    load_rc: bool = True
    strategy: StrategyChoice = "auto"
    timers: Timers = field(default_factory=Timers)
    batch_env: bool = True
    keep_background: bool = False
    max_output: int = 1024 * 1024
    size: tuple[int, int] = DEFAULT_SIZE
    log: BinaryIO | None = None
    hold_on_input: bool = False  # a session: report input waits and keep the command for answers
    interactive: bool = False  # a person's own terminal runs it: their keys and screen (see display.interactive)
    # A persistent shell closes after this long without a command (None: never).
    idle_expire: float | None = DEFAULT_IDLE_EXPIRE_S
    # A session: a held input wait nobody asked about for this long is stopped (None: never).
    wait_expire: float | None = DEFAULT_WAIT_EXPIRE_S
    # Whose words the session's answers use for the next steps: "cli" (the command line's, also the
    # library's) or "mcp" (the tools').
    caller: str = "cli"
    # This process's descriptor that the command reads as its standard input (`--stdin`), instead
    # of its terminal; None: the terminal, as at a prompt. A run in this process only.
    stdin: int | None = None


@dataclass(frozen=True)
class Scope:
    """A named shell's later command's own directory and variables: they end with the command."""

    cwd: str | None = None
    env: dict[str, str] | None = None

    @property
    def empty(self) -> bool:
        return self.cwd is None and self.env is None


def request_to_dict(request: RunRequest) -> dict[str, Any]:
    """The request as JSON data, for a holder started as a new process (the log goes as a
    descriptor; a given standard input never goes to a holder)."""
    data = {item.name: getattr(request, item.name) for item in fields(request) if item.name not in ("log", "stdin")}
    data["timers"] = asdict(request.timers)
    return data


def timers_from_dict(data: dict[str, Any]) -> Timers:
    """Timers sent as JSON; names that are not timers are left out."""
    return Timers(**{name: value for name, value in data.items() if name in TIMER_NAMES})


def request_from_dict(data: dict[str, Any], log: BinaryIO | None) -> RunRequest:
    given = dict(data)
    given["timers"] = timers_from_dict(given["timers"])
    given["size"] = tuple(given["size"])
    return RunRequest(**given, log=log)

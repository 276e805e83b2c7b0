"""The result contract: what a run reports, and how that maps to safe-run's own exit status.

Everything a caller may rely on lives here, so the JSON, the pretty summary and the exit status
cannot disagree with each other.
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict, dataclass, field, fields
from enum import Enum, IntEnum
from typing import Any

SCHEMA_VERSION = 1


class Status(str, Enum):
    """How the run ended, from the caller's point of view."""

    COMPLETED = "completed"
    TIMEOUT = "timeout"
    SYNTAX_ERROR = "syntax_error"
    INPUT_REQUIRED = "input_required"
    INTERRUPTED = "interrupted"
    RUNNING = "running"
    ERROR = "error"
    BUSY = "busy"  # a persistent shell was running another command: nothing ran
    CLOSED = "closed"  # `safe-run close` ended a persistent shell (killed: what that ended)


class Strategy(str, Enum):
    """Which kind of evidence decided the end of the command."""

    RICH = "rich"
    BASIC = "basic"
    NONE = "none"


class Reason(str, Enum):
    """The exact signal that decided the end; fallbacks name themselves here."""

    SHELL_INTEGRATION = "shell_integration"  # this run's nonce-marked D, from the integration
    SENTINEL = "sentinel"  # the exit status the typed line itself left: its marked echo, or its file
    SHELL_EXITED = "shell_exited"  # the command ended the shell itself (exit, exec, set -e)
    FOREGROUND_RETURNED = "foreground_returned"  # the kernel: a shell the command `exec`ed waits
    PROMPT_IDLE = "prompt_idle"  # a trusted prompt mark without D
    NO_OUTPUT_FALLBACK = "no_output_fallback"  # nothing at all after typing, and nothing could tell
    EXECUTING_IDLE_FALLBACK = "executing_idle_fallback"  # long silence, and nothing could tell
    SYNTAX_CHECK = "syntax_check"  # the shell's no-execute check refused the command
    CONTINUATION_PROMPT = "continuation_prompt"  # the shell asked for the rest of an unfinished command
    INPUT_WAIT = "input_wait"  # the command waited for input from the terminal
    ALTERNATE_SCREEN = "alternate_screen"  # a full-screen program (pager, editor) waited for keys
    TIMEOUT = "timeout"  # --timeout expired
    INTERRUPTED = "interrupted"  # safe-run itself got SIGINT or SIGTERM
    STOPPED = "stopped"  # `safe-run stop` ended a session's command
    PROCESS_STOPPED = "process_stopped"  # the command or its shell was stopped by a signal (state T)
    ERROR = "error"  # safe-run could not carry out the run
    BUSY = "busy"  # a persistent shell was running another command, so this one was not run
    CLOSED = "closed"  # `safe-run close` ended the persistent shell


class ExitStatus(IntEnum):
    """safe-run's own exit statuses, besides the command's exit code when it completed."""

    USAGE = 2  # also a syntax error: the command as given cannot run
    PENDING = 75  # the command still runs in a session (running, or input_required with a session id)
    BUSY = 76  # the persistent shell runs another command; nothing was run
    UNRESPONSIVE = 122  # a session's holder did not answer in time (stopped with SIGSTOP, or stuck)
    NO_SESSION = 123  # poll, send or stop named a session that does not exist (any more)
    STOPPED = 124  # stopped before it finished: --timeout, a timer fallback, waiting for input, or a stopped process
    FAILURE = 125  # safe-run itself could not run the command
    INTERRUPTED = 130  # SIGINT; other signals give 128 + their number (SIGTERM 143)
    NO_READER = 141  # the answer could not be written: stdout is closed or its reader went away (as SIGPIPE)


@dataclass(frozen=True)
class ShellInfo:
    name: str
    path: str


@dataclass(frozen=True)
class Killed:
    """A process safe-run had to kill because it was still there when the run ended."""

    pid: int
    command: str


@dataclass(frozen=True)
class Downgrade:
    """One step down the strategy ladder, with why and when (seconds since the start)."""

    from_: str
    to: str
    reason: str
    at_s: float

    def to_dict(self) -> dict[str, object]:
        return {"from": self.from_, "to": self.to, "reason": self.reason, "at_s": self.at_s}


@dataclass(frozen=True)
class Reinjection:
    """The integration was loaded into a live shell again before the command, and why."""

    reason: str
    at_s: float

    def to_dict(self) -> dict[str, object]:
        return {"reason": self.reason, "at_s": self.at_s}


@dataclass(frozen=True)
class Result:
    """One run's answer. Every key is always present in the JSON, null when unknown."""

    status: Status
    exit_code: int | None
    strategy: Strategy | None
    completion_reason: Reason | None  # None while the command still runs
    command: str | None  # None when there is no command (a usage error before it was read, a session verb)
    shell: ShellInfo | None
    output: str = ""
    output_truncated: bool = False
    output_dropped_bytes: int = 0  # bytes of cleaned UTF-8 text, the units of `output`
    duration_s: float = 0.0
    message: str | None = None
    downgrades: tuple[Downgrade, ...] = field(default_factory=tuple)
    session_id: str | None = None
    prompt: str | None = None
    alternate_screen: bool = False
    # A running command that listens to the keyboard at its prompt: `send` reaches it.
    reads_keyboard: bool = False
    # An input wait for a secret (the terminal does not echo): for a person to type, not the agent.
    secret: bool = False
    # The session's terminal recorded in asciicast v2 (`asciinema play`), kept with its result.
    recording: str | None = None
    killed: tuple[Killed, ...] = field(default_factory=tuple)
    signal: str | None = None
    # Persistent shells (`--in NAME`): which shell ran the command, its directory afterwards,
    # whether the shell was started for this call, and integration loaded again before it.
    shell_id: str | None = None
    shell_name: str | None = None
    cwd: str | None = None
    fresh: bool | None = None
    reinjected: tuple[Reinjection, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, object]:
        """Field by field rather than through `asdict`, whose deep copy of every value was most of
        the cost of an answer in a warm shell."""
        data: dict[str, object] = {"schema_version": SCHEMA_VERSION}
        for name in _RESULT_FIELDS:
            data[name] = getattr(self, name)
        data["status"] = self.status.value
        data["strategy"] = self.strategy.value if self.strategy else None
        data["completion_reason"] = self.completion_reason.value if self.completion_reason else None
        data["shell"] = {"name": self.shell.name, "path": self.shell.path} if self.shell else None
        data["downgrades"] = [d.to_dict() for d in self.downgrades]
        data["killed"] = [asdict(k) for k in self.killed]
        data["reinjected"] = [r.to_dict() for r in self.reinjected]
        data["duration_s"] = round(self.duration_s, 3)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """The inverse of `to_dict`, for results that crossed a socket or a file."""
        shell = data.get("shell")
        reason = data.get("completion_reason")
        strategy = data.get("strategy")
        return cls(
            status=Status(data["status"]),
            exit_code=data.get("exit_code"),
            strategy=Strategy(strategy) if strategy else None,
            completion_reason=Reason(reason) if reason else None,
            command=data.get("command"),
            shell=ShellInfo(**shell) if isinstance(shell, dict) else None,
            output=str(data.get("output", "")),
            output_truncated=bool(data.get("output_truncated")),
            output_dropped_bytes=int(data.get("output_dropped_bytes", 0)),
            duration_s=float(data.get("duration_s", 0.0)),
            message=data.get("message"),
            downgrades=tuple(
                Downgrade(d["from"], d["to"], d["reason"], d["at_s"]) for d in data.get("downgrades", [])
            ),
            session_id=data.get("session_id"),
            prompt=data.get("prompt"),
            alternate_screen=bool(data.get("alternate_screen")),
            reads_keyboard=bool(data.get("reads_keyboard")),
            secret=bool(data.get("secret")),
            recording=data.get("recording"),
            killed=tuple(Killed(**k) for k in data.get("killed", [])),
            signal=data.get("signal"),
            shell_id=data.get("shell_id"),
            shell_name=data.get("shell_name"),
            cwd=data.get("cwd"),
            fresh=data.get("fresh"),
            reinjected=tuple(Reinjection(r["reason"], r["at_s"]) for r in data.get("reinjected", [])),
        )


_RESULT_FIELDS = tuple(item.name for item in fields(Result))


def exit_status(result: Result) -> int:
    """The status safe-run itself exits with: the command's code when it completed."""
    if result.status is Status.BUSY:
        return ExitStatus.BUSY
    if result.status is Status.CLOSED:
        return 0
    if result.session_id is not None:
        return ExitStatus.PENDING
    if result.status is Status.COMPLETED:
        return result.exit_code if result.exit_code is not None else ExitStatus.FAILURE
    if result.status in (Status.TIMEOUT, Status.INPUT_REQUIRED):
        return ExitStatus.STOPPED
    if result.status is Status.SYNTAX_ERROR:
        return ExitStatus.USAGE
    if result.status is Status.INTERRUPTED and result.completion_reason is Reason.PROCESS_STOPPED:
        return ExitStatus.STOPPED
    if result.status is Status.INTERRUPTED:
        return 128 + signal.Signals[result.signal] if result.signal else ExitStatus.INTERRUPTED
    return ExitStatus.FAILURE


# Signals whose exit status people meet without having sent them, and what usually sent them.
SIGNAL_CAUSES = {
    signal.SIGKILL: "often the kernel's out-of-memory killer, or a timeout that would not wait",
    signal.SIGSEGV: "a crash: the program touched memory it does not have",
    signal.SIGABRT: "the program aborted itself (a failed assertion, an uncaught C++ exception)",
    signal.SIGPIPE: "what it wrote to had gone away",
}


def exit_sentence(code: int) -> str:
    """What a failing exit status says, for the result's message: 128 + N is the shells' way of
    reporting that the program was ended by signal N."""
    if code > 128:
        try:
            number = signal.Signals(code - 128)
        except ValueError:
            return f"the command exited with status {code}"
        cause = SIGNAL_CAUSES.get(number)
        return f"the command was ended by {number.name} (exit status {code} is 128 + {int(number)})" + (
            f": {cause}" if cause else "")
    return f"the command exited with status {code}"


def error_result(command: str | None, message: str, shell: ShellInfo | None = None) -> Result:
    """A run that safe-run itself could not carry out."""
    return Result(
        status=Status.ERROR,
        exit_code=None,
        strategy=None,
        completion_reason=Reason.ERROR,
        command=command,
        shell=shell,
        message=message,
    )


def not_started(command: str | None, signal_name: str) -> Result:
    """safe-run was told to stop before the command started: nothing ran, and the answer says so."""
    return Result(
        status=Status.INTERRUPTED,
        exit_code=None,
        strategy=None,
        completion_reason=Reason.INTERRUPTED,
        command=command,
        shell=None,
        message=f"safe-run was interrupted by {signal_name} before the command started; nothing ran",
        signal=signal_name,
    )

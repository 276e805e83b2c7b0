"""What a run tells its followers, as plain data: `--format jsonl` events and CI annotations.

Nothing here touches a terminal or a clock; every function turns facts about a run into a dict
or a line, so the whole vocabulary is testable without running anything.

Events (one JSON object per line with `--format jsonl`), each with `event` and `at_s` (seconds
since the run started):

    started    command, shell {name, path}, strategy          the shell is running
    output     text, dropped_bytes                            cleaned output since the last one
    downgrade  from, to, reason                               a step down the strategy ladder
    finished   result (the object --format json prints)       always the last line
"""

from __future__ import annotations

from dataclasses import asdict

from .result import SCHEMA_VERSION, Downgrade, Reason, Result, ShellInfo, Status, Strategy

# The ends only the shell itself can announce; any other completion reason is a fallback's.
SHELL_DECIDED = (Reason.SHELL_INTEGRATION, Reason.SHELL_EXITED)
# Statuses where safe-run stopped the command (or never ran it) rather than watching it finish.
ABORTED = (Status.TIMEOUT, Status.INPUT_REQUIRED, Status.INTERRUPTED, Status.ERROR, Status.SYNTAX_ERROR)


def started_event(command: str, shell: ShellInfo, strategy: Strategy) -> dict[str, object]:
    return {
        "event": "started",
        "at_s": 0.0,
        "schema_version": SCHEMA_VERSION,
        "command": command,
        "shell": asdict(shell),
        "strategy": strategy.value,
    }


def output_event(at_s: float, text: str, dropped_bytes: int = 0) -> dict[str, object]:
    return {"event": "output", "at_s": round(at_s, 3), "text": text, "dropped_bytes": dropped_bytes}


def downgrade_event(downgrade: Downgrade) -> dict[str, object]:
    return {"event": "downgrade", **downgrade.to_dict()}


def finished_event(result: Result, at_s: float | None = None) -> dict[str, object]:
    at = result.duration_s if at_s is None else at_s
    return {"event": "finished", "at_s": round(at, 3), "result": result.to_dict()}


# ---- how a result ended, for people and CI ------------------------------------------------------


def decided_by_fallback(result: Result) -> bool:
    """The end was not announced by the shell itself, or integration had to be given up on the way."""
    return bool(result.downgrades) or result.completion_reason not in SHELL_DECIDED


def aborted(result: Result) -> bool:
    return result.status in ABORTED


# ---- GitHub Actions workflow commands ----------------------------------------------------------


def escape_data(text: str) -> str:
    """A workflow command's message: %, CR and LF are the characters GitHub reads specially."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value (title=...): also ':' and ',', which end it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(result: Result) -> str | None:
    """The `::error::` or `::warning::` line for a result, or None when there is nothing to flag.

    An abort (timeout, input_required, interrupted, error, syntax_error) is an error: safe-run
    stopped the command or could not run it. A completed command whose end a fallback decided,
    or that needed a downgrade, is a warning: the result is right, but the shell integration did
    not work as it should here. A completed command that exited non-zero is not annotated: that
    is the command's own failure, which its output explains and the step's exit status already
    reports (compilers and test runners annotate their own failures).
    """
    if result.session_id is not None:
        return None  # the command still runs in its session: nothing has gone wrong yet
    if aborted(result):
        kind, title = "error", f"safe-run {result.status.value}"
    elif result.status is Status.COMPLETED and decided_by_fallback(result):
        kind, title = "warning", "safe-run fallback"
    else:
        return None
    return f"::{kind} title={escape_property(title)}::{escape_data(annotation_message(result))}"


def annotation_message(result: Result) -> str:
    """One paragraph: what ran, how it ended and why, including every downgrade."""
    lines = (result.command or "").strip().splitlines()
    command = lines[0] if lines else ""
    if len(command) > 80 or len(lines) > 1:
        command = command[:77] + "..."
    sentences = [f"`{command}`: {ended(result)}"]
    sentences += [f"downgrade {d.from_} -> {d.to} at {d.at_s:.2f} s: {d.reason}" for d in result.downgrades]
    if result.message:
        sentences.append(result.message)
    return ". ".join(sentences)


def ended(result: Result) -> str:
    """'completed with exit 0 after 1.20 s (strategy none, decided by sentinel)' and the like."""
    words = result.status.value
    if result.exit_code is not None:
        words += f" with exit {result.exit_code}"
    words += f" after {result.duration_s:.2f} s"
    how = []
    if result.strategy is not None:
        how.append(f"strategy {result.strategy.value}")
    if result.completion_reason is not None:
        how.append(f"decided by {result.completion_reason.value}")
    return words + (f" ({', '.join(how)})" if how else "")

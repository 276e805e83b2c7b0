"""What a caller is told to do next, in the words of the front end that started the session.

An agent reading an MCP answer has tools, not a command line: "answer with `safe-run send ID`"
asks it for a call it cannot make. Each front end has its phrases; a session speaks those of the
caller that started it (`RunRequest.caller`). Pure: strings in, strings out.
"""

from __future__ import annotations

from dataclasses import dataclass

from .result import Result, Status


@dataclass(frozen=True)
class Phrases:
    """Each next step, with `{id}` for a session's id and `{name}` for a shell's name."""

    poll: str
    send: str
    send_keys: str
    stop: str
    run_in: str
    close: str
    stopped: str | None  # why a `stop` ended the command; None: the engine's own words
    attach: str = "`safe-run attach {id}` (in their own terminal)"  # a person's, whatever the front end


COMMAND_LINE = Phrases(
    poll="`safe-run poll {id} --wait 60`",
    send="`safe-run send {id} 'TEXT'` (or `--key ctrl-d` for end of input, `--key ctrl-c` to interrupt)",
    send_keys="`safe-run send {id} 'TEXT'` (or `--key ...`)",
    stop="`safe-run stop {id}`",
    run_in="`safe-run --in {name}`",
    close="`safe-run close {name}`",
    stopped=None,
)

MCP = Phrases(
    poll='the `poll` tool (session_id "{id}", wait 60)',
    send='the `send` tool (session_id "{id}" and text; or keys ["ctrl-d"] for end of input, ["ctrl-c"] to interrupt)',
    send_keys='the `send` tool (session_id "{id}" and text, or keys)',
    stop='the `stop` tool (session_id "{id}")',
    run_in='`run` with shell_name "{name}"',
    close='the `close` tool (shell_name "{name}")',
    stopped="the `stop` tool was called",
)

BY_CALLER = {"cli": COMMAND_LINE, "mcp": MCP}


def next_steps(result: Result, session_id: str, say: Phrases) -> str:
    """Tell the caller exactly what to do next, and what not to."""
    def step(phrase: str) -> str:
        return phrase.format(id=session_id)

    if result.status is Status.INPUT_REQUIRED and result.secret:
        return (
            f"{result.message}; it is still running in session {session_id}. What is typed there is not shown: "
            f"ask the person you work for to type it themselves with {step(say.attach)}, rather than sending a "
            f"secret you were given; then poll. End it with {step(say.stop)}"
        )
    if result.status is Status.INPUT_REQUIRED:
        return (f"{result.message}; it is still running in session {session_id}. Answer with {step(say.send)}, "
                f"or end it with {step(say.stop)}")
    if result.reads_keyboard:
        return (f"{result.message}; it is in session {session_id}. Type to it with {step(say.send_keys)}, follow it "
                f"with {step(say.poll)}, or end it with {step(say.stop)}")
    return (
        f"still running after {result.duration_s:.1f} s in session {session_id}; the output since the last "
        f"answer is included. Wait for the end with {step(say.poll)} (it returns as soon as the command ends or "
        "asks for input); do not run the command again"
    )

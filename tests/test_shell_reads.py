"""The shell's own reads: bash `read -n1 -s`, `read -e` and `select`, zsh `read -k`, `read -q` and
`vared`, every fish `read`. They read the terminal exactly as the shell's prompt does, so nothing
but the typed line's own end tells them apart: each must be reported as an input wait with its
prompt, get nothing typed into it, and take exactly what `send` gives it.

Real shells in real PTYs, through the command line, a named shell, the Python API and MCP. The
input-wait window is a real wait, so these are slow tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Read:
    shell: str
    command: str  # leaves what it read in ~/got, between brackets
    prompt: str
    answer: str
    enter: bool  # the answer is a line (Enter after it), or one key
    got: str


READS = [
    Read("bash", "read -n1 -s -r -p 'Press any key to continue...' k; echo \"[$k]\" > ~/got",
         "Press any key to continue...", "y", False, "[y]"),
    Read("bash", "read -e -p 'path: ' p; echo \"[$p]\" > ~/got", "path:", "/etc/x", True, "[/etc/x]"),
    Read("bash", "select x in apple pear; do echo \"[$x]\" > ~/got; break; done", "#?", "2", True, "[pear]"),
    Read("zsh", "read -k1 -s 'k?Overwrite? [y/N] '; echo \"[$k]\" > ~/got", "Overwrite? [y/N]", "y", False, "[y]"),
    Read("zsh", "read -q 'k?Sure? '; echo \"[$k]\" > ~/got", "Sure?", "y", False, "[y]"),
    Read("zsh", "v=abc; vared -p 'edit: ' v; echo \"[$v]\" > ~/got", "edit: abc", "def", True, "[abcdef]"),
    Read("fish", "read -n 1 -P 'go? ' k; echo \"[$k]\" > ~/got", "go?", "y", False, "[y]"),
    Read("fish", "read -P 'name: ' k; echo \"[$k]\" > ~/got", "name:", "bob", True, "[bob]"),
    Read("fish", "read -s -P 'secret: ' k; echo \"[$k]\" > ~/got", "secret:", "s3", True, "[s3]"),
]


def answer_options(read: Read) -> list[str]:
    return [read.answer] if read.enter else [read.answer, "--no-enter"]


@pytest.mark.parametrize("read", READS, ids=lambda r: f"{r.shell}:{r.command.split(';')[0][:24]}")
def test_a_shells_own_read_is_an_input_wait_and_takes_exactly_what_is_sent(safe_run: SafeRun, read: Read) -> None:
    safe_run.shell = shell_path(read.shell)
    got = safe_run.home / "got"
    waiting = safe_run("--format", "json", "--yield-after", "20", "--", read.command)
    assert waiting.returncode == 75, waiting.stdout
    assert (waiting.json["status"], waiting.json["prompt"]) == ("input_required", read.prompt), waiting.json
    assert waiting.json["duration_s"] < 20, "reported as waiting, not when the bound ran out"
    assert not got.exists(), "something was typed into the read"

    safe_run.shell = None  # the session verbs take no --shell
    answered = safe_run("send", waiting.json["session_id"], *answer_options(read), "--wait", "20", "--format", "json")
    assert (answered.json["status"], answered.json["exit_code"]) == ("completed", 0), answered.json
    assert got.read_text() == read.got + "\n"


@pytest.mark.parametrize("read", [r for r in READS if r.command.startswith("read -")][::3],
                         ids=lambda r: r.shell)
def test_the_same_in_a_named_shell(safe_run: SafeRun, read: Read) -> None:
    safe_run.shell = shell_path(read.shell)
    got = safe_run.home / "got"
    try:
        assert safe_run("--in", "w", "--format", "json", "--", "true").json["status"] == "completed"
        waiting = safe_run("--in", "w", "--format", "json", "--yield-after", "20", "--", read.command)
        assert (waiting.json["status"], waiting.json["prompt"]) == ("input_required", read.prompt), waiting.json
        assert not got.exists()
        safe_run.shell = None  # the session verbs take no --shell
        answered = safe_run("send", waiting.json["session_id"], *answer_options(read), "--wait", "20",
                            "--format", "json")
        assert answered.json["status"] == "completed" and got.read_text() == read.got + "\n"
        after = safe_run("--in", "w", "--format", "json", "--", "echo next")
        assert (after.json["status"], after.json["output"], after.json["fresh"]) == ("completed", "next\n", False)
    finally:
        safe_run("close", "w")


@pytest.fixture
def api_store(safe_run: SafeRun, monkeypatch: pytest.MonkeyPatch) -> Iterator[SafeRun]:
    """The library's calls in this process, with the test's own HOME and TMPDIR."""
    for name, value in safe_run.environment().items():
        monkeypatch.setenv(name, value)
    yield safe_run


def test_the_same_through_the_api(api_store: SafeRun) -> None:
    import safe_run
    from safe_run import Session

    got = api_store.home / "got"
    with safe_run.Shell(shell=shell_path("zsh")) as shell:
        waiting = shell.run(READS[3].command, yield_after=20)
        assert (waiting.status.value, waiting.prompt) == ("input_required", READS[3].prompt)
        assert not got.exists()
        done = Session.of(waiting).send("y", enter=False, wait=20)
        assert (done.status.value, done.exit_code) == ("completed", 0) and got.read_text() == "[y]\n"


def test_integration_broken_in_the_middle_of_a_command_still_completes(sr: SafeRun) -> None:
    """The other side of the rule: with its hooks gone and the prompt changed, the end is the
    line's own status, and nothing is typed to ask for it."""
    breakers = {
        "bash": "PROMPT_COMMAND=; trap - DEBUG; PS1='$ '",
        "zsh": "precmd_functions=(); preexec_functions=(); PS1='$ '",
        "fish": "functions -e __sr_postexec fish_prompt",
    }
    name = os.path.basename(sr.shell or "")
    if name not in breakers:
        pytest.skip("only shells with integration have hooks to break")
    result = sr("--format", "json", "--", f"{breakers[name]}; echo x; false").json
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 1, "x\n"), result
    assert (result["completion_reason"], result["downgrades"]) == ("shell_integration", []), "the line's own end"


def test_what_the_shell_started_before_the_line_is_not_the_commands_work(safe_run: SafeRun) -> None:
    """What the shell started before the command line (fish's completion indexer at its first
    start; here a sleeping job of the user's config, in the shell's own process group) is not the
    command's work: the read is still seen. Start times count in clock ticks, so the config goes
    on for a few more before the prompt."""
    safe_run.shell = shell_path("bash")
    (safe_run.home / ".bashrc").write_text("set +m; sleep 60 & set -m; sleep 0.1\n")
    result = safe_run("--format", "json", "--yield-after", "20", "--", "read -n1 -s -p 'key? ' k").json
    assert (result["status"], result["prompt"]) == ("input_required", "key?"), result
    safe_run.shell = None
    safe_run("stop", result["session_id"])


def test_a_shell_that_the_start_up_files_replaced_is_the_one_whose_read_waits(safe_run: SafeRun) -> None:
    """`exec dash` in .bashrc: dash runs the command line, and its `read` is the command's, not a
    sign that bash was replaced by the command."""
    shell_path("dash")
    safe_run.shell = shell_path("bash")
    (safe_run.home / ".bashrc").write_text("exec dash\n")
    result = safe_run("--format", "json", "--yield-after", "20", "--", "read x; echo \"[$x]\" > ~/got").json
    assert (result["status"], result["shell"]["name"]) == ("input_required", "dash"), result
    safe_run.shell = None
    done = safe_run("send", result["session_id"], "typed", "--wait", "20", "--format", "json").json
    assert done["status"] == "completed" and (safe_run.home / "got").read_text() == "[typed]\n"


def test_a_named_shell_through_mcp(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    from test_mcp import Server, call, drive

    server = Server(tmp_path)

    async def test() -> None:
        async with server.client() as session:
            command = "read -n1 -s -p 'Continue? ' k; echo \"[$k]\" > ~/got"
            asked = await call(session, "run", {"command": command, "yield_after": 20})
            assert (asked["status"], asked["prompt"]) == ("input_required", "Continue?"), asked
            assert not (server.home / "got").exists()
            done = await call(session, "send", {"session_id": asked["session_id"], "text": "n", "enter": False,
                                                "wait": 20})
            assert done["status"] == "completed" and (server.home / "got").read_text() == "[n]\n"

    drive(test)


# ---- stopping a command that the shell itself runs ------------------------------------------------


@pytest.mark.parametrize(
    ("shell", "command", "same_shell"),
    [
        ("bash", "read -p 'x? ' k; touch ~/rest-ran", True),  # Ctrl-C abandons bash's whole line
        ("bash", "while :; do :; done; touch ~/rest-ran", True),  # the shell itself works, in front
        ("fish", "read -P 'x? ' k; touch ~/rest-ran", False),  # fish's read returns and the line goes on
        ("zsh", "k=; vared -p 'x? ' k; touch ~/rest-ran", False),  # so does zsh's vared
    ],
)
def test_stopping_what_the_shell_itself_runs_never_runs_the_rest_of_the_line(
    safe_run: SafeRun, shell: str, command: str, same_shell: bool
) -> None:
    """The next command of a named shell is never typed into the stopped command's read, and the
    rest of the stopped line never runs: bash is interrupted, and a shell that Ctrl-C would not
    stop there is ended with its command."""
    safe_run.shell = shell_path(shell)
    try:
        started = safe_run("--in", "s", "--format", "json", "--yield-after", "0.8", "--", command).json
        assert started["status"] in ("running", "input_required"), started
        safe_run.shell = None
        stopped = safe_run("stop", started["session_id"], "--format", "json").json
        assert stopped["status"] == "interrupted", stopped
        safe_run.shell = shell_path(shell)
        after = safe_run("--in", "s", "--format", "json", "--", "echo next").json
        assert (after["status"], after["output"]) == ("completed", "next\n"), after
        assert after["fresh"] is (not same_shell), after
        assert not (safe_run.home / "rest-ran").exists(), "the rest of the stopped line ran"
    finally:
        safe_run.shell = None
        safe_run("close", "s")


def test_a_loop_stopped_between_two_programs_ends_and_the_shell_takes_the_next_command(tmp_path: Path) -> None:
    """Through MCP, as an agent: a loop that sleeps and then works in the shell itself, stopped
    while it runs (as often with bash itself in front as with a sleep), then the next command in
    the same shell; again and again."""
    pytest.importorskip("mcp", reason="the MCP SDK is not installed (pip install 'safe-run[mcp]')")
    from test_mcp import Server, call, drive

    server = Server(tmp_path)
    loop = ("for i in $(seq 100); do echo tick $i; sleep 0.05; n=0; while [ $n -lt 3000 ]; do n=$((n+1)); done; "
            "done; touch ~/rest-ran")

    async def progress(done: float, total: float | None, message: str | None) -> None:
        pass

    async def test() -> None:
        async with server.client() as session:
            for attempt in range(6):
                running = (await session.call_tool("run", {"command": loop, "yield_after": 0.4 + attempt * 0.07},
                                                   progress_callback=progress)).structured_content
                assert running is not None and running["status"] == "running", running
                stopped = await call(session, "stop", {"session_id": running["session_id"]})
                assert stopped["status"] == "interrupted", stopped
                after = await call(session, "run", {"command": "echo next"})
                assert (after["status"], after["output"]) == ("completed", "next\n"), (attempt, after)
            assert not (server.home / "rest-ran").exists()

    drive(test)

"""A person beside the agent: `attach` and `watch` from a real terminal (pexpect's pseudo-terminal,
as a person's tmux pane would be), secret prompts, and the session's recording.

An agent (the command line's JSON, as a script would call it) starts the session; the person
joins it in another terminal. Each test bounds its waits; they are real, so these are slow.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from conftest import SafeRun, release, shell_path
from test_streaming import Tmux, tmux  # noqa: F401 - the tmux fixture, a person's pane

pytestmark = pytest.mark.slow

BOUND_S = 20
LEAVE = "\x1c" + "d"  # Ctrl-\ then d
JOINED = "\x1b[?1049h"  # the person's terminal on its alternate screen: joined to the command
# The password is spelled backwards in the command: the recording shows the command, and must not
# show the password typed.
GETPASS = "python3 -c 'import getpass; p = getpass.getpass(\"Password: \"); print(\"right\" if p[::-1] == \"2retnuh\" else \"wrong\")'"


@pytest.fixture
def agent(safe_run: SafeRun) -> Iterator[SafeRun]:
    safe_run.shell = shell_path("bash")
    yield safe_run
    safe_run.shell = None
    for row in safe_run("sessions", "--format", "json").json["sessions"]:
        if row["status"] in ("running", "input_required"):
            safe_run("stop", row["session_id"])
        if row["shell_name"] and row["status"] != "closed":
            safe_run("close", row["shell_name"])


def call(safe_run: SafeRun, *args: str) -> dict[str, Any]:
    return safe_run(*args, "--format", "json").json if args[0] in VERBS else safe_run(
        "--format", "json", *args).json


VERBS = ("poll", "send", "stop", "close", "sessions")


def person(safe_run: SafeRun, *args: str, rows: int = 30, columns: int = 100) -> pexpect.spawn:
    """The person's terminal, running `safe-run ARGS` in the agent's environment."""
    env = {**safe_run.environment(), "TERM": "xterm-256color"}
    return pexpect.spawn(sys.executable, ["-m", "safe_run", *args], env=env, dimensions=(rows, columns),
                         timeout=BOUND_S, encoding="utf-8", codec_errors="replace")


def test_a_secret_prompt_is_marked_and_the_person_answers_it(agent: SafeRun) -> None:
    asked = call(agent, "--yield-after", str(BOUND_S), "--", GETPASS)
    assert (asked["status"], asked["secret"], asked["prompt"]) == ("input_required", True, "Password:"), asked
    assert f"safe-run attach {asked['session_id']}" in asked["message"]
    agent.shell = None
    joined = person(agent, "attach", asked["session_id"])
    joined.expect("Password:")
    joined.send("hunter2\r")
    joined.expect("completed")
    joined.expect(pexpect.EOF)
    done = call(agent, "poll", asked["session_id"])
    assert (done["status"], done["exit_code"], done["output"].strip()) == ("completed", 0, "Password: \nright"), done
    recording = Path(done["recording"]).read_text()
    assert "hunter2" not in recording and "hunter2" not in done["output"]
    assert "hunter2" not in (joined.before or ""), "the terminal did not echo it either"


def test_a_full_screen_program_is_drawn_on_attach_and_left_running(agent: SafeRun, tmp_path: Path) -> None:
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    text = tmp_path / "notes.txt"
    text.write_text("remember the milk\n")
    started = call(agent, "--in", "V", "--yield-after", str(BOUND_S), "--", f"vim -u NONE {text}")
    assert started["status"] == "input_required" and started["alternate_screen"], started
    agent.shell = None
    joined = person(agent, "attach", "V")
    joined.expect("remember the milk")
    joined.expect("~")
    rows = {row["session_id"]: row for row in call(agent, "sessions")["sessions"]}
    assert rows[started["shell_id"]]["attached"] == 1
    joined.send(LEAVE)
    joined.expect(pexpect.EOF)
    assert "goes on" in (joined.before or "")
    still = call(agent, "poll", started["session_id"], "--wait", "5")
    assert still["status"] == "input_required", "leaving left vim running"


def test_the_commands_title_pops_never_take_the_persons_titles(agent: SafeRun, tmp_path: Path) -> None:
    """A program pushes the window title as it starts and pops it as it ends (vim): a person who
    joined in between got its pops without its pushes, each taking one of their own titles off
    their terminal's stack. The attach keeps the person's title once and gives it back once."""
    go = tmp_path / "go"
    started = call(agent, "--yield-after", "0.5", "--",
                   f"printf '\\033[22;0t'; while [ ! -e {go} ]; do sleep 0.05; done; "
                   "printf '\\033[23;0t\\033[23;0t\\033[23;2t'; echo popped")
    assert started["status"] == "running", started
    agent.shell = None
    joined = person(agent, "attach", started["session_id"])
    joined.expect("attached to")
    go.touch()
    joined.expect("completed")
    seen = joined.before or ""
    joined.expect(pexpect.EOF)
    assert "popped" in seen
    assert re.findall(r"\x1b\[23(?:;\d*)*t", seen) == ["\x1b[23;0t"], f"one pop, the attach's own: {seen!r}"


def test_attaching_to_a_named_shells_command_by_its_id_ends_with_it(agent: SafeRun) -> None:
    """As for a session's command: the attach ends with the command's end and its result, where it
    lasted until the person left (the shell, named by its name, still does)."""
    asked = call(agent, "--in", "ag", "--yield-after", str(BOUND_S), "--", 'read -r -p "na""me? " n; echo "hi $n"')
    assert asked["status"] == "input_required", asked
    agent.shell = None
    joined = person(agent, "attach", asked["session_id"])
    joined.expect("name\\?")
    joined.send("bob\r")
    joined.expect("hi bob")
    joined.expect("completed")
    joined.expect(pexpect.EOF)
    joined.close()
    assert joined.exitstatus == 0


def test_watching_passes_no_keys_and_two_people_see_the_same(agent: SafeRun) -> None:
    command = 'for i in 1 2; do read -p "q$i: " a; echo "answer $i=[$a]"; done'
    asked = call(agent, "--yield-after", str(BOUND_S), "--", command)
    assert asked["status"] == "input_required", asked
    agent.shell = None
    watcher = person(agent, "watch", asked["session_id"])
    typist = person(agent, "attach", asked["session_id"])
    watcher.expect("q1:")
    typist.expect("q1:")
    watcher.send("from the watcher\r")
    typist.send("typed\r")
    for screen in (typist, watcher):
        screen.expect(r"answer 1=\[typed\]")
        screen.expect("q2:")
    watcher.send("\x03")  # Ctrl-C leaves a watch
    watcher.expect(pexpect.EOF)
    typist.send(LEAVE)
    typist.expect(pexpect.EOF)
    waiting = call(agent, "poll", asked["session_id"])
    assert waiting["status"] == "input_required" and "from the watcher" not in waiting["output"], waiting


def test_keys_typed_while_a_named_shell_is_idle_go_nowhere(agent: SafeRun, tmp_path: Path) -> None:
    """Between a named shell's commands its prompt is for safe-run's lines: what a person types
    there is neither run by the shell nor typed into the agent's next command."""
    made = tmp_path / "made"
    shell = call(agent, "--in", "idle", "--", "true")
    assert shell["exit_code"] == 0
    joined = person(agent, "attach", "idle")
    joined.expect("attached")
    joined.send(f"touch {made}\r")
    joined.send(LEAVE)  # after the keys, on the same connection: once it is read, they were
    joined.expect(pexpect.EOF)
    attached_until(agent, shell["shell_id"], 0)
    after = call(agent, "--in", "idle", "--", "echo next")
    assert (after["status"], after["output"]) == ("completed", "next\n"), after
    call(agent, "--in", "idle", "--", "true")
    assert not made.exists(), "the keys were run as a command"


def attached_until(agent: SafeRun, session_id: str, count: int) -> None:
    """Until the session's holder counts `count` people attached (it has read all a leaver sent)."""
    deadline = time.monotonic() + BOUND_S
    while {row["session_id"]: row for row in call(agent, "sessions")["sessions"]}[session_id]["attached"] != count:
        assert time.monotonic() < deadline, f"the holder never counted {count} attached"
        time.sleep(0.05)


def test_keys_typed_while_the_command_does_not_read_are_not_left_for_the_shell(agent: SafeRun, tmp_path: Path) -> None:
    """Typed into a `sleep`, a line would wait in the terminal and be run by the shell once the
    command ended; it waits for the command to read instead, and goes with the command."""
    made = tmp_path / "made"
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    started = call(agent, "--yield-after", "0.5", "--", f"read -r _ < {fifo}; echo done")
    assert started["status"] == "running", started
    agent.shell = None
    joined = person(agent, "attach", started["session_id"])
    attached_until(agent, started["session_id"], 1)
    joined.send(f"touch {made}\r")
    release(fifo)
    joined.expect("completed")
    joined.expect(pexpect.EOF)
    done = call(agent, "poll", started["session_id"])
    assert (done["status"], done["exit_code"]) == ("completed", 0) and "touch" not in done["output"], done
    assert not made.exists(), "the keys were run by the shell after the command"


def test_the_command_end_shows_no_prompt_of_the_shell_and_the_summary_has_its_own_line(
    agent: SafeRun, tmp_path: Path,
) -> None:
    """The attached screen goes, the person's comes back, and below it the command's last lines
    (not the shell's prompt) and the summary on a line of its own."""
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    started = call(agent, "--yield-after", "0.5", "--", f"echo start; read -r _ < {fifo}; printf bye")
    assert started["status"] == "running", started
    agent.shell = None
    joined = person(agent, "attach", started["session_id"])
    attached_until(agent, started["session_id"], 1)
    release(fifo)
    joined.expect("bye")
    joined.expect(re.escape("\x1b[?1049l"))  # the person's own screen, back
    joined.expect("completed")
    after = joined.before or ""
    joined.expect(pexpect.EOF)
    shown = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[>=]|\x1b\][^\x07]*\x07", "", after).replace("\r", "")
    assert shown.strip() == "start\nbye\n✓", f"not the last lines and the summary's mark: {shown!r}"


def test_a_named_shells_input_wait_is_answered_at_the_persons_terminal(agent: SafeRun) -> None:
    """At a person's terminal `--in` is their run too: a wait for input is theirs to answer there
    (their terminal joins the command until it ends), and what they type never reaches their own
    shell, even typed before the wait was seen."""
    agent.shell = None
    ran = person(agent, "--shell", shell_path("bash"), "--in", "w", "--", 'read -r -p "yours? " z; echo "z=$z"')
    ran.send("mine\r")  # typed ahead, as a person who knows the question answers
    ran.expect("z=mine")
    ran.expect("completed")
    ran.expect(pexpect.EOF)
    ran.close()
    assert ran.exitstatus == 0
    kept = call(agent, "--in", "w", "--", 'echo "$z"')
    assert (kept["status"], kept["output"]) == ("completed", "mine\n"), kept


def test_a_named_shells_input_wait_is_answered_at_the_persons_terminal_with_stdout_piped(agent: SafeRun) -> None:
    """`safe-run --in w ... | tee log` at a person's terminal: the wait answered `input_required` and
    what they typed next went to their own shell. The join is drawn on the terminal stderr is,
    and the pipe gets the command's output as it would have without the wait."""
    line = (f"{sys.executable} -m safe_run --shell {shell_path('bash')} --in w -- "
            "'echo a; read -r -p \"na\"\"me? \" n; echo hi $n' | cat; echo rc=${PIPESTATUS[0]}")
    ran = pexpect.spawn("bash", ["--norc", "-c", line], env={**agent.environment(), "TERM": "xterm-256color"},
                        dimensions=(30, 100), timeout=BOUND_S, encoding="utf-8", codec_errors="replace")
    ran.expect("name\\?")
    ran.send("bob\r")
    ran.expect("rc=0")
    assert "a\r\nname? bob\r\nhi bob\r\n" in (ran.before or ""), ran.before
    ran.expect(pexpect.EOF)
    kept = call(agent, "--in", "w", "--", 'echo "$n"')
    assert (kept["status"], kept["output"]) == ("completed", "bob\n"), kept


def test_a_person_who_leaves_a_named_shells_input_wait_leaves_it_waiting(agent: SafeRun) -> None:
    agent.shell = None
    ran = person(agent, "--shell", shell_path("bash"), "--in", "w", "--", 'read -r -p "yours? " z; echo "z=$z"')
    ran.expect_exact(JOINED)  # the prompt shows as it comes, a moment before the wait is known and joined
    ran.expect("yours\\?")
    ran.send(LEAVE)
    ran.expect(r"left ([0-9a-f]{24}); it goes on \(`safe-run attach \1` to come back\)")
    hinted = ran.match.group(1)
    ran.expect(pexpect.EOF)
    ran.close()
    assert ran.exitstatus == 75, "the command still waits: input_required"
    rows = [row for row in call(agent, "sessions")["sessions"] if row["status"] == "input_required"]
    shell, waiting = [row for row in rows if row["shell_id"] is None], [row for row in rows if row["shell_id"]]
    assert len(shell) == len(waiting) == 1 and waiting[0]["shell_id"] == shell[0]["session_id"], rows
    assert hinted == waiting[0]["session_id"], "the way back is the command's: attached by the shell, it stays on"
    answered = call(agent, "send", waiting[0]["session_id"], "later")
    assert answered["status"] == "completed" and "z=later" in answered["output"], answered


def test_a_named_shells_command_ended_by_the_persons_ctrl_c_gets_its_summary_on_a_line_of_its_own(
    agent: SafeRun,
) -> None:
    agent.shell = None
    ran = person(agent, "--shell", shell_path("bash"), "--in", "w", "--", "echo started; sleep 30.25")
    until_running("sleep", "30.25")
    ran.sendintr()
    ran.expect("exit 130")
    shown = re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]", "", ran.before or "").replace("\r", "")
    ran.expect(pexpect.EOF)
    assert re.search(r"\^C\n(started\n)?✗ completed · $", shown), f"the summary follows the echoed ^C on its line: {shown!r}"


def test_a_persons_ctrl_backslash_is_a_named_shells_commands_quit_key(agent: SafeRun, tmp_path: Path) -> None:
    """Ctrl-\\ at a person's terminal during `--in` ended safe-run with a core dump (SIGQUIT's own
    way) and left the command running unseen; it is the command's quit character, as in their own
    run, and the call waits for the command's end."""
    ran = key_in_a_named_shell(agent, tmp_path, "import signal\nsignal.signal(signal.SIGQUIT, lambda *_: ("
                               "print(\"quit asked\", flush=True), sys.exit(9)))\nready()\ntime.sleep(30)", "\x1c")
    ran.expect("quit asked")
    assert ended_with(ran, 9)


def test_a_persons_ctrl_c_lets_a_named_shells_command_clean_up_and_choose_its_exit(
    agent: SafeRun, tmp_path: Path,
) -> None:
    """Ctrl-C at a person's terminal is the command's, in a named shell as in their own run: it
    goes to the command's terminal, and the command ends as it chooses. It stopped the command
    instead: SIGTERM came in the middle of its clean-up, and its last words and status were lost."""
    ran = key_in_a_named_shell(agent, tmp_path, "try:\n    ready(); time.sleep(30)\nexcept KeyboardInterrupt:\n"
                               "    print(\"cleaning up\", flush=True); time.sleep(0.5); print(\"clean exit\"); "
                               "sys.exit(7)", "\x03")
    ran.expect("clean exit")
    assert ended_with(ran, 7)


def key_in_a_named_shell(agent: SafeRun, tmp_path: Path, program: str, key: str) -> pexpect.spawn:
    """A person's `safe-run --in` of a python `program`, and their `key` pressed once the program
    is ready for it (it calls `ready()`)."""
    ready = tmp_path / "ready"
    script = f"import sys, time\ndef ready(): open({str(ready)!r}, \"w\").close()\n{program}"
    agent.shell = None
    ran = person(agent, "--shell", shell_path("bash"), "--in", "k", "--", f"python3 -c {shlex.quote(script)}")
    until_exists(ready)
    ran.send(key)
    return ran


def ended_with(ran: pexpect.spawn, status: int) -> bool:
    """The summary says the command's exit status, and safe-run exits with it."""
    ran.expect(f"exit {status}")
    ran.expect(pexpect.EOF)
    ran.close()
    return ran.exitstatus == status


def test_a_named_shells_full_screen_is_not_written_as_text_before_the_person_joins_it(
    agent: SafeRun, tmp_path: Path,
) -> None:
    """Nothing of a full screen's text (vim's lines of ~) reaches the person's own screen before
    their terminal joins the editor, where the editor itself is drawn."""
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    text = tmp_path / "notes.txt"
    text.write_text("remember the milk\n")
    agent.shell = None
    ran = person(agent, "--shell", shell_path("bash"), "--in", "w", "--", f"vim -u NONE {text}")
    ran.expect("attached to")
    assert "remember the milk" not in (ran.before or "") and "~" not in (ran.before or ""), ran.before
    ran.expect("remember the milk")  # the editor itself, on the attached screen
    ran.send(":q!\r")
    ran.expect("completed")
    ran.expect(pexpect.EOF)


def until_exists(path: Path) -> None:
    deadline = time.monotonic() + BOUND_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never came"
        time.sleep(0.02)


def until_running(*argv: str) -> None:
    """Until a process runs with this command line (a person's Ctrl-C before it would reach the
    shell between two commands of the line)."""
    wanted = "\0".join(argv).encode() + b"\0"
    deadline = time.monotonic() + BOUND_S
    while True:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if Path(f"/proc/{pid}/cmdline").read_bytes() == wanted:
                    return
            except OSError:
                continue
        assert time.monotonic() < deadline, f"{argv} never ran"
        time.sleep(0.02)


def attached_until_running(agent: SafeRun) -> None:
    """Until a command of the agent's runs (a person's Ctrl-C before it would find none)."""
    deadline = time.monotonic() + BOUND_S
    while not any(row["status"] == "running" for row in call(agent, "sessions")["sessions"]):
        assert time.monotonic() < deadline, "nothing ran"
        time.sleep(0.05)


def test_another_users_session_cannot_be_joined(agent: SafeRun) -> None:
    """The session's directory is its user's alone, and its holder takes callers of that user only."""
    if os.geteuid() != 0:
        pytest.skip("only root can take another uid")
    asked = call(agent, "--yield-after", str(BOUND_S), "--", "read -p 'x: ' v")
    socket_path = agent.store / asked["session_id"] / "socket"
    probe = ("import os, socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    os.chdir(os.path.dirname(sys.argv[1]))\n"
             "    s.connect('socket')\nexcept OSError as e:\n    print(type(e).__name__)\nelse:\n    print('connected')\n")
    other = 23456 + os.getpid() % 1000
    done = subprocess.run(["/usr/bin/python3", "-c", probe, str(socket_path)], capture_output=True, text=True,
                          preexec_fn=lambda: (os.setgroups([]), os.setgid(other), os.setuid(other)), timeout=BOUND_S)
    assert done.stdout.strip() == "PermissionError", done


def test_attach_needs_a_terminal(agent: SafeRun) -> None:
    asked = call(agent, "--yield-after", str(BOUND_S), "--", "read -p 'x: ' v")
    agent.shell = None
    refused = agent("attach", asked["session_id"])
    assert refused.returncode == 2 and "needs a terminal" in refused.stderr


def test_the_recording_plays_with_asciinema(agent: SafeRun) -> None:
    pytest.importorskip("asciinema")
    asked = call(agent, "--yield-after", str(BOUND_S), "--", "echo first line; read -p 'name: ' n; echo hello $n")
    agent.shell = None
    done = call(agent, "send", asked["session_id"], "bob", "--wait", str(BOUND_S))
    assert done["status"] == "completed", done
    header, *events = Path(done["recording"]).read_text().splitlines()
    assert json.loads(header)["version"] == 2
    assert ["i", "bob\r"] in [json.loads(event)[1:] for event in events], "what the agent typed, echoed, is input"
    with tempfile.TemporaryDirectory() as home:
        played = subprocess.run([sys.executable, "-m", "asciinema", "cat", done["recording"]], capture_output=True,
                                text=True, timeout=BOUND_S, env={**os.environ, "HOME": home})
    assert "first line" in played.stdout and "hello bob" in played.stdout, played.stderr


def test_a_named_shells_recording_shows_each_command_where_it_was_typed(agent: SafeRun) -> None:
    """The shell echoes the short line safe-run types (` __sr_c`); the recording shows the command
    that line ran in its place, after the prompt, as a terminal would have shown it typed."""
    call(agent, "--in", "w", "--", "true")
    ran = call(agent, "--in", "w", "--", "echo one; printf 'two\\n'")
    events = [json.loads(event) for event in Path(ran["recording"]).read_text().splitlines()[1:]]
    shown = "".join(event[2] for event in events if event[1] == "o")
    assert "echo one; printf 'two\\n'\r\n" in shown and "one\r\ntwo\r\n" in shown
    assert "__sr_c" not in shown


def test_attach_gives_the_persons_screen_back_as_tmux_does(agent: SafeRun, tmux: Tmux) -> None:
    """In a real terminal (a tmux pane): what was on the person's screen before the attach is
    there after it, the attached screen never drawn over it, then the command's lines and summary."""
    asked = call(agent, "--yield-after", str(BOUND_S), "--", "read -p 'q: ' a; echo got=$a")
    assert asked["status"] == "input_required", asked
    tmux.keys("echo mine-1; echo mine-2", "Enter")
    tmux.wait_for("mine-2\n")
    tmux.keys(f"{sys.executable} -m safe_run attach {asked['session_id']}", "Enter")
    attached = tmux.wait_for("q:")
    assert "mine-1" not in attached, "the attached screen is drawn on a screen of its own"
    tmux.keys("yes", "Enter")
    lines = [line.rstrip() for line in tmux.wait_for("completed").splitlines() if line.strip()]
    assert lines[lines.index("mine-1") + 1] == "mine-2", lines
    shown = lines.index("got=yes")
    assert lines[shown - 1] == "q: yes" and "completed" in lines[shown + 1], lines


# What a command may print to make a terminal type: the title report, cursor position and device
# attributes, DECRQSS, the end of a paste, ENQ, and malformed UTF-8 (a raw 0x9b is an 8-bit CSI).
QUESTIONS = r"\e[21t\e[6n\e[c\eP$qm\e\\\e[201~\x05\xff\xfe\x9b6n"
DRAWS = r"\e[31mred\e[0m\e[5;10H"
# Modes that have a terminal type on its own: focus changes, colour scheme changes, resizes.
REPORTING = r"\e[?1004h\e[?2031h\e[?2048h"


def joined_bytes(agent: SafeRun, tmp_path: Path, verb: str, printed: str) -> tuple[bytes, bytes]:
    """What a person's terminal gets while the command prints `printf`'s `printed` (from the
    command's first line on), and what it gets back as the person leaves."""
    go = tmp_path / "go"
    command = f"echo ready; while [ ! -e {go} ]; do sleep 0.05; done; printf '{printed}end\\n'; sleep 30"
    started = call(agent, "--yield-after", "0.5", "--", command)
    assert started["status"] == "running", started
    agent.shell = None
    env = {**agent.environment(), "TERM": "xterm-256color"}
    joined = pexpect.spawn(sys.executable, ["-m", "safe_run", verb, started["session_id"]], env=env,
                           dimensions=(30, 100), timeout=BOUND_S)
    joined.expect(b"ready")
    received = joined.after
    go.touch()
    joined.expect(b"end")
    received += joined.before + joined.after
    joined.send(LEAVE)
    joined.expect(pexpect.EOF)
    agent("stop", started["session_id"])
    return received, joined.before


@pytest.mark.parametrize("verb", ["watch", "attach"])
def test_the_commands_questions_never_reach_the_persons_terminal(agent: SafeRun, tmp_path: Path, verb: str) -> None:
    """A terminal answers a question by typing into its own input: the person's, then their shell's.
    Attached or watching, the person's terminal gets what the command draws and none of its
    questions (safe-run's own terminal answers those the command waits for), and malformed UTF-8
    as U+FFFD."""
    shown, _ = joined_bytes(agent, tmp_path, verb, DRAWS + QUESTIONS)
    for question in (b"\x1b[21t", b"\x1b[6n", b"\x1b[c", b"\x1bP$q", b"\x1b[201~", b"\x05", b"\xff", b"\x9b"):
        assert question not in shown, (question, shown)
    assert b"\x1b[31mred\x1b[0m\x1b[5;10H" in shown, shown
    assert "\ufffd\ufffd\ufffd6nend".encode() in shown, shown


def test_modes_that_make_the_terminal_type_are_off_when_the_person_leaves(agent: SafeRun, tmp_path: Path) -> None:
    """Focus, colour scheme and resize reports the command turned on go on for it while watched;
    left on, the person's terminal would type them into their shell after."""
    shown, given_back = joined_bytes(agent, tmp_path, "watch", REPORTING)
    for mode in (b"1004", b"2031", b"2048"):
        assert b"\x1b[?%sh" % mode in shown and b"\x1b[?%sl" % mode in given_back, (mode, given_back)

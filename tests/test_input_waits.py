"""Input waits, the prompt, stopped and hidden programs: real programs in real PTYs.

Each program here either works while something of it listens to the keyboard (it must never be
stopped as waiting for input), or really waits (it must be reported, and nothing may be typed
into it). The programs are small stand-ins written for the test, so nothing on the machine
changes: a relay like sudo's, a keyboard-polling worker, a gpg-like reader in another session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path
from throwaway_user import User

PYTHON = sys.executable

# raw mode and a poll on the outer terminal, while a child works silently on its own inner pty
RELAY = '''
import os, pty, select, sys, termios, tty
pid, master = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", "sleep 2.2; echo inner done"])
saved = termios.tcgetattr(0)
tty.setraw(0)
try:
    while True:
        ready, _, _ = select.select([0, master], [], [])
        if master in ready:
            try:
                data = os.read(master, 4096)
            except OSError:
                break
            if not data:
                break
            os.write(1, data)
        if 0 in ready:
            os.write(master, os.read(0, 4096))
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''

# cbreak and a one-second keyboard poll between steps, printing progress
CBREAK_STEPS = '''
import select, sys, termios, tty
saved = termios.tcgetattr(0)
tty.setcbreak(0)
try:
    for step in range(3):
        print(f"step {step}", flush=True)
        select.select([0], [], [], 1.0)
finally:
    termios.tcsetattr(0, termios.TCSADRAIN, saved)
print("done")
'''

# a thread blocked on stdin.readline() while the main thread works
LISTENING_THREAD = '''
import sys, threading, time
threading.Thread(target=sys.stdin.readline, daemon=True).start()
for step in range(3):
    time.sleep(0.8)
    print(f"step {step}", flush=True)
print("done")
'''

# a dev server: "press h for help" on the keyboard and a listening socket in one event loop
DEV_SERVER = '''
import selectors, socket, sys, termios, tty
tty.setcbreak(0)
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen()
print("serving; press h for help", flush=True)
sel = selectors.DefaultSelector()
sel.register(0, selectors.EVENT_READ)
sel.register(server, selectors.EVENT_READ)
while True:
    for key, _ in sel.select():
        if key.fileobj == 0:
            sys.stdin.read(1)
        else:
            server.accept()[0].close()
'''

# gpg-like: a daemon in its own session asks on the terminal by path; the caller waits on a pipe
READER_ELSEWHERE = '''
import os
tty_path = os.ttyname(0)
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open(tty_path, "r+b", buffering=0) as term:
            term.write(b"Passphrase: ")
            answer = term.readline()
        os.write(w, answer)
        os._exit(0)
    os._exit(0)
os.close(w)
os.wait()
print("got", os.read(r, 100))
'''


def program(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return f"{PYTHON} {path}"


def run_json(safe_run: SafeRun, shell: str, command: str, *options: str) -> dict:
    safe_run.shell = shell_path(shell)
    return safe_run("--format", "json", *options, "--", command).json


def test_a_read_from_standard_input_says_how_to_give_input_or_end_of_input(safe_run: SafeRun) -> None:
    """stdin is /dev/null, as in CI: `cat` still reads the terminal, as at a prompt, and the
    message says how to give it input, or end of input, instead."""
    result = run_json(safe_run, "bash", "cat", "--wait")
    assert result["status"] == "input_required", result
    assert "its standard input is the terminal" in result["message"]
    assert "`< file`" in result["message"] and "end of input with `</dev/null`" in result["message"]


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


# ---- programs that listen to the keyboard while they work ----------------------------------------


@pytest.mark.slow
def test_script_relay_is_running_while_its_child_sleeps(safe_run: SafeRun) -> None:
    if shutil.which("script") is None:
        pytest.skip("script is not installed")
    result = run_json(safe_run, "bash", "script -qec 'echo a; sleep 2; echo b' /dev/null")
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert result["output"].split() == ["a", "b"]


@pytest.mark.slow
def test_sudo_like_relay_with_a_silent_child_completes(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run_json(safe_run, "bash", program(tmp_path, "relay", RELAY))
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert "inner done" in result["output"]


@pytest.mark.slow
def test_keyboard_poll_between_steps_is_not_an_input_wait(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run_json(safe_run, "bash", program(tmp_path, "steps", CBREAK_STEPS))
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert result["output"].split()[-1] == "done"


@pytest.mark.slow
def test_a_thread_reading_stdin_while_the_main_thread_works(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run_json(safe_run, "bash", program(tmp_path, "listener", LISTENING_THREAD))
    assert (result["status"], result["exit_code"]) == ("completed", 0)
    assert result["output"].split()[-1] == "done"


@pytest.mark.slow
def test_a_dev_server_offering_keys_runs_until_its_timeout(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run_json(safe_run, "bash", program(tmp_path, "server", DEV_SERVER), "--timeout", "2")
    assert (result["status"], result["completion_reason"]) == ("timeout", "timeout")


# ---- the shell back at its prompt, whatever the command did to it ------------------------------------


@pytest.mark.parametrize(
    ("shell", "command", "output"),
    [
        # Without their hooks, the end is the prompt on the screen once the idle window is quiet.
        pytest.param("bash", "PROMPT_COMMAND=; trap - DEBUG; PS1='$ '; echo broke", "broke\n", marks=pytest.mark.slow),
        pytest.param("zsh", "precmd_functions=(); preexec_functions=(); PS1='$ '; echo broke", "broke\n",
                     marks=pytest.mark.slow),
        ("bash", "exec >/dev/null 2>&1", ""),
        ("zsh", "exec >/dev/null 2>&1", ""),
        ("bash", "stty olcuc; echo hello", "HELLO\n"),
    ],
)
def test_a_command_that_changes_the_shell_completes(safe_run: SafeRun, shell: str, command: str,
                                                    output: str) -> None:
    result = run_json(safe_run, shell, command)
    assert result["status"] == "completed", result["message"]
    assert result["exit_code"] == 0
    assert result["output"] == output


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_output_sent_to_a_log_completes_and_the_log_keeps_it(safe_run: SafeRun, shell: str, tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    result = run_json(safe_run, shell, f"exec >{log} 2>&1; echo building; false")
    assert (result["status"], result["exit_code"]) == ("completed", 1)
    assert result["completion_reason"] == "shell_integration", "the marks still reach the terminal"
    text = log.read_text()
    assert text.startswith("building\n")
    assert "633;C" not in text and "633;D" not in text, "no command mark, and so no nonce, in the user's log"


# ---- a `read` that cannot be told from the prompt: never typed into -----------------------------


@pytest.mark.slow
@pytest.mark.parametrize("prompt", ["name$ ", "go> "])
@pytest.mark.parametrize(("shell", "options"), [("dash", ()), ("bash", ("--strategy", "none"))])
def test_a_read_with_a_prompt_like_question_gets_no_answer(safe_run: SafeRun, tmp_path: Path, prompt: str,
                                                           shell: str, options: tuple[str, ...]) -> None:
    made = tmp_path / "made"
    result = run_json(safe_run, shell, f'read -p "{prompt}" x; touch "{made}$x"', *options)
    assert (result["status"], result["completion_reason"]) == ("input_required", "input_wait")
    assert result["prompt"] == prompt.strip()
    assert not list(tmp_path.glob("made*")), "something was typed into the read"


@pytest.mark.slow
def test_fish_read_without_integration_gets_no_answer(safe_run: SafeRun, tmp_path: Path) -> None:
    made = tmp_path / "made"
    result = run_json(safe_run, "fish", f'read -P "name\\$ " x; touch "{made}$x"', "--strategy", "none")
    assert result["status"] == "input_required"
    assert not list(tmp_path.glob("made*"))


def test_dash_runs_the_command_without_path(safe_run: SafeRun) -> None:
    ok = run_json(safe_run, "dash", "echo hi", "--env", "PATH=/nonexistent")
    assert (ok["status"], ok["exit_code"], ok["output"]) == ("completed", 0, "hi\n")
    missing = run_json(safe_run, "dash", "cat /etc/hostname", "--env", "PATH=/nonexistent")
    assert (missing["status"], missing["exit_code"]) == ("completed", 127)


@pytest.mark.parametrize("strategy", ["basic", "none"])
def test_zsh_tells_the_end_of_a_command_that_emptied_path(safe_run: SafeRun, strategy: str) -> None:
    """The lines typed after the command, or around it, print with zsh's own printf: its `command
    printf` would be the program on PATH, which the command took away."""
    result = run_json(safe_run, "zsh", "PATH=/nonexistent; echo hi", "--strategy", strategy)
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 0, "hi\n"), result
    assert result["downgrades"] == [], result


def test_dash_output_sent_away_still_ends_with_its_exit_code(safe_run: SafeRun) -> None:
    result = run_json(safe_run, "dash", "exec >/dev/null 2>&1; false")
    assert (result["status"], result["exit_code"]) == ("completed", 1)


# ---- what `killed` lists --------------------------------------------------------------------------


@pytest.mark.slow
def test_prompt_hook_processes_are_not_the_commands(safe_run: SafeRun) -> None:
    result = run_json(safe_run, "bash", "echo hi", "--env", "PROMPT_COMMAND=sleep 0.2")
    assert (result["status"], result["output"], result["killed"]) == ("completed", "hi\n", [])


@pytest.mark.slow
def test_each_killed_process_is_listed_once(safe_run: SafeRun) -> None:
    result = run_json(safe_run, "bash", "sleep 30 & sleep 30 | sleep 30", "--timeout", "0.5")
    pids = [entry["pid"] for entry in result["killed"]]
    assert result["status"] == "timeout"
    assert len(pids) == 3 and len(set(pids)) == 3


@pytest.mark.slow
def test_what_left_the_session_is_swept(safe_run: SafeRun) -> None:
    result = run_json(safe_run, "bash", "setsid sleep 30.25 & echo started")
    assert result["status"] == "completed"
    # The job is bash's fork until it execs setsid, which forks again before its child execs
    # sleep: on a busy machine the sweep may catch it under any of those names.
    swept = [entry for entry in result["killed"] if entry["command"] in ("sleep", "setsid", "bash")]
    assert swept and not any(pid_alive(entry["pid"]) for entry in swept), result["killed"]
    assert subprocess.run(["pgrep", "-x", "-f", "sleep 30.25"], capture_output=True).returncode == 1


def test_keep_background_leaves_what_left_the_session(safe_run: SafeRun, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    # setsid forks when run as a job, so `wait` may return before its child wrote the pid: the
    # command waits (at most 5 s) for the file instead.
    command = (f"setsid sh -c 'echo $$ >{pid_file}; exec sleep 30' & "
               f"for i in $(seq 500); do [ -s {pid_file} ] && break; sleep 0.01; done")
    result = run_json(safe_run, "bash", command, "--keep-background")
    pid = int(pid_file.read_text())
    try:
        assert result["killed"] == []
        assert pid_alive(pid)
    finally:
        os.kill(pid, 9)


# ---- what the kernel cannot see into ---------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("shell", "command"), [("bash", "echo before; kill -STOP $$; echo after"),
                                                ("bash", "echo before; suspend -f; echo after"),
                                                ("zsh", "echo before; kill -STOP $$; echo after"),
                                                ("dash", "echo before; kill -STOP $$; echo after")])
def test_a_stopped_shell_is_an_answer(safe_run: SafeRun, shell: str, command: str) -> None:
    safe_run.shell = shell_path(shell)
    outcome = safe_run("--format", "json", "--", command)
    result = outcome.json
    assert (result["status"], result["completion_reason"]) == ("interrupted", "process_stopped")
    assert result["output"] == "before\n"
    assert outcome.returncode == 124


@pytest.mark.slow
def test_a_reader_in_another_session_is_an_input_wait(safe_run: SafeRun, tmp_path: Path) -> None:
    result = run_json(safe_run, "bash", program(tmp_path, "gpglike", READER_ELSEWHERE))
    assert (result["status"], result["completion_reason"]) == ("input_required", "input_wait")
    assert result["prompt"] == "Passphrase:"
    assert len(result["killed"]) == 2
    assert not any(pid_alive(entry["pid"]) for entry in result["killed"])


@pytest.mark.slow
def test_a_setuid_prompt_seen_by_a_user_is_an_input_wait(ordinary_user: User) -> None:
    """su, run by an ordinary user, hides what it waits on: its question on the screen tells."""
    done = ordinary_user.run("--shell", shell_path("bash"), "--format", "json", "--", "su root -c true",
                             TERM="dumb", SAFE_RUN_YIELD_AFTER="never")
    result = json.loads(done.stdout)
    assert (result["status"], result["completion_reason"]) == ("input_required", "input_wait"), result
    assert result["prompt"] == "Password:"

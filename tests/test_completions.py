"""The shell completion scripts in completions/: current with the click command, and working.

The scripts are click's own, written by completions/generate.py. These tests regenerate them and
compare, check that each registers itself for `safe-run`, and drive the committed bash (and, when
installed, fish) script through the real completion protocol against `python -m safe_run`: the
first word offers the verbs, or the run verb's options when it starts with a dash, and after a
verb its own options and session ids.
"""

from __future__ import annotations

import difflib
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest

import fastcli
from safe_run.cli.commands import cli
from safe_run.cli.commands.run import run_command

ROOT = Path(__file__).resolve().parents[1]
COMPLETIONS = ROOT / "completions"
GENERATE = COMPLETIONS / "generate.py"
REGENERATE_HINT = "run `python completions/generate.py` (with the project's venv) and commit the result"

# shell -> committed file; these names are what pyproject.toml ships and what the shells look for
SCRIPTS = {
    "bash": "safe-run",
    "zsh": "_safe-run",
    "fish": "safe-run.fish",
}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("completions")
    proc = subprocess.run(
        [sys.executable, str(GENERATE), "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, f"completions/generate.py failed:\n{proc.stdout}{proc.stderr}"
    return out


def test_generate_writes_exactly_the_three_scripts(regenerated: Path) -> None:
    assert sorted(p.name for p in regenerated.iterdir()) == sorted(SCRIPTS.values())


@pytest.mark.parametrize("shell", sorted(SCRIPTS))
def test_committed_script_matches_the_click_command(shell: str, regenerated: Path) -> None:
    name = SCRIPTS[shell]
    committed_path = COMPLETIONS / name
    if not committed_path.is_file():
        pytest.fail(f"completions/{name} is missing; {REGENERATE_HINT}")
    committed = committed_path.read_text(encoding="utf-8")
    fresh = (regenerated / name).read_text(encoding="utf-8")
    if committed != fresh:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                fresh.splitlines(keepends=True),
                f"completions/{name} (committed)",
                f"completions/{name} (from the click command)",
            )
        )
        pytest.fail(f"completions/{name} differs from what the click command generates; {REGENERATE_HINT}\n{diff}")


@pytest.mark.parametrize(
    ("shell", "registration"),
    [
        ("bash", "complete -o nosort -F _safe_run_completion safe-run\n"),
        ("zsh", "compdef _safe_run_completion safe-run\n"),
        ("fish", "complete --no-files --command safe-run "),
    ],
)
def test_script_is_for_safe_run(shell: str, registration: str) -> None:
    """Registered for the command name people type, asking safe-run through its own variable.

    Catches a script generated under another program name (argv[0] such as `__main__.py`).
    """
    text = (COMPLETIONS / SCRIPTS[shell]).read_text(encoding="utf-8")
    assert registration in text
    assert f"_SAFE_RUN_COMPLETE={shell}_complete" in text
    if shell == "zsh":
        assert text.startswith("#compdef safe-run\n"), "zsh autoloads from fpath only with #compdef first"


def test_the_fish_script_printed_at_run_time_splits_at_the_first_comma_only() -> None:
    """`_SAFE_RUN_COMPLETE=fish_source safe-run | source`: the same script as the committed file."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["_SAFE_RUN_COMPLETE"] = "fish_source"
    proc = subprocess.run([sys.executable, "-m", "safe_run"], env=env, capture_output=True, text=True, timeout=60)
    assert 'string split --max 1 "," $completion' in proc.stdout
    assert 'string split "," $completion' not in proc.stdout
    committed = (COMPLETIONS / SCRIPTS["fish"]).read_text(encoding="utf-8")
    assert committed.partition("\n")[2] == proc.stdout


@pytest.mark.parametrize(
    ("shell", "check"),
    [("bash", ["bash", "-n"]), ("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])],
)
def test_script_parses(shell: str, check: list[str]) -> None:
    if shutil.which(check[0]) is None:
        pytest.skip(f"{check[0]} is not installed")
    proc = subprocess.run([*check, str(COMPLETIONS / SCRIPTS[shell])], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def safe_run_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment where `safe-run` is a wrapper around this checkout's `python -m safe_run`
    (without --real-cli, a fork of the pre-imported one, as the MCP servers of other tests are)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "safe-run"
    wrapper.write_text(f'#!/bin/sh\nexec {shlex.join(fastcli.program())} "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", os.defpath)])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["HOME"] = str(home)
    env["XDG_CONFIG_HOME"] = str(home / ".config")
    env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    # Completing a session id reads the sessions directory: a private one, never the user's own.
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env["XDG_RUNTIME_DIR"] = str(runtime)
    env["XDG_STATE_HOME"] = str(home / ".local" / "state")
    env.update(fastcli.program_env())
    return env


def choices(command: click.Command, name: str) -> set[str]:
    """The values a Choice option of `command` accepts, as its completion should offer them."""
    option = next(p for p in command.params if isinstance(p, click.Option) and name in p.opts)
    assert isinstance(option.type, click.Choice), f"{name} is not a choice option"
    return {str(choice) for choice in option.type.choices}


# Sources the script, finds the function it registered for safe-run, and calls it the way bash's
# programmable completion does: COMP_WORDS/COMP_CWORD set, arguments command, word, previous word.
BASH_DRIVER = r"""
source "$1" || exit 90
shift
spec=$(complete -p safe-run) || exit 91
[[ $spec == *" -F "* ]] || exit 92
fn=${spec##* -F }
fn=${fn%% *}
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
COMPREPLY=()
"$fn" safe-run "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


def complete_in_bash(words: list[str], env: dict[str, str]) -> set[str]:
    """What the committed bash script offers for the last of `words` (which may be "")."""
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not installed")
    proc = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", BASH_DRIVER, "bash", str(COMPLETIONS / SCRIPTS["bash"]), *words],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, f"driver exited {proc.returncode}:\n{proc.stderr}"
    return {line for line in proc.stdout.splitlines() if line}


VERB_NAMES = set(cli.commands)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["safe-run", "--for"], {"--format"}),
        (["safe-run", "--no-"], {"--no-rc", "--no-output-timeout", "--no-batch-env", "--no-input"}),
        (["safe-run", "--format", ""], choices(run_command, "--format")),
        (["safe-run", "--strategy", "b"], {"basic"}),
        (["safe-run", "--yie"], {"--yield-after"}),
        (["safe-run", ""], VERB_NAMES),
        (["safe-run", "po"], {"poll"}),
        (["safe-run", "s"], {name for name in VERB_NAMES if name.startswith("s")}),
        (["safe-run", "poll", "--w"], {"--wait"}),
        (["safe-run", "poll", "--format", ""], choices(cli.commands["poll"], "--format")),
        (["safe-run", "send", "X", "--no"], {"--no-enter"}),
        (["safe-run", "doctor", "--sh"], {"--shell"}),
        (["safe-run", "run", "--for"], {"--format"}),
    ],
    ids=[
        "option-name",
        "option-prefix",
        "format-choices",
        "strategy-choice",
        "yield-after",
        "verbs",
        "verb-name",
        "verb-prefix",
        "poll-option",
        "poll-format-choices",
        "send-option",
        "doctor-option",
        "run-verb-option",
    ],
)
def test_bash_completes_through_the_committed_script(
    words: list[str], expected: set[str], safe_run_on_path: dict[str, str]
) -> None:
    offered = complete_in_bash(words, safe_run_on_path)
    assert offered == expected, f"completing {' '.join(words)!r} offered {sorted(offered)}"


def test_choices_come_from_the_click_options() -> None:
    """The format cases above follow the options: the run verb streams (jsonl), the others answer once."""
    assert {"auto", "json", "pretty"} <= choices(cli.commands["poll"], "--format") <= choices(run_command, "--format")


@pytest.mark.parametrize("verb", ["poll", "send", "stop"])
def test_bash_completes_session_ids(verb: str, safe_run_on_path: dict[str, str]) -> None:
    from safe_run.session.store import SessionStore, sessions_root

    store = SessionStore(sessions_root(safe_run_on_path))
    ids = {store.create("sleep 60").id, store.create("make").id}
    assert complete_in_bash(["safe-run", verb, ""], safe_run_on_path) == ids
    first = sorted(ids)[0]
    assert complete_in_bash(["safe-run", verb, first[:12]], safe_run_on_path) == {first}


def test_fish_completes_through_the_committed_script(safe_run_on_path: dict[str, str]) -> None:
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    script = COMPLETIONS / SCRIPTS["fish"]
    proc = subprocess.run(
        [fish, "--no-config", "-c", 'source $argv[1]; and complete --do-complete "safe-run --for"', str(script)],
        env=safe_run_on_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    offered = {line.split("\t", 1)[0] for line in proc.stdout.splitlines() if line}
    assert offered == {"--format"}, f"offered {sorted(offered)}\n{proc.stderr}"


def click_answer(words: list[str], shell: str, env: dict[str, str], cwd: Path | None = None) -> list[str]:
    """safe-run's own answer in the completion protocol, as the scripts ask for it."""
    proc = subprocess.run(
        ["safe-run"],
        env={**env, "_SAFE_RUN_COMPLETE": f"{shell}_complete", "COMP_WORDS": " ".join(words),
             "COMP_CWORD": str(len(words) - 1) if shell != "fish" else words[-1]},
        cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def complete_in_fish(line: str, env: dict[str, str], cwd: Path | None = None) -> list[tuple[str, str]]:
    """(value, description) pairs the committed fish script offers for a command line."""
    fish = shutil.which("fish")
    if fish is None:
        pytest.skip("fish is not installed")
    proc = subprocess.run(
        [fish, "--no-config", "-c", "source $argv[1]; and complete --do-complete $argv[2]",
         str(COMPLETIONS / SCRIPTS["fish"]), line],
        env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [tuple((entry + "\t").split("\t")[:2]) for entry in proc.stdout.splitlines() if entry]  # type: ignore[misc]


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_command_file_completes_paths(shell: str, safe_run_on_path: dict[str, str]) -> None:
    """The scripts turn a `file` answer into the shell's own path completion."""
    answer = click_answer(["safe-run", "--command-file", ""], shell, safe_run_on_path)
    assert answer[0].split(",")[0] == "file" if shell == "bash" else answer[0] == "file"


def test_fish_completes_a_command_file_path(safe_run_on_path: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "script.sh").write_text("echo hi\n")
    offered = {value for value, _ in complete_in_fish("safe-run --command-file scr", safe_run_on_path, tmp_path)}
    assert "script.sh" in offered


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["safe-run", "send", "X", "--key", "page"], {"pageup", "pagedown"}),
        (["safe-run", "send", "X", "--key", "ctrl-"], {f"ctrl-{c}" for c in "abcdefghijklmnopqrstuvwxyz"}),
        (["safe-run", "send", "X", "--key", "en"], {"enter", "end"}),
        (["safe-run", "--ver"], {"--version"}),
    ],
    ids=["named-keys", "ctrl-keys", "key-prefix", "version"],
)
def test_bash_completes_key_names_and_version(
    words: list[str], expected: set[str], safe_run_on_path: dict[str, str]
) -> None:
    assert complete_in_bash(words, safe_run_on_path) == expected


def test_every_named_key_is_offered(safe_run_on_path: dict[str, str]) -> None:
    from safe_run.session.keys import NAMED

    assert set(NAMED) <= complete_in_bash(["safe-run", "send", "X", "--key", ""], safe_run_on_path)


def test_session_ids_come_with_their_command(safe_run_on_path: dict[str, str]) -> None:
    from safe_run.session.store import SessionStore, sessions_root

    store = SessionStore(sessions_root(safe_run_on_path))
    session = store.create("make -j2, then test\nsecond line")
    session.write_meta(command="make -j2, then test\nsecond line")
    assert complete_in_fish("safe-run poll ", safe_run_on_path) == [(session.id, "make -j2, then test")]
    zsh = click_answer(["safe-run", "stop", ""], "zsh", safe_run_on_path)
    assert zsh == ["plain", session.id, "make -j2, then test"]


def test_fish_keeps_a_description_past_its_first_comma(safe_run_on_path: dict[str, str]) -> None:
    offered = dict(complete_in_fish("safe-run --she", safe_run_on_path))
    assert offered == {"--shell": "Shell to run in (default: $SHELL, then the passwd entry, then /bin/sh)."}


def test_help_lists_version_and_every_exit_status() -> None:
    from click.testing import CliRunner

    text = " ".join(CliRunner().invoke(cli, ["--help"]).output.split())
    assert "--version Show the version and exit." in text
    for status in ("2 usage", "75 ", "123 ", "124 ", "125 ", "129/130/143", "141 "):
        assert status in text, status

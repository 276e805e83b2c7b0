"""No run writes to the user's history, whatever the shell and the strategy, with history on in the rc files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SafeRun, shell_path

BASHRC = r"""
HISTFILE=~/.bash_history HISTSIZE=1000 HISTFILESIZE=1000
shopt -s histappend
PROMPT_COMMAND='history -a'
trap 'history -a' EXIT
"""
ZSHRC = r"""
HISTFILE=~/.zsh_history SAVEHIST=1000 HISTSIZE=1000
setopt INC_APPEND_HISTORY SHARE_HISTORY EXTENDED_HISTORY
"""
HISTORIES = {
    "bash": (".bashrc", BASHRC, ".bash_history", "echo before\n"),
    "zsh": (".zshrc", ZSHRC, ".zsh_history", ": 1700000000:0;echo before\n"),
    "fish": (".config/fish/config.fish", "set -g fish_history default\n", ".local/share/fish/fish_history",
             "- cmd: echo before\n  when: 1700000000\n"),
}


def write(home: Path, relative: str, text: str) -> Path:
    path = home / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("strategy", ["auto", "rich", "basic", "none"])
@pytest.mark.parametrize("name", sorted(HISTORIES))
@pytest.mark.slow
def test_history_file_is_untouched(safe_run: SafeRun, name: str, strategy: str) -> None:
    rc, rc_text, history, before = HISTORIES[name]
    write(safe_run.home, rc, rc_text)
    path = write(safe_run.home, history, before)
    safe_run.shell = shell_path(name)
    for command in ("echo hi", "echo hi; exit 3"):
        result = safe_run("--strategy", strategy, "--", command).json
        assert result["status"] == "completed", result["message"]
    assert path.read_bytes() == before.encode()


def test_dash_keeps_no_history(safe_run: SafeRun) -> None:
    if shutil.which("dash") is None:
        pytest.skip("dash is not installed")
    safe_run.shell = shell_path("dash")
    before = sorted(safe_run.home.rglob("*"))
    assert safe_run("--", "echo hi").json["output"] == "hi\n"
    assert sorted(safe_run.home.rglob("*")) == before


@pytest.mark.slow
def test_doctor_leaves_every_history_untouched(safe_run: SafeRun) -> None:
    paths = {}
    for name, (rc, rc_text, history, before) in HISTORIES.items():
        write(safe_run.home, rc, rc_text)
        paths[write(safe_run.home, history, before)] = before.encode()
    outcome = safe_run("doctor", "--format", "json", timeout=90)
    assert outcome.json["ok"] is True, outcome.stdout
    assert {path: path.read_bytes() for path in paths} == paths

"""The user's own start-up files load, and integration survives what they commonly do."""

from __future__ import annotations

import pytest

from conftest import SafeRun, shell_path

BASHRC_STRING = r"""
set -u
my_greeting() { echo "function from rc"; }
alias greet='my_greeting'
PROMPT_COMMAND='echo prompt-hook >/dev/null; __user_status=$?'
PS1='custom \u \$ '
trap 'true' DEBUG
export FROM_RC=yes
"""

BASHRC_ARRAY = r"""
set -u
PROMPT_COMMAND=('__user_hook_ran=1' 'PS1="rebuilt> "')
alias greet='echo alias from rc'
"""

ZSHRC = r"""
setopt NO_UNSET
autoload -Uz add-zsh-hook
user_precmd() { PS1="theme %~ %# "; }
add-zsh-hook precmd user_precmd
add-zsh-hook preexec user_preexec
user_preexec() { : }
alias greet='echo alias from rc'
export FROM_RC=yes
"""

FISH_CONFIG = r"""
function fish_prompt
    echo -n "my fish> "
end
function greet
    echo function from config
end
set -gx FROM_RC yes
"""


def with_shell(safe_run: SafeRun, name: str) -> SafeRun:
    safe_run.shell = shell_path(name)
    return safe_run


def test_bash_rc_with_string_prompt_command_debug_trap_and_set_u(safe_run: SafeRun) -> None:
    (safe_run.home / ".bashrc").write_text(BASHRC_STRING)
    result = with_shell(safe_run, "bash")("--", 'greet; echo "$FROM_RC"; sh -c "exit 7"').json
    assert (result["output"], result["exit_code"]) == ("function from rc\nyes\n", 7)
    assert result["completion_reason"] == "shell_integration"


def test_bash_rc_with_prompt_command_array_that_rebuilds_ps1(safe_run: SafeRun) -> None:
    (safe_run.home / ".bashrc").write_text(BASHRC_ARRAY)
    result = with_shell(safe_run, "bash")("--", "greet").json
    assert (result["output"], result["exit_code"], result["strategy"]) == ("alias from rc\n", 0, "rich")


def test_zsh_rc_with_precmd_theme_and_no_unset(safe_run: SafeRun) -> None:
    (safe_run.home / ".zshrc").write_text(ZSHRC)
    result = with_shell(safe_run, "zsh")("--", 'greet; echo "$FROM_RC"; false').json
    assert (result["output"], result["exit_code"], result["strategy"]) == ("alias from rc\nyes\n", 1, "rich")


def test_zsh_user_zdotdir_is_honoured_and_restored(safe_run: SafeRun) -> None:
    zdotdir = safe_run.home / "zconf"
    zdotdir.mkdir()
    (zdotdir / ".zshrc").write_text("alias greet='echo from zdotdir'\n")
    outcome = with_shell(safe_run, "zsh")("--", 'greet; echo "$ZDOTDIR"', env={"ZDOTDIR": str(zdotdir)})
    assert outcome.json["output"] == f"from zdotdir\n{zdotdir}\n"


ZDOTDIR_PROBE = 'echo "[${FROM_ZDOTDIR-}][${ZDOTDIR-unset}][${(t)ZDOTDIR}]"'


@pytest.mark.parametrize("export", ["export ", ""])
@pytest.mark.parametrize("strategy", ["auto", "rich", "basic", "none"])
def test_zsh_zdotdir_set_in_zshenv_loads_as_plain_zsh_does(safe_run: SafeRun, export: str, strategy: str) -> None:
    zdotdir = safe_run.home / ".config" / "zsh"
    zdotdir.mkdir(parents=True)
    (safe_run.home / ".zshenv").write_text(f"{export}ZDOTDIR=$HOME/.config/zsh\n")
    (zdotdir / ".zshrc").write_text("FROM_ZDOTDIR=yes\n")
    sr = with_shell(safe_run, "zsh")
    kind = "scalar-export" if export else "scalar"
    result = sr("--strategy", strategy, "--", ZDOTDIR_PROBE).json
    assert (result["output"], result["strategy"]) == (f"[yes][{zdotdir}][{kind}]\n", strategy.replace("auto", "rich"))
    assert sr("--strategy", strategy, "--no-rc", "--", ZDOTDIR_PROBE).json["output"] == "[][unset][]\n"


def test_zsh_without_zdotdir_leaves_none_behind(safe_run: SafeRun) -> None:
    result = with_shell(safe_run, "zsh")("--", 'echo "[${ZDOTDIR-unset}]"').json
    assert result["output"] == "[unset]\n"


def test_fish_config_and_custom_prompt(safe_run: SafeRun) -> None:
    config = safe_run.home / ".config" / "fish"
    config.mkdir(parents=True)
    (config / "config.fish").write_text(FISH_CONFIG)
    result = with_shell(safe_run, "fish")("--", "greet; echo $FROM_RC").json
    assert (result["output"], result["exit_code"]) == ("function from config\nyes\n", 0)


@pytest.mark.parametrize(
    ("name", "rc_path", "rc_text"),
    [
        ("bash", ".bashrc", "export FROM_RC=yes\n"),
        ("zsh", ".zshrc", "export FROM_RC=yes\n"),
        ("fish", ".config/fish/config.fish", "set -gx FROM_RC yes\n"),
    ],
)
def test_no_rc_skips_the_user_files(safe_run: SafeRun, name: str, rc_path: str, rc_text: str) -> None:
    path = safe_run.home / rc_path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rc_text)
    sr = with_shell(safe_run, name)
    assert sr("--", "echo \"[$FROM_RC]\"").json["output"] == "[yes]\n"
    assert sr("--no-rc", "--", "echo \"[$FROM_RC]\"").json["output"] == "[]\n"


def test_env_option_wins_over_the_rc_file(sr: SafeRun) -> None:
    for rc_path, line in ((".bashrc", "export PICK=rc\n"), (".zshrc", "export PICK=rc\n"),
                          (".config/fish/config.fish", "set -gx PICK rc\n")):
        path = sr.home / rc_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(line)
    assert sr("--env", "PICK=caller", "--", "echo $PICK").json["output"] == "caller\n"

"""The shell registry: every part of safe-run learns what a shell is from its kind alone."""

from __future__ import annotations

from dataclasses import replace

import pytest

from safe_run.shells import bash, fish, posix, zsh
from safe_run.shells.registry import REGISTRY, kind_of


@pytest.mark.parametrize(
    ("path", "kind"),
    [("bash", bash.SHELL), ("/usr/bin/bash5.2", bash.SHELL), ("-bash", bash.SHELL), ("/usr/bin/zsh-5.9", zsh.SHELL),
     ("zsh", zsh.SHELL), ("/usr/local/bin/fish", fish.SHELL)],
)
def test_registered_shells_are_found_by_file_name(path: str, kind: object) -> None:
    assert kind_of(path) is kind


def test_every_registered_kind_answers_to_its_own_name() -> None:
    for kind in REGISTRY:
        assert kind_of(kind.name) is kind
        assert kind.integrated and kind.syntax is not None and kind.doctor.names_probe


@pytest.mark.parametrize("path", ["dash", "/bin/sh", "-sh", "/usr/bin/ksh93", "mksh"])
def test_posix_shells_keep_their_own_name(path: str) -> None:
    kind = kind_of(path)
    assert kind.name == path.rsplit("/", 1)[-1].lstrip("-")
    assert kind.family == "posix" and kind.integrated is False
    assert kind.plain_launch is posix.plain_launch and kind.syntax == posix.SHELL.syntax


def test_an_unknown_shell_runs_as_posix_but_is_not_syntax_checked() -> None:
    kind = kind_of("/usr/bin/tcsh")
    assert (kind.name, kind.family, kind.integrated, kind.syntax) == ("tcsh", "posix", False, None)


def test_a_new_kind_is_picked_up_by_name() -> None:
    nu = replace(posix.SHELL, name="nu", family="nu")
    assert kind_of("/usr/local/bin/nu0.9", (*REGISTRY, nu)) is nu
    assert kind_of("/usr/bin/bash5.2", (*REGISTRY, nu)) is bash.SHELL


def test_only_shells_take_command_lines() -> None:
    """What a command may `exec` in the shell's place: typed into only if it is a shell."""
    from safe_run.shells.registry import is_shell

    assert all(is_shell(kind_of(name)) for name in ("/usr/bin/bash", "zsh", "fish", "dash", "sh", "mksh"))
    assert not any(is_shell(kind_of(name)) for name in ("python3.11", "ssh", "node", "vim"))

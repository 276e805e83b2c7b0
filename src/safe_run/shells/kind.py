"""What safe-run knows about one kind of shell, so that the runner, the syntax check and doctor
ask the shell's kind instead of each keeping a table keyed by name.

Each shell module (`bash`, `zsh`, `fish`, `posix`) defines one `ShellKind` named `SHELL`, and
`registry` maps a shell's path or name to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..core.tracker import Lines
    from . import Launch, RunSetup


@dataclass(frozen=True)
class SyntaxFacts:
    """How the shell is asked whether a text parses, and which unfinished texts it lets through."""

    # Between the shell and the script: no-execute mode, and no start-up files read.
    check_options: tuple[str, ...]
    # Whose words the shell's messages use, and which scanner names the culprit.
    grammar: Literal["posix", "fish"] = "posix"
    # A heredoc whose terminator never comes: accepted with a warning (bash)...
    warns_open_heredoc: bool = False
    # ...or silently taken as ending at the end of the input (zsh, dash).
    accepts_open_heredoc: bool = False
    # `echo x &&` run as `echo x` (zsh).
    accepts_dangling_operator: bool = False


@dataclass(frozen=True)
class DoctorFacts:
    """What doctor needs to check the shell: its start-up files and how it lists what they define."""

    # The start-up files a run loads if they exist (environ, home, the ZDOTDIR a run reported).
    rc_candidates: Callable[[Mapping[str, str], str, str | None], list[str]]
    # Prints the program running the check command.
    exe_probe: str
    # Lists the names the user's files define, one `name:` line each; empty where it cannot.
    names_probe: str = ""
    # Typed first when the shell is started plainly, to keep the check out of the user's history.
    history_off: str = ""
    # Given to the shell started plainly before `-i -c`.
    plain_options: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShellKind:
    """One kind of shell: how to start it, how to check a command's syntax in it, how doctor checks it."""

    # The name results and reports show: the kind's own, or the file's for a shell not registered.
    name: str
    # The registered kind this is: bash, zsh, fish or posix.
    family: str
    plain_launch: Callable[[RunSetup], Launch]
    doctor: DoctorFacts
    # A persistent shell's later command with a directory and variables of its own, in this
    # shell's syntax: (command, cwd or None, variables) -> the text to run.
    scoped: Callable[[str, str | None, Mapping[str, str]], str]
    # The command with its standard input read from the shell's descriptor N (`--stdin`), which
    # the command itself does not get: (command, N) -> the text to run. Its lines keep their numbers.
    with_stdin: Callable[[str, int], str]
    # Starts it with integration; None where there is none.
    launch: Callable[[RunSetup], Launch] | None = None
    # What to type into a live shell of this kind, the line that loads the integration again
    # included: also for a shell that a command started with `exec`.
    live_lines: Callable[[RunSetup], Lines] | None = None
    # None where its no-execute mode is not known: the command then runs unchecked.
    syntax: SyntaxFacts | None = None
    # Ctrl-C to the shell while it runs a command line abandons the rest of the line, even from one
    # of its own reads (bash). fish's `read` and zsh's `vared` return instead and the line goes on.
    interrupt_ends_line: bool = False
    # What goes around the nonce-marked D its prompt draws when it runs without integration (see
    # `posix.marked_prompt`): bash's `\\[ \\]`; None where the prompt expands no parameters (zsh).
    prompt_mark: tuple[str, str] | None = None

    @property
    def integrated(self) -> bool:
        return self.launch is not None

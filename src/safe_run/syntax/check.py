"""Refuse a command that does not parse, before any of it runs.

The command is handed to the user's shell with `eval`, and bash and dash parse an eval'd string
a line at a time, running each line before reading the next: with an unmatched quote on the last
line, every line before it would run. So the command file is first given to the same shell in
no-execute mode (`-n`), and a syntax error comes back as a `SyntaxProblem` whose message tells
the caller, often an agent, what is unbalanced, in the shell's own words, and that nothing ran.

The check is a courtesy, never a gate that can fail on its own: an unknown shell, a shell that
cannot be started, an option it does not know, or a check slower than the timeout all mean
"no verdict" (None), and the command runs as it would have without the check.

A one-line command of simple commands joined by pipes and lists, of the plain pieces `simple`
lists, cannot be a syntax error in a POSIX-family shell, bash or zsh: it is passed without starting
the shell (a fork and an exec saved on every `ls -la` or `cd src && grep -rn x . | head` an agent
runs). In fish, only plain words are.

Some mistakes the shells accept at the end of the input: bash, zsh and dash treat a heredoc
whose terminator never comes as ending at the end of the file (bash merely warns), zsh runs
`echo x &&` as `echo x`, and zsh ends a glob group left open (`echo (`, `echo a(b`) at the end of
the file, where at a prompt it reads the next line into it. All are almost always a truncated
command, so they are reported too.
"""

from __future__ import annotations

import os
import re
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .constructs import DANGLING, heredoc, swallows_the_rest
from .diagnosis import SyntaxProblem, bash_heredoc_warning, classify
from ..shells.kind import SyntaxFacts
from .family import syntax_facts
from .posix_scan import dangling_operator, scan_posix
from .simple import simple_list
from .words import ShellWords, main_words, shell_words

if TYPE_CHECKING:
    import subprocess


# Plain words on one line, and the words that would open or close a construct among them.
PLAIN_WORDS = re.compile(r"[A-Za-z0-9_./=:,+@%~ \t-]*\Z")
RESERVED = frozenset({
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "in", "function", "coproc", "time", "foreach", "end", "repeat", "always", "nocorrect", "noglob",
})


# The test keywords of bash, zsh and ksh, reserved where a word can be.
POSIX_RESERVED = RESERVED | {"[[", "]]"}
# fish's own block and loop words (checked in fish 3.6 with --no-execute), and its joiners.
FISH_RESERVED = RESERVED | {"begin", "switch", "break", "continue", "return", "and", "or", "not"}


def plainly_parses(facts: SyntaxFacts, command: str) -> bool:
    """Whether no shell of the text's grammar can fail to parse it: most commands, which then cost
    no start of the shell's parser (2-5 ms). For POSIX-family shells, simple commands joined by
    pipes and lists (`simple`); for fish, plain words."""
    if facts.grammar == "posix":
        return simple_list(command, POSIX_RESERVED)
    if facts.grammar != "fish" or not PLAIN_WORDS.match(command):
        return False
    return not FISH_RESERVED.intersection(command.split())


def check_argv(facts: SyntaxFacts, shell_path: str, script: str) -> list[str]:
    """The no-execute invocation, with the options the shell's kind gives (see `shells/`).

    Options the user's rc files set cannot be honoured by any shell here: under -n those files
    would not run even if read, so the kinds make sure they are not even read.
    """
    return [shell_path, *facts.check_options, script]


def check_environment(environ: dict[str, str]) -> dict[str, str]:
    """The user's environment, minus start-up hooks, with messages in English.

    BASH_ENV and ENV name files that some non-interactive shells source. The classifier reads
    the shell's messages, so they must not be translated; the character type is kept, as it
    decides how non-ASCII text is read.
    """
    env = {name: value for name, value in environ.items() if name not in ("BASH_ENV", "ENV", "LANGUAGE")}
    ctype = env.pop("LC_ALL", None) or env.get("LC_CTYPE") or env.get("LANG")
    if ctype:
        env["LC_CTYPE"] = ctype
    env["LC_MESSAGES"] = "C"
    return env


@dataclass(frozen=True)
class _Verdict:
    returncode: int
    stderr: str


def _run_check(argv: list[str], cwd: Path, timeout: float) -> _Verdict | None:
    """One no-execute run, detached from any terminal; None when it cannot give a verdict. Most
    commands need none (`plainly_parses`), nor the subprocess module that starts it."""
    import subprocess

    try:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=check_environment(dict(os.environ)),
        )
    except (OSError, ValueError):
        return None
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None
    if process.returncode < 0:
        return None
    return _Verdict(process.returncode, stderr.decode("utf-8", errors="replace"))


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Whatever the shell started must not keep the pipe, and so the caller, waiting."""
    import subprocess

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        process.kill()
    try:
        process.communicate(timeout=1.0)
    except subprocess.TimeoutExpired:
        if process.stderr is not None:
            process.stderr.close()
        process.wait()


def _reads_on(facts: SyntaxFacts, shell_path: str, command: str, timeout: float) -> bool:
    """Whether the shell reads a line appended after the text as part of it.

    A lone `)` is an error wherever the shell reads it as code, so if the text plus that line
    still parses, the line went into what the text left open: a heredoc whose terminator never
    came, or a zsh glob group. The shell's own rules (quoted words, `<<-`, several heredocs on a
    line, zsh's patterns) decide, not a re-implementation.
    """
    with tempfile.TemporaryDirectory(prefix="safe-run-syntax-") as directory:
        Path(directory, "command").write_text(command + "\n)\n", encoding="utf-8")
        verdict = _run_check(check_argv(facts, shell_path, "./command"), Path(directory), timeout)
    return verdict is not None and verdict.returncode == 0


def _accepted_but_unfinished(
    facts: SyntaxFacts, shell_path: str, command: str, words: list[ShellWords], deadline: float
) -> SyntaxProblem | None:
    """The mistakes a shell lets through at the end of the input (see the module docstring)."""
    if facts.warns_open_heredoc:
        return bash_heredoc_warning(words)
    if facts.accepts_open_heredoc:
        scanned = scan_posix(command)  # the shell is asked only where the text looks left open
        remaining = deadline - time.monotonic()
        if ("<<" in command or scanned is not None) and remaining > 0 \
                and _reads_on(facts, shell_path, command, remaining):
            left_open = scanned is not None and (swallows_the_rest(scanned) or "<<" not in command)
            return SyntaxProblem(scanned if left_open and scanned is not None else heredoc(""), "", None)
    if facts.accepts_dangling_operator and dangling_operator(command):
        return SyntaxProblem(DANGLING, "", None)
    return None


def check_syntax(
    shell_name: str, shell_path: str, command_file: Path, timeout: float = 3.0, written: str | None = None,
) -> SyntaxProblem | None:
    """A `SyntaxProblem` when the shell would reject the command; None when it parses, and also
    when no verdict could be had in time (the command then runs as it would without a check).

    The shell is run in the file's directory and given the file's bare name, so that what it
    prints about the file is predictable and can be taken out of the message. `written`: the
    file's text, from the caller that has just written it (not read back before every command).
    """
    facts = syntax_facts(shell_name)
    if facts is None:
        return None
    command_file = Path(command_file)
    try:
        command = written if written is not None else command_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if plainly_parses(facts, command):
        return None
    if os.sep in shell_path:
        shell_path = os.path.abspath(shell_path)
    script = f"./{command_file.name}"
    deadline = time.monotonic() + timeout
    verdict = _run_check(check_argv(facts, shell_path, script), command_file.parent, timeout)
    if verdict is None:
        return None
    words = shell_words(verdict.stderr, script)
    if verdict.returncode == 0:
        return _accepted_but_unfinished(facts, shell_path, command, words, deadline)
    if not words:
        # Not about the command: a shell too old for an option fails before reading the file,
        # and `zsh -n` exits 1 for valid text with a top-level `!` pipeline (`! false`), as it
        # negates the status of the command it did not run. Syntax errors always name the file.
        return None
    chosen = main_words(words)
    return SyntaxProblem(classify(shell_name, chosen.text, command), chosen.neutral(), chosen.line)

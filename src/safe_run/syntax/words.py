"""The shell's words: pick its diagnostic, drop the temporary file's name, find the line."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MESSAGE_LIMIT = 300
BASH_HEREDOC = re.compile(r"here-document at line (\d+) delimited by end-of-file \(wanted `(.*)'\)")
_LINE_IN_TEXT = re.compile(r"\bline (\d+)\b")


@dataclass(frozen=True)
class ShellWords:
    """One diagnostic line from the shell, without the file name that means nothing to a reader."""

    text: str
    line: int | None

    def neutral(self) -> str:
        text = self.text if len(self.text) <= _MESSAGE_LIMIT else self.text[: _MESSAGE_LIMIT - 1] + "…"
        return f"line {self.line}: {text}" if self.line is not None else text


def _prefix_pattern(script: str) -> re.Pattern[str]:
    """How the shells introduce a diagnostic about the script: bash, zsh, dash, fish, ksh, mksh."""
    path = re.escape(script)
    return re.compile(
        rf"^(?:[\w.-]+: )?{path}"
        r"(?::\s*line (?P<bash>\d+)|:\s*(?P<colon>\d+)|\s*\(line (?P<fish>\d+)\)|\[(?P<mksh>\d+)\])?"
        r":\s*(?P<text>.*)$"
    )


def shell_words(stderr: str, script: str) -> list[ShellWords]:
    """Every diagnostic the shell printed about the script, in order."""
    pattern = _prefix_pattern(script)
    found = []
    for raw in stderr.splitlines():
        match = pattern.match(raw.strip())
        if match is None:
            continue
        number = next((match[key] for key in ("bash", "colon", "fish", "mksh") if match[key]), None)
        text = match["text"].replace(script, "the command").strip()
        if number is None and (inline := _LINE_IN_TEXT.search(text)):
            number = inline[1]
        found.append(ShellWords(text, int(number) if number else None))
    return found


def main_words(words: list[ShellWords]) -> ShellWords:
    """The diagnostic that explains the failure: the first error, else the first warning."""
    errors = [item for item in words if not item.text.lower().startswith("warning")]
    return (errors or words)[0]


"""Where safe-run's answers go and how they may look, decided once per call.

The streams, whether each is a terminal, and what the variables say (CI, TERM, NO_COLOR,
FORCE_COLOR, the locale) are read once, when the command line starts a verb, into an
`Environment` that is passed down to everything that writes for people or machines. Nothing
else looks at `sys.stdout.isatty()` or `os.environ` to decide how to present, so the choices
are made the same way everywhere, and tests pass a made-up environment instead of patching.
Nothing here imports rich, or anything a JSON run does not need.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True)
class Presentation:
    passthrough: bool  # stdout is a terminal: pass the command's bytes on, filtered
    command_colour: bool  # keep the command's own colours in what is passed on
    status_line: bool  # draw the live status line on stderr
    colour: bool  # colour safe-run's own summary on stderr
    unicode: bool = True  # the locale is UTF-8: marks and spinner may be drawn in Unicode


@dataclass(frozen=True)
class Environment:
    """The process's streams and variables, as the call found them."""

    environ: Mapping[str, str]
    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    stdin_isatty: bool = False
    stdout_isatty: bool = False
    stderr_isatty: bool = False

    @classmethod
    def current(cls) -> Environment:
        """This process's environment, read now."""
        return cls(
            environ=os.environ,
            stdin=sys.stdin,
            stdout=sys.stdout,
            stderr=sys.stderr,
            stdin_isatty=_isatty(sys.stdin),
            stdout_isatty=_isatty(sys.stdout),
            stderr_isatty=_isatty(sys.stderr),
        )

    @property
    def ci(self) -> bool:
        return is_ci(self.environ)

    @property
    def persons_keyboard(self) -> bool:
        """stdin is a person's terminal: outside CI, and not the dumb terminal agents declare."""
        return self.stdin_isatty and not self.ci and self.environ.get("TERM", "") != "dumb"

    @property
    def persons_screen(self) -> bool:
        """stdout is a person's terminal: outside CI, and not the dumb terminal agents declare."""
        return self.stdout_isatty and not self.ci and self.environ.get("TERM", "") != "dumb"

    @property
    def github_actions(self) -> bool:
        return self.environ.get("GITHUB_ACTIONS") == "true"

    @property
    def presentation(self) -> Presentation:
        return choose_presentation(self.environ, self.stdout_isatty, self.stderr_isatty)

    @property
    def unicode(self) -> bool:
        """safe-run's own marks and spinner (on stderr) may be drawn in Unicode."""
        return unicode_ok(self.stderr, locale_is_utf8(self.environ))

    def wants_json(self, output_format: str) -> bool:
        """A machine reads stdout: JSON (or JSON lines) rather than the pretty form.

        Under CI, auto is the pretty form (plain, streaming into the log): a CI step's log is read
        by people, who expect to see a build's output as it runs. So it is at a person's terminal
        whatever stdout is (`safe-run -- make | tee log`): the run is theirs.
        """
        if output_format == "auto":
            return not self.stdout_isatty and not self.ci and not self.persons_keyboard
        return output_format in ("json", "jsonl")

    def resolve_format(self, output_format: str) -> str:
        """'json', 'jsonl' or 'pretty': auto is pretty on a terminal or under CI, JSON otherwise."""
        if output_format == "auto":
            return "json" if self.wants_json("auto") else "pretty"
        return output_format


def is_ci(environ: Mapping[str, str]) -> bool:
    """CI services set CI=true; empty, 0, false and no mean it is not set."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def choose_presentation(environ: Mapping[str, str], stdout_tty: bool, stderr_tty: bool) -> Presentation:
    """NO_COLOR (non-empty) wins over FORCE_COLOR (non-empty), which wins over CI and TERM=dumb.

    CI and TERM=dumb make every stream count as not a terminal: no live display, no status line,
    no colour (unless forced).
    """
    plain = is_ci(environ) or environ.get("TERM", "") == "dumb"
    no_color = environ.get("NO_COLOR", "") != ""
    force_color = environ.get("FORCE_COLOR", "") != ""
    passthrough = stdout_tty and not plain
    return Presentation(
        passthrough=passthrough,
        command_colour=passthrough and not no_color,
        status_line=passthrough and stderr_tty,
        colour=not no_color and (force_color or (stderr_tty and not plain)),
        unicode=locale_is_utf8(environ),
    )


def _is_utf8(name: str) -> bool:
    return name.lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig")


def locale_is_utf8(environ: Mapping[str, str]) -> bool:
    """The character set the person's locale names (LC_ALL, else LC_CTYPE, else LANG) is UTF-8.

    Read from the variables rather than from the stream: Python's UTF-8 mode makes every stream
    UTF-8 under `LANG=C`, and its locale coercion adds `LC_CTYPE=C.UTF-8` to the environment,
    while the terminal behind it may still draw only ASCII.
    """
    lang = environ.get("LANG") or "C"
    ctype = environ.get("LC_CTYPE", "")
    if ctype in _COERCED and not environ.get("LC_ALL") and not _codeset_is_utf8(lang):
        ctype = ""  # Python's start-up put it there (PEP 538): the person's locale is LANG's
    name = environ.get("LC_ALL") or ctype or lang
    return _codeset_is_utf8(name)


# What Python sets LC_CTYPE to when it starts under the C locale (PEP 538 locale coercion).
_COERCED = ("C.UTF-8", "C.utf8", "UTF-8")


def _codeset_is_utf8(locale_name: str) -> bool:
    return _is_utf8(locale_name.partition(".")[2].partition("@")[0])


def unicode_ok(stream: TextIO, locale_utf8: bool) -> bool:
    """Marks and spinners may be drawn in Unicode: the locale says UTF-8 and the stream can write it."""
    return locale_utf8 and _is_utf8(getattr(stream, "encoding", None) or "")


def _isatty(stream: TextIO | None) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (OSError, ValueError, AttributeError):
        return False

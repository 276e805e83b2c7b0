"""The man page (man/safe-run.1) against the code it describes, and against groff.

The page is written by hand; these tests catch it drifting from the click command (options,
metavars, defaults), from safe_run.result (statuses, completion reasons, exit statuses, JSON
keys) and from the environment the runner gives commands, and check that groff renders it
without a single warning.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from safe_run import __version__
from safe_run.cli import run_command
from safe_run.result import ExitStatus, Reason, Status, error_result

MAN_PAGE = Path(__file__).resolve().parents[1] / "man" / "safe-run.1"

SECTIONS = [
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "OUTPUT",
    "STATUSES",
    "COMPLETION REASONS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "EXAMPLES",
    "SEE ALSO",
]

# ---------------------------------------------------------------------------------------------
# Just enough of roff to read this page back as plain text: macro lines, fonts, named glyphs.

ALTERNATING = {"BR", "RB", "BI", "IB", "IR", "RI"}
BREAKS = {"TP", "PP", "P", "LP", "SS", "SH"}
GLYPHS = {"aq": "'", "dq": '"', "ga": "`", "em": "\u2014", "en": "\u2013", "ti": "~", "ha": "^"}


def plain(text: str) -> str:
    text = re.sub(r'\\".*', "", text)  # comment
    text = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", text)  # font changes
    text = re.sub(r"\\\((..)", lambda m: GLYPHS.get(m.group(1), ""), text)
    text = re.sub(r"\\\[([^\]]*)\]", lambda m: GLYPHS.get(m.group(1), ""), text)
    return text.replace("\\-", "-").replace("\\&", "").replace("\\ ", " ").replace("\\e", "\\")


def macro_args(rest: str) -> list[str]:
    return [quoted.replace('""', '"') if quoted or not bare else bare
            for quoted, bare in re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest)]


@dataclass
class Entry:
    """One tagged paragraph (.TP, with any .TQ lines): the tag text and the body text."""

    tag: str
    body: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> list[str]:
        return [t for t in re.split(r"[\s,]+", self.tag) if t]

    @property
    def text(self) -> str:
        return " ".join(self.body)


@dataclass
class Section:
    name: str
    lines: list[str] = field(default_factory=list)  # plain text of every line that prints
    entries: list[Entry] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.lines)


def parse(source: str) -> tuple[list[str], list[Section]]:
    """The .TH arguments, and the sections with their text and tagged paragraphs."""
    th: list[str] = []
    sections: list[Section] = []
    entry: Entry | None = None
    expect_tag = False
    for raw in source.splitlines():
        if raw.startswith(('.\\"', "'\\\"")):
            continue
        text: str | None
        if raw.startswith("."):
            name, _, rest = raw[1:].strip().partition(" ")
            args = [plain(a) for a in macro_args(rest)]
            if name == "TH":
                th = args
                continue
            if name == "SH":
                sections.append(Section(" ".join(args)))
                entry, expect_tag = None, False
                continue
            if name in BREAKS:
                entry, expect_tag = None, name == "TP"
                continue
            if name == "TQ":
                expect_tag = True
                continue
            if name in ALTERNATING:
                text = "".join(args)
            elif name in ("B", "I", "SM", "SB"):
                text = " ".join(args)
            else:  # .br, .in, .EX, .EE, .nf, .fi, .RS, .RE: layout only
                continue
        else:
            text = plain(raw)
        if not sections:
            continue
        sections[-1].lines.append(text)
        if expect_tag:
            if entry is None:
                entry = Entry(text)
                sections[-1].entries.append(entry)
            else:
                entry.tag += "\n" + text
            expect_tag = False
        elif entry is not None:
            entry.body.append(text)
    return th, sections


@pytest.fixture(scope="module")
def page() -> tuple[list[str], dict[str, Section]]:
    th, sections = parse(MAN_PAGE.read_text(encoding="utf-8"))
    return th, {s.name: s for s in sections}


def section(page: tuple[list[str], dict[str, Section]], name: str) -> Section:
    sections = page[1]
    assert name in sections, f"man/safe-run.1 has no {name} section (it has {list(sections)})"
    return sections[name]


def tags(sec: Section) -> set[str]:
    return {token for entry in sec.entries for token in entry.tokens}


# ---------------------------------------------------------------------------------------------
# The click command.

CTX = click.Context(run_command, **run_command.context_settings)
OPTIONS = [p for p in run_command.get_params(CTX) if isinstance(p, click.Option)]


def names(option: click.Option) -> list[str]:
    return [*option.opts, *option.secondary_opts]


def metavar(option: click.Option) -> str:
    try:
        shown = option.make_metavar(CTX)  # click >= 8.2
    except TypeError:
        shown = option.make_metavar()  # type: ignore[call-arg]
    return shown.removeprefix("[").removesuffix("]")


def shown_default(option: click.Option) -> str | None:
    """The default as --help shows it, for options whose --help shows one."""
    value = option.default
    if not option.show_default or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)


# ---------------------------------------------------------------------------------------------


def test_sections_are_all_there_in_order(page) -> None:
    found = [name for name in page[1] if name in SECTIONS]
    assert found == SECTIONS


def test_header_names_the_page_and_the_current_version(page) -> None:
    th = page[0]
    assert th[:2] == ["SAFE-RUN", "1"], th
    assert th[3] == f"safe-run {__version__}", "update the version in the .TH line of man/safe-run.1"


def test_synopsis_shows_both_forms(page) -> None:
    text = section(page, "SYNOPSIS").text
    assert "safe-run [OPTIONS] [--] COMMAND..." in text
    assert "safe-run [OPTIONS] --command-file FILE" in text


def test_options_were_found() -> None:
    """The introspection below sees the command's options (including --version and -h/--help)."""
    seen = {name for option in OPTIONS for name in names(option)}
    assert {"--format", "--timeout", "--no-batch-env", "--version", "-h", "--help"} <= seen
    assert len(OPTIONS) >= 18


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: max(names(o), key=len))
def test_every_option_is_documented_with_its_metavar_and_default(option: click.Option, page) -> None:
    entries = [e for e in section(page, "OPTIONS").entries if set(names(option)) <= set(e.tokens)]
    assert len(entries) == 1, f"OPTIONS should have one entry for {', '.join(names(option))}, found {len(entries)}"
    entry = entries[0]
    if not option.is_flag:
        assert metavar(option) in entry.tokens, f"the {entry.tag!r} entry should show {metavar(option)!r}"
    default = shown_default(option)
    if default is not None:
        pattern = rf"Default: {re.escape(default)}(?!\w|\.\d)"
        assert re.search(pattern, entry.text), f"the {entry.tag!r} entry should say 'Default: {default}'"


def test_options_section_documents_no_option_the_command_lacks(page) -> None:
    real = {name for option in OPTIONS for name in names(option)}
    documented = {t for t in tags(section(page, "OPTIONS")) if t.startswith("-")}
    assert documented <= real, f"documented but not options of safe-run: {sorted(documented - real)}"


def test_every_status_is_documented(page) -> None:
    assert tags(section(page, "STATUSES")) == {s.value for s in Status}


def test_every_completion_reason_is_documented(page) -> None:
    assert tags(section(page, "COMPLETION REASONS")) == {r.value for r in Reason}


def test_every_exit_status_is_documented(page) -> None:
    expected = {str(int(code)) for code in ExitStatus}
    expected |= {str(128 + signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    documented = tags(section(page, "EXIT STATUS"))
    assert expected <= documented, f"missing from EXIT STATUS: {sorted(expected - documented)}"


def test_every_json_key_is_documented(page) -> None:
    keys = set(error_result("true", "example").to_dict())
    documented = {entry.tokens[0] for entry in section(page, "OUTPUT").entries}
    assert documented == keys


def test_environment_lists_what_is_read_and_what_commands_get(page) -> None:
    from safe_run import runner

    env = section(page, "ENVIRONMENT")
    read = {"SHELL", "PATH", "HOME", "ZDOTDIR", "TMPDIR", "NO_COLOR", "FORCE_COLOR", "TERM", "SAFE_RUN_DEBUG"}
    assert read <= tags(env)
    words = set(env.text.replace(",", " ").split()) | tags(env)
    given = {f"TERM={runner.TERM}"} | {f"{name}={value}" for name, value in runner.BATCH_ENV.items()}
    assert given <= words, f"missing from ENVIRONMENT: {sorted(given - words)}"
    assert set(runner.CALLER_TERMINAL_VARS) <= words


def test_files_names_the_private_directory(page) -> None:
    assert "$TMPDIR/safe-run-XXXXXXXX/" in tags(section(page, "FILES"))


def test_groff_renders_it_without_warnings() -> None:
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    proc = subprocess.run(
        [groff, "-man", "-Tutf8", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", f"groff warned:\n{proc.stderr}"

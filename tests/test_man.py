"""The man page (man/safe-run.1) against the code it describes, and against groff.

The page is written by hand; these tests catch it drifting from the click group (every verb, and
every option of every verb with its metavar and default), from safe_run.core.result (statuses,
completion reasons, exit statuses, JSON keys), from the session listing and the doctor report,
and from the environment the runner gives commands, and check that groff renders it without a
single warning.

Where each verb is documented: the run verb's options (and the group's --version and -h/--help)
under OPTIONS, every other verb in a `.SS VERB` subsection of VERBS with its arguments, options
and exit status.
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

from safe_run import __version__, doctor
from safe_run.cli.commands import RUN, cli
from safe_run.core.result import ExitStatus, Reason, Result, Status, error_result
from safe_run.session.store import RETENTION_S

MAN_PAGE = Path(__file__).resolve().parents[1] / "man" / "safe-run.1"

SECTIONS = [
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "VERBS",
    "OUTPUT",
    "STATUSES",
    "COMPLETION REASONS",
    "EXIT STATUS",
    "ENVIRONMENT",
    "FILES",
    "EXAMPLES",
    "SEE ALSO",
]

# Subsections of OUTPUT that document other JSON than the result object.
EVENTS = "Events (--format jsonl)"
SESSION_LIST = "The session list"
DOCTOR_REPORT = "The doctor report"

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
    """A .SH section, or a .SS subsection of one.

    A section's `lines` hold all of its text, subsections included; its `entries` only the tagged
    paragraphs before its first subsection, each subsection's its own.
    """

    name: str
    lines: list[str] = field(default_factory=list)  # plain text of every line that prints
    entries: list[Entry] = field(default_factory=list)
    subsections: dict[str, Section] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return " ".join(self.lines)


def parse(source: str) -> tuple[list[str], list[Section]]:
    """The .TH arguments, and the sections with their text, subsections and tagged paragraphs."""
    th: list[str] = []
    sections: list[Section] = []
    sub: Section | None = None
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
                sub, entry, expect_tag = None, None, False
                continue
            if name == "SS" and sections:
                sub = Section(" ".join(args))
                sections[-1].subsections[sub.name] = sub
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
        here = sections[-1] if sub is None else sub
        sections[-1].lines.append(text)
        if sub is not None:
            sub.lines.append(text)
        if expect_tag:
            if entry is None:
                entry = Entry(text)
                here.entries.append(entry)
            else:
                entry.tag += "\n" + text
            expect_tag = False
        elif entry is not None:
            entry.body.append(text)
    return th, sections


Page = tuple[list[str], dict[str, Section]]


@pytest.fixture(scope="module")
def page() -> Page:
    th, sections = parse(MAN_PAGE.read_text(encoding="utf-8"))
    return th, {s.name: s for s in sections}


def section(page: Page, name: str) -> Section:
    sections = page[1]
    assert name in sections, f"man/safe-run.1 has no {name} section (it has {list(sections)})"
    return sections[name]


def subsection(page: Page, section_name: str, name: str) -> Section:
    subs = section(page, section_name).subsections
    assert name in subs, f"{section_name} in man/safe-run.1 has no subsection .SS {name} (it has {list(subs)})"
    return subs[name]


def tags(sec: Section) -> set[str]:
    return {token for entry in sec.entries for token in entry.tokens}


# ---------------------------------------------------------------------------------------------
# The click group and its verbs.

VERBS = dict(cli.commands)
GROUP = "safe-run"  # the group's own options (--version, -h/--help), documented with the run verb's
GROUP_CTX = click.Context(cli, info_name=GROUP, **cli.context_settings)


def names(option: click.Parameter) -> list[str]:
    return [*option.opts, *option.secondary_opts]


def longest(option: click.Parameter) -> str:
    return max(names(option), key=len)


def context(verb: str) -> click.Context:
    if verb == GROUP:
        return GROUP_CTX
    command = VERBS[verb]
    return click.Context(command, parent=GROUP_CTX, info_name=verb, **command.context_settings)


def params(verb: str) -> list[click.Parameter]:
    command = cli if verb == GROUP else VERBS[verb]
    return command.get_params(context(verb))


def options(verb: str) -> list[click.Option]:
    return [p for p in params(verb) if isinstance(p, click.Option)]


def arguments(verb: str) -> list[click.Argument]:
    return [p for p in params(verb) if isinstance(p, click.Argument)]


# (verb, option) for every option of the group and of every verb.
VERB_OPTIONS = [(verb, option) for verb in (GROUP, *VERBS) for option in options(verb)]
VERB_ARGUMENTS = [(verb, argument) for verb in VERBS if verb != RUN for argument in arguments(verb)]


def make_metavar(param: click.Parameter, ctx: click.Context) -> str:
    try:
        return param.make_metavar(ctx)  # click >= 8.2
    except TypeError:
        return param.make_metavar()  # type: ignore[call-arg]


def metavar(option: click.Option, verb: str) -> str:
    return make_metavar(option, context(verb)).removeprefix("[").removesuffix("]")


def shown_default(option: click.Option) -> str | None:
    """The default as --help shows it, for options whose --help shows one."""
    value = option.default
    if not option.show_default or isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return f"{value:g}" if isinstance(value, float) else str(value)


def verb_section(page: Page, verb: str) -> Section:
    """Where a verb's options are documented: OPTIONS for run (and the group's own), else .SS VERB of VERBS."""
    return section(page, "OPTIONS") if verb in (RUN, GROUP) else subsection(page, "VERBS", verb)


def synopsis_lines(page: Page) -> list[str]:
    """The SYNOPSIS, one string per form (each starts with `safe-run`)."""
    text = " ".join(section(page, "SYNOPSIS").text.split())
    return [line.strip() for line in re.split(r"(?=\bsafe-run )", text) if line.strip()]


# ---------------------------------------------------------------------------------------------


def test_sections_are_all_there_in_order(page) -> None:
    found = [name for name in page[1] if name in SECTIONS]
    assert found == SECTIONS


def test_header_names_the_page_and_the_current_version(page) -> None:
    th = page[0]
    assert th[:2] == ["SAFE-RUN", "1"], th
    assert th[3] == f"safe-run {__version__}", "update the version in the .TH line of man/safe-run.1"


def test_synopsis_shows_both_forms_of_a_run(page) -> None:
    lines = synopsis_lines(page)
    assert "safe-run [OPTIONS] [--] COMMAND..." in lines
    assert "safe-run [OPTIONS] --command-file FILE" in lines


@pytest.mark.parametrize("verb", [v for v in VERBS if v != RUN])
def test_synopsis_shows_each_verb_with_its_arguments_and_options(verb: str, page) -> None:
    forms = [line for line in synopsis_lines(page) if line.split()[1:2] == [verb]]
    assert len(forms) == 1, f"SYNOPSIS should have one `safe-run {verb} ...` line, found {forms}"
    words = forms[0]
    for argument in arguments(verb):
        shown = make_metavar(argument, context(verb))
        assert f" {shown}" in words, f"the SYNOPSIS of {verb} should show the argument {shown}"
    for option in options(verb):
        if set(names(option)) <= {"-h", "--help"}:
            continue
        shown = longest(option) if option.is_flag else f"{longest(option)} {metavar(option, verb)}"
        shown = f"[{shown}]" + ("..." if option.multiple else "")
        assert shown in words, f"the SYNOPSIS of {verb} should show {shown!r}: {words!r}"


def test_options_were_found() -> None:
    """The introspection below sees every verb with its options, and the group's own options."""
    assert {"run", "poll", "send", "stop", "sessions", "doctor"} <= set(VERBS)

    def seen(verb: str) -> set[str]:
        return {name for v, option in VERB_OPTIONS if v == verb for name in names(option)}

    assert seen(GROUP) == {"--version", "-h", "--help"}
    assert {"--format", "--timeout", "--yield-after", "--no-batch-env", "-h", "--help"} <= seen(RUN)
    assert len(options(RUN)) >= 18
    assert {"--wait", "--format", "-h", "--help"} <= seen("poll")
    assert {"--key", "--no-enter", "--wait"} <= seen("send")
    assert {"--shell"} <= seen("doctor")
    assert [a.name for a in arguments("send")] == ["session_id", "text"]


def test_every_verb_is_documented(page) -> None:
    documented = set(section(page, "VERBS").subsections)
    assert documented == set(VERBS), (
        f"VERBS should have one .SS per verb: missing {sorted(set(VERBS) - documented)}, "
        f"not verbs {sorted(documented - set(VERBS))}"
    )
    for verb in VERBS:
        assert f"safe-run {verb}" in subsection(page, "VERBS", verb).text, f".SS {verb} should show its usage"


@pytest.mark.parametrize("verb", [v for v in VERBS if v != RUN])
def test_every_verb_says_how_it_exits(verb: str, page) -> None:
    assert "Exit status" in subsection(page, "VERBS", verb).text, f".SS {verb} should give its exit status"


@pytest.mark.parametrize(
    ("verb", "option"), [pytest.param(verb, option, id=f"{verb} {longest(option)}") for verb, option in VERB_OPTIONS]
)
def test_every_option_is_documented_with_its_metavar_and_default(verb: str, option: click.Option, page) -> None:
    where = verb_section(page, verb)
    entries = [e for e in where.entries if set(names(option)) <= set(e.tokens)]
    assert len(entries) == 1, (
        f"{where.name} should have one entry for {verb}'s {', '.join(names(option))}, found {len(entries)}"
    )
    entry = entries[0]
    if not option.is_flag:
        assert metavar(option, verb) in entry.tokens, f"the {entry.tag!r} entry should show {metavar(option, verb)!r}"
    default = shown_default(option)
    if default is not None:
        pattern = rf"Default: {re.escape(default)}(?!\w|\.\d)"
        assert re.search(pattern, entry.text), f"the {entry.tag!r} entry of {verb} should say 'Default: {default}'"


@pytest.mark.parametrize(
    ("verb", "argument"), [pytest.param(verb, arg, id=f"{verb} {arg.name}") for verb, arg in VERB_ARGUMENTS]
)
def test_every_argument_of_a_verb_is_documented(verb: str, argument: click.Argument, page) -> None:
    shown = make_metavar(argument, context(verb)).strip("[].")
    entries = [e for e in subsection(page, "VERBS", verb).entries if e.tokens == [shown]]
    assert len(entries) == 1, f".SS {verb} should have one entry for its argument {shown}, found {len(entries)}"


@pytest.mark.parametrize("verb", list(VERBS))
def test_no_option_is_documented_that_the_verb_lacks(verb: str, page) -> None:
    mine = (verb, GROUP) if verb == RUN else (verb,)
    real = {name for v, option in VERB_OPTIONS if v in mine for name in names(option)}
    where = verb_section(page, verb)
    documented = {t for t in tags(where) if t.startswith("-")}
    assert documented <= real, f"documented in {where.name} but not options of {verb}: {sorted(documented - real)}"


def test_every_status_is_documented(page) -> None:
    assert tags(section(page, "STATUSES")) == {s.value for s in Status}


def test_every_completion_reason_is_documented(page) -> None:
    assert tags(section(page, "COMPLETION REASONS")) == {r.value for r in Reason}


def test_every_exit_status_is_documented(page) -> None:
    expected = {str(int(code)) for code in ExitStatus}
    # interrupted: by a signal to safe-run, or SIGPIPE when the reader of its output went away
    expected |= {str(128 + signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)}
    broken = doctor.missing_report(doctor.Target("bash", None, missing="gone"))
    expected |= {str(doctor.exit_code([])), str(doctor.exit_code([broken]))}  # doctor's own 0 and 1
    documented = tags(section(page, "EXIT STATUS"))
    assert expected <= documented, f"missing from EXIT STATUS: {sorted(expected - documented)}"


def test_every_json_key_is_documented(page) -> None:
    keys = set(error_result("true", "example").to_dict())
    documented = {entry.tokens[0] for entry in section(page, "OUTPUT").entries}
    assert documented == keys


def test_every_jsonl_event_is_documented_with_its_fields(page) -> None:
    from safe_run.core import events
    from safe_run.core.result import Downgrade, ShellInfo, Strategy

    stream = [
        events.started_event("true", ShellInfo("bash", "/bin/bash"), Strategy.RICH),
        events.output_event(0.1, "text\n"),
        events.downgrade_event(Downgrade("rich", "none", "why", 0.2)),
        events.finished_event(error_result("true", "example")),
    ]
    entries = subsection(page, "OUTPUT", EVENTS).entries
    assert [e.tokens[0] for e in entries] == [event["event"] for event in stream]
    common = {"event", "at_s"}
    assert all(common <= set(event) for event in stream)
    assert all(key in subsection(page, "OUTPUT", EVENTS).text for key in common)
    for entry, event in zip(entries, stream):
        words = set(re.findall(r"\w+", entry.text))
        missing = set(event) - common - words
        assert not missing, f"the {entry.tag!r} event should name its fields {sorted(missing)}"


def test_every_key_of_the_session_list_is_documented(page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from safe_run.session.client import listing
    from safe_run.session.store import SessionStore

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    session = SessionStore.open().create("true")
    session.save_result(Result(Status.COMPLETED, 0, None, Reason.SHELL_INTEGRATION, "true", None))
    rows = listing(session.meta()["started"] + 1.0)  # type: ignore[operator]
    assert len(rows) == 1
    documented = [entry.tokens[0] for entry in subsection(page, "OUTPUT", SESSION_LIST).entries]
    assert documented == list(rows[0]), "document the session list's keys, in the order sessions prints them"


def test_every_key_of_the_doctor_report_is_documented(page) -> None:
    report = doctor.report_dict([doctor.missing_report(doctor.Target("bash", None))])
    keys = [*report, *report["shells"][0]]  # type: ignore[index]
    documented = [entry.tokens[0] for entry in subsection(page, "OUTPUT", DOCTOR_REPORT).entries]
    assert documented == keys, "document the report's keys, then each shell's, in the order doctor prints them"


def test_environment_lists_what_is_read_and_what_commands_get(page) -> None:
    from safe_run.engine import shell_start

    env = section(page, "ENVIRONMENT")
    read = {"SHELL", "PATH", "HOME", "ZDOTDIR", "TMPDIR", "NO_COLOR", "FORCE_COLOR", "TERM", "SAFE_RUN_DEBUG"}
    read |= {"XDG_RUNTIME_DIR", "XDG_STATE_HOME", "CI", "GITHUB_ACTIONS"}
    assert read <= tags(env), f"missing from ENVIRONMENT: {sorted(read - tags(env))}"
    words = set(env.text.replace(",", " ").split()) | tags(env)
    given = {f"TERM={shell_start.TERM}"} | {f"{name}={value}" for name, value in shell_start.BATCH_ENV.items()}
    assert given <= words, f"missing from ENVIRONMENT: {sorted(given - words)}"
    assert set(shell_start.CALLER_TERMINAL_VARS) <= words


def test_files_names_the_private_and_the_sessions_directories(page) -> None:
    files = section(page, "FILES")
    assert "$TMPDIR/safe-run-XXXXXXXX/" in tags(files)
    assert {"$XDG_RUNTIME_DIR/safe-run/", "$XDG_STATE_HOME/safe-run/sessions/", "ID/"} <= tags(files)
    assert "~/.local/state/safe-run/sessions/" in files.text
    words = set(re.findall(r"[\w.]+", files.text))
    assert {"meta.json", "socket", "result.json", "holder.log", "0700"} <= words


def test_the_retention_of_results_is_the_stores(page) -> None:
    kept = f"{RETENTION_S / 60:g}"
    for name in ("DESCRIPTION", "VERBS", "EXIT STATUS", "FILES"):
        assert f"{kept} minutes" in section(page, name).text, f"{name} should say results are kept {kept} minutes"
    everywhere = " ".join(sec.text for sec in page[1].values())
    assert set(re.findall(r"\b(\d+) minutes", everywhere)) == {kept}


def test_reserved_verb_names_are_explained(page) -> None:
    text = section(page, "DESCRIPTION").text + " " + section(page, "VERBS").text
    assert "safe-run -- poll" in text


@pytest.mark.parametrize("device", ["utf8", "ascii", "latin1"])
def test_groff_renders_it_without_warnings(device: str) -> None:
    """`man` picks the device from the locale: ascii under LC_ALL=C, latin1 under a Latin-1 one."""
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    proc = subprocess.run(
        [groff, "-man", f"-T{device}", "-ww", "-z", str(MAN_PAGE)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", f"groff warned:\n{proc.stderr}"


@pytest.mark.parametrize(("device", "ok", "failed"), [("utf8", "\u2713", "\u2717"), ("ascii", "+", "x")])
def test_the_summary_marks_show_on_every_device(device: str, ok: str, failed: str) -> None:
    """Where a device has no check mark, the page shows the ASCII marks safe-run itself draws there."""
    groff = shutil.which("groff")
    if groff is None:
        pytest.skip("groff is not installed")
    proc = subprocess.run(
        [groff, "-man", f"-T{device}", "-P-cbou", str(MAN_PAGE)], capture_output=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"},
    )
    text = " ".join(proc.stdout.decode("utf-8", "replace").split())
    assert f"The mark is {ok} (green)" in text
    assert f"and {failed} (red) otherwise" in text

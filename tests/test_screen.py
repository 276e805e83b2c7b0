import pyte
import pytest

from safe_run.core.screen import ScreenTail, continuation_prompt, input_prompt, looks_like_prompt

PROMPTS = [
    "$ ",
    "user@host:~$ ",
    "[user@host ~]$ ",
    "root@host:~# ",
    "# ",
    ">>> ",
    "~ ❯ ",
    "test> ",
    "host% ",
    "user@host ~> ",
    "(Pdb) ",
    "(gdb) ",
    "(lldb) ",
    "ipdb> ",
    "PS C:\\> ",
]

NOT_PROMPTS = [
    "just some output",
    "error: command not found",
    "",
    "   ",
    "(Pdb) some output after",
    "100%",
    "<div>",
    "item #",
    "price is $5",
    "test$",
    "values: [a, b] $",
    # Near misses the rules name: progress, markup, more than one space after the character.
    "Downloading 100% ",
    "<div> ",
    "$  ",
]

CONTINUATIONS = [
    ("> ", "unfinished command"),
    ("dquote> ", "double quote"),
    ("quote> ", "single quote"),
    ("bquote> ", "backquote"),
    ("pipe> ", "pipe"),
    ("cmdsubst> ", "command substitution"),
    ("heredoc> ", "heredoc"),
    ("for> ", "for"),
    ("if> ", "if"),
    ("then> ", "then"),
    ("while> ", "while"),
    ("then dquote> ", "double quote"),
    ("for cmdsubst quote> ", "single quote"),
    ("dquote then> ", "then"),
]

NOT_CONTINUATIONS = ["$ ", "test> ", "ipdb> ", "user@host ~> ", ">>> ", ">", "dquote>", "", "just some output"]

INPUT_PROMPTS = [
    "Continue? (y/n) ",
    "Overwrite? [Y/n] ",
    "Proceed? (yes/no) ",
    "Password:",
    "[sudo] password for user:",
    "Press any key to continue...",
    "(END)",
    "package name: (my-app) ",
    ">>> ",
    "irb(main):001:0> ",
    "(Pdb) ",
    "(gdb) ",
    "(lldb) ",
    "ipdb> ",
    # More of the same kinds, as other programs ask.
    "Stage this hunk [y,n,q,a,d,e,?]? ",
    "Ok to proceed? (y) ",
    "Select an option [1-3]: ",
    "Enter passphrase for key '/home/u/.ssh/id_ed25519': ",
    "Username for 'https://github.com': ",
    "  Enter a value: ",
    "What is your name? ",
    "Press ENTER to continue",
    "--More--(42%)",
    ":",
    "lines 1-24/120 20%",
    "In [1]: ",
    "postgres=# ",
]

NOT_INPUT_PROMPTS = [
    "Compiling module foo",
    "Done in 3.2s",
    "[INFO] Starting: ",
    "press h to show help",
    "  \u279c  press h + enter to show help",
    "Skipping: foo",
    "Downloading 45%",
    "",
    "user@host:~$ ",
]


@pytest.mark.parametrize("line", PROMPTS)
def test_prompts(line: str) -> None:
    assert looks_like_prompt(line)


@pytest.mark.parametrize("line", NOT_PROMPTS)
def test_not_prompts(line: str) -> None:
    assert not looks_like_prompt(line)


@pytest.mark.parametrize("line", [p.rstrip() for p in PROMPTS if p.rstrip() not in ("(Pdb)", "(gdb)", "(lldb)")])
def test_a_prompt_needs_the_space_the_cursor_waits_after(line: str) -> None:
    assert not looks_like_prompt(line)


@pytest.mark.parametrize(("line", "construct"), CONTINUATIONS)
def test_continuation_prompts(line: str, construct: str) -> None:
    assert continuation_prompt(line) == construct


@pytest.mark.parametrize(("line", "_"), CONTINUATIONS)
def test_a_continuation_prompt_is_not_a_prompt(line: str, _: str) -> None:
    assert not looks_like_prompt(line)


@pytest.mark.parametrize("line", NOT_CONTINUATIONS)
def test_not_continuation_prompts(line: str) -> None:
    assert continuation_prompt(line) is None


@pytest.mark.parametrize("line", INPUT_PROMPTS)
def test_input_prompts(line: str) -> None:
    assert input_prompt(line)


@pytest.mark.parametrize("line", NOT_INPUT_PROMPTS)
def test_not_input_prompts(line: str) -> None:
    assert not input_prompt(line)


def tail_after(*chunks: bytes, columns: int = 80, rows: int = 24, keep_bytes: int = 16384) -> ScreenTail:
    tail = ScreenTail(columns, rows, keep_bytes)
    for chunk in chunks:
        tail.feed(chunk)
    return tail


def reference(data: bytes, columns: int = 80, rows: int = 24) -> tuple[str, str]:
    """The cursor line, stripped and up to the cursor, from emulating every byte."""
    term = pyte.Screen(columns, rows)
    pyte.ByteStream(term).feed(data)
    cells = term.buffer[term.cursor.y]
    upto = "".join(cells[x].data for x in range(min(term.cursor.x, columns)))
    return term.display[term.cursor.y].rstrip(" "), upto


@pytest.fixture
def emulations(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """What the emulator is given, in order."""
    fed: list[bytes] = []
    real = pyte.ByteStream.feed

    def feed(self: pyte.ByteStream, data: bytes) -> None:
        fed.append(data)
        real(self, data)

    monkeypatch.setattr(pyte.ByteStream, "feed", feed)
    return fed


def test_plain_output_cursor_line_is_the_last_line(emulations: list[bytes]) -> None:
    tail = tail_after(b"first line\r\nsecond line\r\n", b"user@host:~$ ")
    assert tail.cursor_line() == "user@host:~$"
    assert tail.before_cursor() == "user@host:~$ "
    assert emulations == []


def test_cursor_on_a_fresh_line() -> None:
    tail = tail_after(b"all done\r\n")
    assert tail.cursor_line() == ""
    assert tail.before_cursor() == ""


def test_carriage_return_leaves_the_last_progress_frame(emulations: list[bytes]) -> None:
    tail = tail_after(b"Downloading  10%\rDownloading  55%", b"\rDownloading 100%")
    assert tail.cursor_line() == "Downloading 100%"
    assert emulations == []


def test_carriage_return_overwrites_only_what_is_redrawn() -> None:
    tail = tail_after(b"abcdef\rxy")
    assert tail.cursor_line() == "xycdef"
    assert tail.before_cursor() == "xy"


def test_backspace_overwrites() -> None:
    assert tail_after(b"abc\x08\x08X").cursor_line() == "aXc"


def test_colour_codes_are_not_text(emulations: list[bytes]) -> None:
    tail = tail_after(b"\x1b]0;user@host: ~\x07\x1b[?2004h\x1b[1;32muser@host\x1b[0m:\x1b[34m~\x1b[0m$ ")
    assert tail.cursor_line() == "user@host:~$"
    assert tail.before_cursor() == "user@host:~$ "
    assert emulations == []


def test_a_long_line_wraps_and_the_cursor_row_is_its_last() -> None:
    tail = tail_after(b"abcdefghij" b"KLMNOPQRST" b"uv", columns=10)
    assert tail.cursor_line() == "uv"


@pytest.mark.parametrize(
    "data",
    [
        b"abcdefghijKLM\rZ",  # a carriage return goes back only to the start of the wrapped row
        b"abcdefghij\rZ",  # a full row keeps the cursor on it
        b"abcdefghij\x08Z",
        b"abcdefghijk\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08\x08Z",
        b"a\tb\tc",
        b"abcdefgh\tX",
        b"\x08\x08x",
        b"x\x07y\x00z\x7fw",
        b"done\r\n\x1b[1mbold\x1b[0m\r",
    ],
)
def test_line_replay_matches_the_emulator(data: bytes, emulations: list[bytes]) -> None:
    tail = tail_after(data, columns=10)
    replayed = (tail.cursor_line(), tail.before_cursor())
    assert emulations == []
    assert replayed == reference(data, columns=10)


def test_characters_of_other_widths_are_measured_by_the_emulator(emulations: list[bytes]) -> None:
    data = "older\r\n~ ❯ 日本語> ".encode()
    tail = tail_after(data)
    assert tail.before_cursor() == "~ ❯ 日本語> "
    assert tail.cursor_line() == "~ ❯ 日本語>"
    assert emulations == ["~ ❯ 日本語> ".encode()]  # the last line alone


def test_clear_and_home_take_the_emulator(emulations: list[bytes]) -> None:
    tail = tail_after(b"line one\r\nline two\r\n", b"\x1b[2J\x1b[H", b"top")
    assert tail.cursor_line() == "top"
    assert emulations


def test_absolute_cursor_position() -> None:
    tail = tail_after(b"a\r\nb\r\nc\r\nd\r\ne\r\nf\r\n\x1b[5;1Hfifth")
    assert tail.cursor_line() == "fifth"


def test_cursor_moved_up_onto_an_earlier_line() -> None:
    tail = tail_after(b"upper line\r\nlower line\r\n\x1b[2A\x1b[6C")
    assert tail.cursor_line() == "upper line"
    assert tail.before_cursor() == "upper "


def test_erase_in_line() -> None:
    assert tail_after(b"working...\r\x1b[Kdone").cursor_line() == "done"


def test_bare_line_feed_keeps_the_column() -> None:
    data = b"abc\ndef"
    assert tail_after(data).cursor_line() == reference(data)[0] == "   def"


def test_right_hand_text_is_after_the_cursor() -> None:
    tail = tail_after(b"\x1b[70G10:32\r~ \xe2\x9d\xaf ")
    assert tail.cursor_line().endswith("10:32")
    assert looks_like_prompt(tail.before_cursor())


ENTER = b"\x1b[?1049h"
LEAVE = b"\x1b[?1049l"


@pytest.mark.parametrize("cut", range(len(ENTER) + 1))
def test_alternate_screen_entered_and_left_across_feeds(cut: int) -> None:
    tail = tail_after(b"$ vim notes\r\n", ENTER[:cut])
    assert tail.alternate == (cut == len(ENTER))
    tail.feed(ENTER[cut:] + b"\x1b[H\x1b[2J~\r\n~\r\n\x1b[1;1Hhello")
    assert tail.alternate
    assert tail.used_alternate
    assert tail.cursor_line() == "hello"
    tail.feed(LEAVE[:cut])
    assert tail.alternate == (cut < len(LEAVE))
    tail.feed(LEAVE[cut:])
    assert not tail.alternate
    assert tail.used_alternate
    tail.feed(b"$ ")
    assert tail.cursor_line() == "$"


@pytest.mark.parametrize("cut", range(len(ENTER) + 1))
def test_a_switch_split_byte_by_byte(cut: int) -> None:
    tail = tail_after(b"x" * 100, *(bytes([b]) for b in ENTER[:cut]), ENTER[cut:])
    assert tail.alternate


@pytest.mark.parametrize("mode", [b"1049", b"1047", b"47", b"1049;25", b"25;1049"])
def test_alternate_screen_modes(mode: bytes) -> None:
    tail = tail_after(b"\x1b[?" + mode + b"h")
    assert tail.alternate
    tail.feed(b"\x1b[?" + mode + b"l")
    assert not tail.alternate
    assert tail.used_alternate


@pytest.mark.parametrize("mode", [b"1048", b"147", b"10490", b"25", b"2004"])
def test_other_private_modes_are_not_the_alternate_screen(mode: bytes) -> None:
    tail = tail_after(b"\x1b[?" + mode + b"h")
    assert not tail.alternate
    assert not tail.used_alternate


def test_the_main_screen_comes_back_after_the_alternate_screen() -> None:
    tail = tail_after(b"Edit message? ", ENTER, b"\x1b[H\x1b[2JEDITOR\x1b[24;1H:wq", LEAVE)
    assert tail.cursor_line() == "Edit message?"
    assert tail.before_cursor() == "Edit message? "


def test_less_shows_end_on_its_last_row() -> None:
    page = b"".join(b"line %d of the file\r\n" % n for n in range(1, 24))
    tail = tail_after(
        b"$ less file\r\n",
        ENTER + b"\x1b[?1h\x1b=\r" + page,
        b"\x1b[7m(END)\x1b[27m\x1b[K",
    )
    assert tail.alternate
    assert tail.cursor_line() == "(END)"
    assert input_prompt(tail.before_cursor())


def test_pager_redraw_at_the_bottom_row() -> None:
    page = b"".join(b"\x1b[%d;1Hrow %d\x1b[K" % (n, n) for n in range(1, 24))
    tail = tail_after(ENTER, page * 20, b"\x1b[24;1H:")
    assert tail.cursor_line() == ":"


@pytest.mark.parametrize("keep", range(4096, 4096 + 8))  # every cut through an 8-byte sequence
def test_alternate_screen_whose_switch_is_no_longer_kept(keep: int) -> None:
    tail = tail_after(ENTER, b"\x1b[24;80H" * 2000, b"\x1b[1;1Hok", keep_bytes=keep)
    assert tail.alternate
    assert tail.cursor_line() == "ok"


def test_the_alternate_screen_starts_blank() -> None:
    tail = tail_after(b"\x1b[1mmain screen text\x1b[0m", ENTER, b"hi")
    assert tail.cursor_line() == "hi"


def test_visits_no_longer_kept_are_forgotten() -> None:
    visit = ENTER + b"x" * 100 + LEAVE + b"\r\n"
    tail = tail_after(*[visit] * 10000, keep_bytes=1024)
    assert len(tail._visits) <= 2 * 1024 // len(visit) + 1


def test_entering_again_inside_the_alternate_screen_is_one_visit() -> None:
    tail = tail_after(b"Edit? ", ENTER, b"\x1b[Hfirst", ENTER, b"\x1b[Hsecond", LEAVE)
    assert tail.cursor_line() == "Edit?"


def test_a_visit_to_the_alternate_screen_is_recorded_once() -> None:
    tail = tail_after(b"$ ", ENTER + b"x" + LEAVE)
    tail.feed(b"y")
    tail.feed(b"z")
    assert len(tail._visits) == 1


def test_memory_stays_bounded() -> None:
    keep = 16384
    chunk = (b"x" * 99 + b"\n") * 655 + b"y" * 36
    assert len(chunk) == 64 * 1024
    tail = ScreenTail(80, 24, keep)
    for _ in range(50 * 1024 * 1024 // len(chunk)):
        tail.feed(chunk)
        assert len(tail._buf) <= 2 * keep
    tail.feed(b"\r\n$ ")
    assert tail.cursor_line() == "$"


def test_kept_tail_starts_at_a_line_start() -> None:
    tail = tail_after(b"\x1b[31m" + b"z" * 5000 + b"\r\nlast\r\n$ ", keep_bytes=1000)
    assert tail.cursor_line() == "$"
    tail.feed(b"\x1b[1;1H")
    assert tail.cursor_line() == "last"  # the cut-off partial line is not emulated


def test_kept_tail_starting_inside_a_visit_starts_where_the_visit_ends() -> None:
    tail = tail_after(b"before\r\n", ENTER, b"x" * 5000, LEAVE, b"after\r\n\x1b[A", keep_bytes=1024)
    assert tail.cursor_line() == "after"


def test_reset_forgets_output_and_alternate_screen() -> None:
    tail = tail_after(b"$ top\r\n", ENTER, b"\x1b[Hload average")
    tail.reset()
    assert not tail.alternate
    assert not tail.used_alternate
    assert tail.cursor_line() == ""
    tail.feed(b"hello")
    assert tail.cursor_line() == "hello"
    tail.feed(ENTER[:4])
    tail.reset()
    tail.feed(ENTER[4:])
    assert not tail.alternate  # half a switch before the reset is forgotten with the rest


def test_asking_twice_emulates_once(emulations: list[bytes]) -> None:
    tail = tail_after(b"\x1b[2J\x1b[Hhi")
    assert tail.cursor_line() == "hi"
    assert tail.before_cursor() == "hi"
    assert len(emulations) == 1
    tail.feed(b"!")
    assert tail.cursor_line() == "hi!"
    assert len(emulations) == 2


def test_dimensions_must_be_positive() -> None:
    with pytest.raises(ValueError):
        ScreenTail(0, 24)



def test_private_sgr_from_vim_does_not_break_the_emulator() -> None:
    tail = ScreenTail(80, 24)
    tail.feed(b"\x1b[?1049h\x1b[>4;2m\x1b[H\x1b[2J~\r\n~\r\n\x1b[24;1H\"file\" 0L, 0B")
    assert tail.cursor_line() == '"file" 0L, 0B'


@pytest.mark.parametrize(
    ("shown", "cursor"),
    [
        (b"", (0, 0)),
        (b"abc\r\nde", (1, 2)),
        (b"x" * 85, (1, 5)),  # wrapped once on an 80-column screen
        (b"top\r\n\x1b[5;10Hhere", (4, 13)),
        (b"".join(b"line %d\r\n" % n for n in range(40)), (23, 0)),  # scrolled: the bottom row
    ],
)
def test_the_cursor_is_where_a_terminal_would_report_it(shown: bytes, cursor: tuple[int, int]) -> None:
    tail = ScreenTail(80, 24)
    tail.feed(shown)
    assert tail.cursor() == cursor

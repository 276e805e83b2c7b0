"""The syntax check, with the real shells: broken commands are named and refused, valid ones pass,
nothing is ever run, and a check that cannot be had gives no verdict rather than an error."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from safe_run import syntax
from safe_run.syntax import (
    BACKQUOTE, BRACE, CASE, DANGLING, DOUBLE_QUOTE, FISH_BEGIN, FISH_IF, FISH_LOOP, FISH_SWITCH, IF, LOOP,
    PARENTHESIS, SINGLE_QUOTE, STRAY_END, STRAY_FI, UNKNOWN, SyntaxProblem, check_syntax, classify, heredoc,
)

POSIX_SHELLS = ("bash", "zsh", "dash")
ALL_SHELLS = (*POSIX_SHELLS, "fish")


def installed(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed, so its syntax check cannot be exercised")
    return path


def check(name: str, command: str, directory: Path, timeout: float = 3.0) -> SyntaxProblem | None:
    command_file = directory / "command"
    command_file.write_text(command, encoding="utf-8")
    return check_syntax(name, installed(name), command_file, timeout)


def assert_refused(problem: SyntaxProblem | None, construct: str, directory: Path) -> None:
    assert problem is not None, "the shell accepted a broken command"
    assert problem.construct == construct, problem
    message = problem.message()
    assert construct in message
    assert "Nothing was run" in message and "retry" in message
    assert str(directory) not in message and "./command" not in message, message
    assert problem.line is None or problem.line >= 1


# ---------------------------------------------------------------------------------------------
# Broken commands, per shell.

POSIX_BROKEN = [
    ("double-quote", 'echo "hello world', DOUBLE_QUOTE),
    ("single-quote", "echo 'hello world", SINGLE_QUOTE),
    ("single-quote-agent", "grep -n 'it's here' notes.txt", SINGLE_QUOTE),
    ("backquote", "echo `date", BACKQUOTE),
    ("heredoc", "cat <<EOF\nhello\n", heredoc("EOF")),
    ("heredoc-quoted", "cat <<'END'\n$literal\n", heredoc("END")),
    ("heredoc-tabs", "cat <<-EOF\n\tindented\n\tEOF.\n", heredoc("EOF")),
    ("heredoc-swallows-fi", "if true; then\n  cat <<EOF\nx\nfi\n", heredoc("EOF")),
    ("if", "if true; then\n  echo x\n", IF),
    ("for", 'for f in a b; do\n  echo "$f"\n', LOOP),
    ("while", "while true; do echo x", LOOP),
    ("case", "case x in a) echo a;;", CASE),
    ("subshell", "(cd /tmp && ls", PARENTHESIS),
    ("command-substitution", "echo $(date", PARENTHESIS),
    ("group", "{ echo a; echo b", BRACE),
    ("pipe", "ls |", DANGLING),
    ("and", "echo x &&", DANGLING),
    ("or", "false ||\n\n# nothing follows\n", DANGLING),
    ("quote-swallows-fi", 'if true; then\n  echo "x\nfi\n', DOUBLE_QUOTE),
    ("stray-paren", "echo )", PARENTHESIS),
    ("open-glob-group", "echo (", PARENTHESIS),
    ("open-glob-group-in-a-word", "ls a(b", PARENTHESIS),
    ("stray-fi", "echo x; fi", STRAY_FI),
]

FISH_BROKEN = [
    ("double-quote", 'echo "hello world', DOUBLE_QUOTE),
    ("single-quote", "echo 'hello world", SINGLE_QUOTE),
    ("escaped-single-quote", "echo 'it\\'s", SINGLE_QUOTE),
    ("if", "if true\n  echo x\n", FISH_IF),
    ("for", "for f in a b\n  echo $f\n", FISH_LOOP),
    ("while", "while true; echo x", FISH_LOOP),
    ("begin", "begin; echo a; echo b", FISH_BEGIN),
    ("switch", "switch x; case a; echo a", FISH_SWITCH),
    ("command-substitution", "echo (date", PARENTHESIS),
    ("pipe", "ls |", DANGLING),
    ("and", "echo x &&", DANGLING),
    ("quote-swallows-end", 'if true\n  echo "x\nend\n', DOUBLE_QUOTE),
    ("stray-end", "echo x; end", STRAY_END),
]


@pytest.mark.parametrize("shell", POSIX_SHELLS)
@pytest.mark.parametrize(("command", "construct"), [case[1:] for case in POSIX_BROKEN],
                         ids=[case[0] for case in POSIX_BROKEN])
def test_posix_shells_refuse_broken_commands(shell: str, command: str, construct: str, tmp_path: Path) -> None:
    assert_refused(check(shell, command, tmp_path), construct, tmp_path)


@pytest.mark.parametrize(("command", "construct"), [case[1:] for case in FISH_BROKEN],
                         ids=[case[0] for case in FISH_BROKEN])
def test_fish_refuses_broken_commands(command: str, construct: str, tmp_path: Path) -> None:
    assert_refused(check("fish", command, tmp_path), construct, tmp_path)


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_the_shells_own_words_are_kept_without_the_file_name(shell: str, tmp_path: Path) -> None:
    problem = check(shell, 'echo ok\necho "unclosed\n', tmp_path)
    assert problem is not None
    assert problem.line is not None and problem.line >= 1
    assert problem.shell_message.startswith(f"line {problem.line}: ")
    assert problem.shell_message in problem.message()
    assert "./command" not in problem.shell_message and str(tmp_path) not in problem.shell_message


def test_bash_names_the_heredoc_line_it_warns_about(tmp_path: Path) -> None:
    problem = check("bash", "echo start\ncat <<STOP\nbody\n", tmp_path)
    assert problem is not None and problem.line == 2
    assert "here-document" in problem.shell_message


# ---------------------------------------------------------------------------------------------
# Valid commands, per shell: the check must never refuse what the shell would run.

COMMON_VALID = [
    "echo hello",
    """echo "it's fine" 'say "hi"' "a\\"b" 'a'\\''b'""",
    'echo hi! there! "wow!" !',
    "! false",
    "echo héllo wörld 日本語 🎉 \"ünïcödé\"",
    "f() { echo in f; }; f",
    "case x in a|b) echo ab;; x) echo x;; *) echo other;; esac",
    "case x in (a) echo a;;\n  (*) echo other\nesac",
    "echo $((1 + 2 * 3)) $(( (4 << 2) >> 1 ))",
    "cat <<EOF\nhello $USER\nEOF",
    "cat <<'EOF'\nliteral $x `y` \"z 'w\nEOF",
    "cat <<-EOF\n\ttab indented\n\tEOF",
    "cat <<EOF1; cat <<EOF2\none\nEOF1\ntwo\nEOF2",
    "cat <<EOF\n)\nEOF",
    "cat <<EOF\nno newline after the terminator\nEOF",
    'echo "<<EOF" \'<<EOF\'',
    'echo "$(cat <<EOF\ninside\nEOF\n)"',
    "for i in 1 2 3; do echo $i; done",
    "for i in 1 2 3\ndo\n  echo $i\ndone",
    "while false; do :; done; until true; do :; done",
    "if true; then echo a; elif false; then echo b; else echo c; fi",
    "{ echo a; echo b; } | cat",
    "(cd /tmp && ls) || echo failed",
    "echo `echo back` $(echo $(echo nested))",
    "x=${y:-default}; echo ${#x} ${x%%a*} ${x#*b}",
    "echo a # a comment with ' and \" and ( in it",
    "echo a; # trailing comment ending in &&",
    "echo a \\\n  b \\\n  c",
    'echo "multi\nline string"',
    "ls | grep x | wc -l",
    "true && echo and || echo or",
    "echo x &&\n  echo y",
    "echo x |\n  cat",
    "sleep 0 & wait",
    "printf '%s\\n' \"a|b\" 'c&&d' \"e;f\" 'g(h' \"i{j\" 'k\"l'",
    "exec 3>&1; echo hi >&3; exec 3>&-",
    "echo x > /dev/null 2>&1",
    'echo "a &&"',
    "echo ~ ~/x",
]

BASH_ZSH_VALID = [
    "echo $'tab\\there' $'it\\'s'",
    "function g { echo g; }; g",
    "(( x = 3 )); echo $x",
    "diff <(echo a) <(echo b)",
    '[[ -n x && "a" == a* ]] && echo yes',
    "[[ $x =~ ^[0-9]+$ ]]",
    'cat <<< "here string"',
    "arr=(a b c); echo ${arr[1]}",
    "echo {a,b,c} {1..3}",
    "echo ${x//a/b}",
    "for ((i = 0; i < 3; i++)); do echo $i; done",
    "echo !(x)",
    "ls @(a|b) +(c) ?(d) *(e)",
    "select x in a b; do break; done",
    "echo x |& cat",
]

FISH_VALID = [
    "echo hello",
    """echo "it's fine" 'say "hi"' 'it\\'s'""",
    "echo hi! ! 'héllo' 日本語 🎉",
    "if true; echo a; else if false; echo b; else; echo c; end",
    "if true\n  echo a\nend",
    "for i in 1 2 3; echo $i; end",
    "while false; end",
    "begin; echo a; echo b; end | cat",
    "function f; echo in f; end; f",
    "switch x; case a b; echo ab; case '*'; echo other; end",
    "echo (echo nested (echo deeper))",
    'echo "$(echo sub)"',
    "set x a b c; echo $x[1] (count $x)",
    "true && echo and || echo or",
    "true; and echo and; or echo or",
    "not false",
    "echo {a,b,c}",
    "echo a # comment with ' and \" and (",
    "echo a \\\n  b",
    "echo x | grep x | wc -l",
    "echo x > /dev/null 2>&1",
    'math "1 + 2"',
    "string replace -r 'a(b)' x abc",
    "printf '%s\\n' 'a|b' 'c&&d' 'e;f'",
    "sleep 0 &; wait",
    'echo "multi\nline"',
    "echo x &&\n  echo y",
]

VALID = {
    "bash": COMMON_VALID + BASH_ZSH_VALID,
    "zsh": COMMON_VALID + BASH_ZSH_VALID,
    "dash": COMMON_VALID,
    "fish": FISH_VALID,
}


@pytest.mark.parametrize(("shell", "command"), [(shell, command) for shell in VALID for command in VALID[shell]])
def test_valid_commands_pass(shell: str, command: str, tmp_path: Path) -> None:
    assert check(shell, command, tmp_path) is None


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_all_valid_commands_together_pass(shell: str, tmp_path: Path) -> None:
    assert check(shell, "\n".join(VALID[shell]) + "\n", tmp_path) is None


def test_bash_parses_extended_globs_the_way_interactive_setups_do(tmp_path: Path) -> None:
    """Without extglob, `!(x)` is a syntax error to bash; nothing in the command can turn it on."""
    assert check("bash", "shopt -s extglob\necho !(x)\n", tmp_path) is None


# ---------------------------------------------------------------------------------------------
# Nothing runs: not the command, not the user's start-up files.


def touch_command(shell: str, marker: Path) -> str:
    substitution = f"(touch {marker})" if shell == "fish" else f"$(touch {marker})"
    return f"touch {marker}\necho {substitution}\n"


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_a_valid_command_is_not_run(shell: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    assert check(shell, touch_command(shell, marker), tmp_path) is None
    assert not marker.exists()


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_a_broken_command_is_not_run_even_in_part(shell: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    assert check(shell, touch_command(shell, marker) + 'echo "unclosed\n', tmp_path) is not None
    assert not marker.exists()


@pytest.mark.parametrize("shell", POSIX_SHELLS)
def test_a_heredoc_probe_runs_nothing_either(shell: str, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    problem = check(shell, f"touch {marker}\ncat <<EOF\n$(touch {marker})\n", tmp_path)
    assert problem is not None and problem.construct == heredoc("EOF")
    assert not marker.exists()


@pytest.mark.parametrize("shell", ALL_SHELLS)
def test_start_up_files_do_not_run(shell: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "rc-ran"
    hook = f"touch {marker}\n"
    home = tmp_path / "home"
    (home / ".config" / "fish").mkdir(parents=True)
    for name in (".zshenv", ".zshrc", ".bashrc", ".bash_profile", ".profile", ".config/fish/config.fish"):
        (home / name).write_text(hook)
    (tmp_path / "env.sh").write_text(hook)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ZDOTDIR", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("BASH_ENV", str(tmp_path / "env.sh"))
    monkeypatch.setenv("ENV", str(tmp_path / "env.sh"))
    assert check(shell, "echo hello\n", tmp_path) is None
    assert check(shell, 'echo "unclosed\n', tmp_path) is not None
    assert not marker.exists()


# ---------------------------------------------------------------------------------------------
# Size and speed.

# zsh forks (without running anything) for every pipeline it checks, about 0.3 ms each, so
# thousands of pipelines are avoided here: 7000 of them take zsh over two seconds.
BIG_LINES = "".join(f"echo 'line {i}' \"$HOME\" > /dev/null\n" for i in range(7000))
BIG_ONE_LINE = "echo " + "x" * 200_000 + "\n"
BIG_HEREDOC = "cat > /dev/null <<'EOF'\n" + "".join(f"row {i}: ' \" ` $( {{ \n" for i in range(12000)) + "EOF\n"
BIG = {"many-lines": BIG_LINES, "one-line": BIG_ONE_LINE, "heredoc": BIG_HEREDOC}


@pytest.mark.parametrize("shell", ALL_SHELLS)
@pytest.mark.parametrize("size", BIG)
def test_a_200_kb_command_is_checked(shell: str, size: str, tmp_path: Path) -> None:
    """Checked, not skipped for its size (how long it takes: bench/bench_fallbacks.py, `check`)."""
    if shell == "fish" and size == "heredoc":
        pytest.skip("fish has no heredocs")
    command = BIG[size]
    assert len(command) >= 200_000
    assert check(shell, command, tmp_path) is None
    broken = check(shell, command + 'echo "unclosed\n', tmp_path)
    assert broken is not None and broken.construct == DOUBLE_QUOTE, "the check was skipped, not run"


# ---------------------------------------------------------------------------------------------
# No verdict rather than an error.


def test_an_unknown_shell_is_not_checked(tmp_path: Path) -> None:
    command_file = tmp_path / "command"
    command_file.write_text('echo "unclosed')
    assert check_syntax("tcsh", installed("bash"), command_file) is None
    assert check_syntax("nu", "/usr/bin/nu", command_file) is None


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "sh"])
def test_a_missing_shell_gives_no_verdict(shell: str, tmp_path: Path) -> None:
    command_file = tmp_path / "command"
    command_file.write_text('echo "unclosed')
    assert check_syntax(shell, str(tmp_path / "no-such-shell"), command_file) is None
    assert check_syntax(shell, str(tmp_path), command_file) is None


def test_a_missing_command_file_gives_no_verdict(tmp_path: Path) -> None:
    assert check_syntax("bash", installed("bash"), tmp_path / "absent") is None


def fake_shell(directory: Path, body: str) -> str:
    path = directory / "fake-shell"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def running(pid: int) -> bool:
    """Whether the process still runs; a zombie waiting for its reaper does not count."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def test_a_slow_check_is_skipped_in_time_and_leaves_nothing_behind(tmp_path: Path) -> None:
    # The background sleep keeps stderr open: a check that waited for it would outlast the
    # test's own time limit (pytest-timeout) long before either sleep ended.
    pid_file = tmp_path / "background.pid"
    shell = fake_shell(tmp_path, f"sleep 3000 &\necho $! > {pid_file}\nsleep 3000")
    command_file = tmp_path / "command"
    command_file.write_text('echo "unclosed')
    assert check_syntax("bash", shell, command_file, timeout=0.3) is None
    background = int(pid_file.read_text())
    deadline = time.monotonic() + 2.0
    while running(background) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not running(background), "the shell's own child outlived the check"


def test_a_shell_rejecting_its_options_gives_no_verdict(tmp_path: Path) -> None:
    shell = fake_shell(tmp_path, "echo \"fish: unrecognized option '--no-config'\" >&2\nexit 1")
    command_file = tmp_path / "command"
    command_file.write_text('echo "unclosed')
    assert check_syntax("fish", shell, command_file) is None


def test_a_diagnostic_about_the_file_is_a_verdict(tmp_path: Path) -> None:
    shell = fake_shell(tmp_path, "echo \"$4: line 3: syntax error near unexpected token \\`fi'\" >&2\nexit 2")
    command_file = tmp_path / "command"
    command_file.write_text("echo a\necho b\nfi\n")
    problem = check_syntax("bash", shell, command_file)
    assert problem == SyntaxProblem(STRAY_FI, "line 3: syntax error near unexpected token `fi'", 3)


@pytest.mark.parametrize("command", ["! false", "echo x; !", "! true\ntrue\n", "x && ! y"])
def test_zsh_failing_silently_on_a_negation_is_no_verdict(command: str, tmp_path: Path) -> None:
    """`zsh -n` exits 1 here although the text is valid: only a diagnostic makes a verdict."""
    assert check("zsh", command, tmp_path) is None


def test_a_failure_without_words_is_no_verdict(tmp_path: Path) -> None:
    command_file = tmp_path / "command"
    command_file.write_text('echo "unclosed')
    assert check_syntax("bash", fake_shell(tmp_path, "exit 2"), command_file) is None


# ---------------------------------------------------------------------------------------------
# The pure part: messages from shells that may not be installed here.


@pytest.mark.parametrize(
    ("shell", "message", "command", "construct"),
    [
        ("bash", "unexpected EOF while looking for matching `''", "echo 'a", SINGLE_QUOTE),
        ("bash", "unexpected EOF while looking for matching ``'", "echo `a", BACKQUOTE),
        ("bash", "unexpected EOF while looking for matching `)'", "echo $(a", PARENTHESIS),
        ("bash", "warning: here-document at line 1 delimited by end-of-file (wanted `END')", "cat <<END\n",
         heredoc("END")),
        ("bash", "syntax error: unexpected end of file", "case x in\n a) echo;;\n", CASE),
        ("zsh", "unmatched \"", 'echo "a', DOUBLE_QUOTE),
        ("zsh", "closing brace expected", "echo ${a", BRACE),
        ("zsh", "parse error near `x'", "while true; do echo x", LOOP),
        ("dash", "Syntax error: Unterminated quoted string", "echo 'a\"b", SINGLE_QUOTE),
        ("dash", 'Syntax error: end of file unexpected (expecting "fi")', "if true; then :", IF),
        ("dash", 'Syntax error: end of file unexpected (expecting ")")', "case x in a) :;;", CASE),
        ("dash", "Syntax error: EOF in backquote substitution", "echo `a", BACKQUOTE),
        ("ksh93", "syntax error at line 1: `\"' unmatched", 'echo "a', DOUBLE_QUOTE),
        ("ksh93", "syntax error at line 3: `if' unmatched", "if true\nthen :\n", IF),
        ("mksh", "syntax error: unexpected EOF", "for i in 1; do :", LOOP),
        ("fish", "Unexpected end of string, quotes are not balanced", "echo 'a", SINGLE_QUOTE),
        ("fish", "Missing end to balance this if statement", 'if true\n echo "a\nend', DOUBLE_QUOTE),
        ("fish", "Missing end to balance this function definition", "function f", syntax.FISH_FUNCTION),
        ("fish", "Expected a command, but found end of the input", "echo a; and", DANGLING),
        ("fish", "Unexpected ')' for unopened parenthesis", "echo a )", PARENTHESIS),
        ("bash", "syntax error near unexpected token `newline'", "echo >", UNKNOWN),
        ("zsh", "parse error", "", UNKNOWN),
    ],
)
def test_classify(shell: str, message: str, command: str, construct: str) -> None:
    assert classify(shell, message, command) == construct


def test_the_shells_words_name_the_culprit_when_the_text_cannot() -> None:
    assert classify("bash", "syntax error near unexpected token `}'", "") == BRACE
    assert classify("fish", "Missing end to balance this begin", "") == FISH_BEGIN


def test_message_for_an_unknown_culprit_does_not_pretend_to_know() -> None:
    message = SyntaxProblem(UNKNOWN, "line 1: parse error", 1).message()
    assert "unbalanced" not in message
    assert "line 1: parse error" in message and "Nothing was run" in message


@pytest.mark.parametrize(
    ("construct", "advice"),
    [(DOUBLE_QUOTE, "quoting"), (heredoc("EOF"), "delimiter"), (DANGLING, "trailing operator"), (IF, "structure")],
)
def test_message_says_what_to_fix(construct: str, advice: str) -> None:
    message = SyntaxProblem(construct, "", None).message()
    assert construct in message and advice in message and message.endswith("retry.")


def test_long_shell_words_are_cut() -> None:
    words = syntax.shell_words(f"./command: line 1: syntax error near `{'x' * 5000}'\n", "./command")
    assert len(words) == 1 and len(words[0].neutral()) < 400


def test_the_check_environment_keeps_the_character_set_and_drops_start_up_hooks() -> None:
    env = syntax.check_environment({"LC_ALL": "de_DE.UTF-8", "LANGUAGE": "de", "BASH_ENV": "/x", "ENV": "/y",
                                    "PATH": "/bin"})
    assert env == {"LC_CTYPE": "de_DE.UTF-8", "LC_MESSAGES": "C", "PATH": "/bin"}


@pytest.mark.parametrize(
    ("name", "family"),
    [("bash", "bash"), ("zsh", "zsh"), ("fish", "fish"), ("sh", "posix"), ("dash", "posix"), ("ksh93", "posix"),
     ("mksh", "posix"), ("tcsh", None), ("csh", None), ("nu", None), ("pwsh", None)],
)
def test_shell_family(name: str, family: str | None) -> None:
    assert syntax.shell_family(name) == family


def test_classifying_never_fails_whatever_the_text() -> None:
    pieces = [*" \t\n;&|<>(){}'\"`$\\#!=", "if ", "then ", "fi ", "for ", "do ", "done ", "case ", "in ",
              "esac ", "<<EOF\n", "<<-'E'\n", "EOF\n", "$((", "${", "$(", "$'", "end ", "begin ", "a)", ";;"]
    rng = random.Random(28)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        for shell in ("bash", "fish"):
            assert isinstance(classify(shell, "syntax error", text), str)


@pytest.mark.parametrize("command", [
    "echo 5", "git status", "ls -la /tmp ~/x", "a=1 b=2 cmd --flag=x,y:z@h%1+2", "echo a; b", "cd x && ls | head -3",
])
def test_plain_words_are_passed_without_starting_the_shell(command: str) -> None:
    from safe_run.syntax.check import plainly_parses
    from safe_run.syntax.family import syntax_facts

    facts = syntax_facts("bash")
    assert facts is not None and plainly_parses(facts, command)


@pytest.mark.parametrize("command", ["then echo", "fi", "echo 'x", "echo a; (b)", "echo 1\necho 2", "for x", "done"])
def test_anything_else_is_left_to_the_shell(command: str) -> None:
    from safe_run.syntax.check import plainly_parses
    from safe_run.syntax.family import syntax_facts

    facts = syntax_facts("bash")
    assert facts is not None and not plainly_parses(facts, command)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize("command", [
    "echo 5", "a=1 cmd --flag=x,y:z@h%1+2", "begin", "switch x", "break", "else", "end", "case x", "and echo",
])
def test_plain_words_pass_in_fish_only_where_fish_itself_parses_them(command: str, tmp_path: Path) -> None:
    """fish has words of its own that open or close a block: those are left to fish."""
    from safe_run.syntax.check import plainly_parses
    from safe_run.syntax.family import syntax_facts

    fish = syntax_facts("fish")
    assert fish is not None
    script = tmp_path / "command.fish"
    script.write_text(command, encoding="utf-8")
    parsed = subprocess.run(["fish", "--no-config", "--no-execute", str(script)], capture_output=True, timeout=30)
    assert not plainly_parses(fish, command) or parsed.returncode == 0
    assert plainly_parses(fish, command) or command.split()[0] in ("begin", "switch", "break", "else", "end", "case", "and")


SIMPLE_PIECES = [
    "echo", "ls", "a", "x=1", "'q q'", "'a\"b'", '"d $x"', '"${v}/p"', "$HOME", "${v}", "$?", "$1", "|", "&&", "||",
    ";", "&", ">", ">>", "<", "2>", "2>&1", ">&2", "f.txt", "*.py", "[", "]", "-n", "--opt=v,w", "~/x", "%1", "@:+",
    "if", "then", "fi", "done", "[[", "]]", "{", "(", "$(", "`", "#", "\\", "!", "<<", "\"", "'",
    "${v:-}", "${v##*/}", "${#v}", "${v%.py}", "${v%%.*}", "${v:=d}", "${v+x}", "${v:?}", '"${v:-a}"', "${v:1}",
    "${v/a/b}", "${v:-$x}", "}",
]


def _parses_everywhere(command: str, tmp_path: Path, shells: list[str]) -> bool:
    script = tmp_path / "command"
    script.write_text(command, encoding="utf-8")
    return all(subprocess.run([shell, "-n", str(script)], capture_output=True, timeout=30).returncode == 0
               for shell in shells)


def test_a_simple_list_is_passed_only_where_every_posix_shell_parses_it(tmp_path: Path) -> None:
    """Every line the quick check passes, bash, zsh, dash and ksh (those installed) parse too; and
    it passes the everyday shapes of agents' commands."""
    from safe_run.syntax.check import POSIX_RESERVED
    from safe_run.syntax.simple import simple_list

    shells = [path for name in ("bash", "zsh", "dash", "ksh") if (path := shutil.which(name))]
    for everyday in ('cd src && grep -rn "TODO" . | head -20', "python3 -c 'print(1)' 2>&1; echo \"$?\"",
                     "ls -la ~/x > out.txt 2>&1 &", "[ -f x ] || touch x", "export A=1; echo ${A}",
                     'echo "${VIRTUAL_ENV:-none}" ${PWD##*/} ${#PATH}'):
        assert simple_list(everyday, POSIX_RESERVED), everyday
        assert _parses_everywhere(everyday, tmp_path, shells), everyday
    rng = random.Random(28)
    passed = 0
    for _ in range(400):
        pieces = [rng.choice(SIMPLE_PIECES) for _ in range(rng.randint(1, 7))]
        command = "".join(piece + rng.choice([" ", " ", ""]) for piece in pieces)
        if simple_list(command, POSIX_RESERVED):
            passed += 1
            assert _parses_everywhere(command, tmp_path, shells), command
    assert passed > 20, "the sample tried too few lines the check passes"

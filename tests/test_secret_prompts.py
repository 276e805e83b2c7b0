"""sudo, su and passwd as an ordinary user asks them: at the person's own terminal, through
`attach`, and through `send`.

These programs are setuid: the kernel hides what they wait on from the user who runs them, and
they ask root for nothing, so each test makes a throwaway user with a password (and a sudoers
entry) as root and removes it after. The password must reach the program, and never a history,
a screen, a recording or a result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from throwaway_user import Unavailable, User, Users

pytestmark = pytest.mark.slow

BOUND_S = 20
SUDO = "sudo true; echo rc=$?"
SUDO_STDIN = "sudo -S -p 'pw: ' true; echo rc=$?"


@pytest.fixture(scope="module")
def users() -> Iterator[Users]:
    try:
        made = Users()
    except Unavailable as why:
        pytest.skip(str(why))
    try:
        yield made
    finally:
        made.remove()


@pytest.fixture(scope="module")
def sudoer(users: Users) -> User:
    try:
        return users.make(sudoer=True)
    except Unavailable as why:
        pytest.skip(str(why))


@pytest.fixture(scope="module")
def other(users: Users) -> User:
    """The user `su` asks to become."""
    return users.make()


@pytest.fixture(scope="module")
def key(sudoer: User) -> tuple[Path, str]:
    """An ssh key of the sudoer's with a passphrase: ssh and ssh-keygen ask for it on /dev/tty."""
    if shutil.which("ssh-keygen") is None:
        pytest.skip("ssh-keygen is not installed")
    path, passphrase = sudoer.home / "id_ed25519", f"Phrase-{os.urandom(6).hex()}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "", "-f", str(path)], check=True)
    shutil.chown(path, sudoer.name)
    return path, passphrase


def terminal(argv: list[str], cwd: Path) -> pexpect.spawn:
    """A person's terminal running `argv`."""
    return pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), dimensions=(30, 100), timeout=BOUND_S, encoding="utf-8",
                         codec_errors="replace")


def asked(user: User, *args: str) -> dict[str, Any]:
    done = user.run(*args, "--format", "json") if args[0] in ("send", "poll") else user.run("--format", "json", *args)
    assert done.stdout, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def prompts(sudoer: User, other: User, key: tuple[Path, str]) -> list[tuple[str, str, str]]:
    """(command, its prompt, the password it takes) for each prompt: three setuid, and ssh's."""
    return [
        (SUDO, "password for", sudoer.password),
        (SUDO_STDIN, "pw: ", sudoer.password),
        (f"su {other.name} -c 'id -un'; echo rc=$?", "Password: ", other.password),
        (f"ssh-keygen -y -f {key[0]} >/dev/null; echo rc=$?", "passphrase", key[1]),
    ]


PROMPTS = pytest.mark.parametrize("which", [0, 1, 2, 3], ids=["sudo", "sudo -S", "su", "ssh-keygen"])


def kept_nowhere(secret: str, result: dict[str, Any]) -> None:
    """The secret is in no result, recording or log of the session."""
    assert secret not in json.dumps(result)
    directory = Path(result["recording"]).parent if result.get("recording") else None
    if directory is not None and directory.is_dir():
        for kept in directory.iterdir():
            if kept.is_file():
                assert secret.encode() not in kept.read_bytes(), kept.name


@PROMPTS
def test_a_person_answers_a_password_prompt_at_their_own_terminal(
    sudoer: User, other: User, key: tuple[Path, str], which: int
) -> None:
    command, prompt, password = prompts(sudoer, other, key)[which]
    screen = terminal(sudoer.argv("--", command), sudoer.home)
    screen.expect_exact(prompt)
    screen.send(password + "\r")
    screen.expect("rc=0")
    screen.expect("completed")
    screen.expect(pexpect.EOF)
    assert password not in (screen.before or "")


def test_passwd_takes_three_answers_at_a_persons_terminal(users: Users) -> None:
    user = users.make()
    new = f"New-{os.urandom(6).hex()}-Quiet-River"
    screen = terminal(user.argv("--", "passwd; echo rc=$?"), user.home)
    for prompt, answer in (("Current password: ", user.password), ("New password: ", new),
                           ("Retype new password: ", new)):
        screen.expect_exact(prompt)
        screen.send(answer + "\r")
    screen.expect("rc=0")
    screen.expect(pexpect.EOF)


@PROMPTS
def test_an_agent_answers_a_password_prompt_with_send(sudoer: User, other: User, key: tuple[Path, str], which: int) -> None:
    command, prompt, password = prompts(sudoer, other, key)[which]
    waiting = asked(sudoer, "--", command)
    assert (waiting["status"], waiting["secret"]) == ("input_required", True), waiting
    assert prompt.strip() in waiting["prompt"]
    sent = asked(sudoer, "send", waiting["session_id"], password)
    assert sent["status"] == "completed" or sent["message"].startswith("typed"), sent
    done = sent if sent["status"] == "completed" else asked(sudoer, "poll", waiting["session_id"], "--wait", "10")
    assert (done["status"], done["exit_code"]) == ("completed", 0), done
    assert "rc=0" in done["output"]
    kept_nowhere(password, done)


def test_a_person_attached_answers_sudo(sudoer: User) -> None:
    waiting = asked(sudoer, "--", SUDO)
    assert (waiting["status"], waiting["secret"]) == ("input_required", True), waiting
    screen = terminal(sudoer.argv("attach", waiting["session_id"]), sudoer.home)
    screen.expect("password for")
    screen.send(sudoer.password + "\r")
    screen.expect("rc=0")
    screen.expect(pexpect.EOF)
    done = asked(sudoer, "poll", waiting["session_id"], "--wait", "10")
    assert (done["status"], done["exit_code"]) == ("completed", 0), done
    kept_nowhere(sudoer.password, done)


def sudo_at_the_persons_shell(sudoer: User) -> pexpect.spawn:
    """The sudoer's own shell, running sudo through safe-run."""
    screen = terminal(sudoer.shell_argv(), sudoer.home)
    screen.expect_exact("$ ")
    screen.send(f"{sudoer.python} -m safe_run -- '{SUDO}'\r")
    return screen


def the_persons_shell_goes_on(screen: pexpect.spawn) -> str:
    """What the person's shell shows once it runs a command of theirs, and then exits."""
    screen.send("echo shell-$((20+22))\r")
    screen.expect("shell-42")
    seen = screen.before or ""
    screen.send("exit\r")
    screen.expect(pexpect.EOF)
    return seen + (screen.before or "")


def test_a_password_typed_in_one_go_with_the_last_wrong_one_is_dropped(sudoer: User) -> None:
    """The last wrong answer and the right one arrive together: only the line sudo reads goes to its
    terminal, so the other is dropped when sudo gives up, not read by a shell."""
    screen = sudo_at_the_persons_shell(sudoer)
    for attempt in range(2):
        screen.expect("password for")
        screen.send(f"wrong-{attempt}\r")
    screen.expect("password for")
    screen.send(f"wrong-2\r{sudoer.password}\r")
    screen.expect(r"dropped \d+ bytes typed after a secret was asked")
    seen = (screen.before or "") + (screen.after or "")
    assert "incorrect password attempts" in seen
    assert sudoer.password not in seen + the_persons_shell_goes_on(screen)


def test_a_line_typed_ahead_at_a_password_prompt_answers_the_next_one(sudoer: User) -> None:
    """A wrong password and the right one typed together: sudo reads the first, asks again, and
    gets the second, as at a plain terminal."""
    screen = sudo_at_the_persons_shell(sudoer)
    screen.expect("password for")
    screen.send(f"wrong\r{sudoer.password}\r")
    screen.expect("rc=0")
    screen.expect(r"\$ $")
    assert "dropped" not in (screen.before or "")
    screen.send("exit\r")
    screen.expect(pexpect.EOF)


def test_a_password_typed_after_sudo_gave_up_never_reaches_the_persons_shell(sudoer: User) -> None:
    """Three wrong answers, and the right one typed as sudo gives up: it is dropped, and said so,
    rather than read by the person's own shell as a command and kept in its history."""
    screen = sudo_at_the_persons_shell(sudoer)
    for attempt in range(3):
        screen.expect("password for")
        screen.send(f"wrong-{attempt}\r")
    screen.send(sudoer.password + "\r")
    screen.expect("incorrect password attempts")
    seen = screen.before or ""
    screen.expect(r"dropped \d+ bytes typed after a secret was asked")
    seen += (screen.before or "") + (screen.after or "")
    assert sudoer.password not in seen + the_persons_shell_goes_on(screen)
    history = sudoer.home / ".bash_history"
    assert not history.exists() or sudoer.password not in history.read_text()

"""How soon a password prompt an ordinary user meets is answered, through each front end, beside
the same prompt at a plain terminal.

    .venv/bin/python bench/bench_secret_prompts.py [--runs N]      (as root)

Makes throwaway users (a sudoer, a user for `su` to become), as tests/test_secret_prompts.py
does, and removes them. Each prompt (sudo, sudo -S, su, passwd with its three questions) is
answered N times (default 3) in four ways:
  plain     the command in a plain terminal (pexpect's), no safe-run: the reference
  terminal  `safe-run -- COMMAND` at the person's own terminal
  attach    an agent's JSON run answers input_required; a person attaches and answers
  send      an agent's JSON run answers input_required; the agent answers with `send` and polls
For plain, terminal and attach: from the prompt on the screen to what the command prints after the
last answer, less nothing (the person types at once). For send: from the answer that reported
the prompt to the one that reports the next prompt or the end. `asked` is how long the agent's
first call took to say input_required (shell start included). Medians, with the ratio to plain.
No figure here is asserted; these machines are shared.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from throwaway_user import Unavailable, User, Users  # noqa: E402

BOUND_S = 30
# The command, each prompt and its answer, and the user who runs it.
Case = tuple[str, list[tuple[str, str]], User]


def cases(sudoer: User, other: User, users: Users) -> dict[str, Callable[[], Case]]:
    def passwd() -> Case:
        user = users.make()  # a new password each time: each run changes one
        new = f"New-{time.time_ns()}-Quiet-River"
        return "passwd; echo rc=$?", [("Current password: ", user.password), ("New password: ", new),
                                      ("Retype new password: ", new)], user
    return {
        "sudo": lambda: ("sudo true; echo rc=$?", [("password for", sudoer.password)], sudoer),
        "sudo -S": lambda: ("sudo -S -p 'pw: ' true; echo rc=$?", [("pw: ", sudoer.password)], sudoer),
        "su": lambda: (f"su {other.name} -c true; echo rc=$?", [("Password: ", other.password)], sudoer),
        "passwd": passwd,
    }


def screen(argv: list[str], cwd: Path) -> pexpect.spawn:
    return pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), dimensions=(30, 100), timeout=BOUND_S, encoding="utf-8",
                         codec_errors="replace")


def answered_at_screen(term: pexpect.spawn, prompts: list[tuple[str, str]]) -> float:
    """Seconds from each prompt on the screen to what follows its answer (the next prompt, or the
    command's last line); their mean."""
    times = []
    term.expect_exact(prompts[0][0].strip())  # an attach draws the screen, trailing blanks left out
    for index, (_, answer) in enumerate(prompts):
        shown = time.monotonic()
        term.send(answer + "\r")
        term.expect_exact(prompts[index + 1][0] if index + 1 < len(prompts) else "rc=0")
        times.append(time.monotonic() - shown)
    term.expect(pexpect.EOF)
    return statistics.mean(times)


def plain(case: Case) -> float:
    user = case[2]
    argv = ["runuser", "-u", user.name, "--", "env", "-i", *[f"{k}={v}" for k, v in user.env.items()],
            "bash", "--norc", "-c", case[0]]
    return answered_at_screen(screen(argv, user.home), case[1])


def at_terminal(case: Case) -> float:
    user = case[2]
    return answered_at_screen(screen(user.argv("--", case[0]), user.home), case[1])


def asked(user: User, *args: str) -> dict:
    done = user.run(*args)
    return json.loads(done.stdout)


def attach(case: Case) -> tuple[float, float]:
    user = case[2]
    started = time.monotonic()
    first = asked(user, "--format", "json", "--", case[0])
    took = time.monotonic() - started
    assert first["status"] == "input_required", first
    return answered_at_screen(screen(user.argv("attach", first["session_id"]), user.home), case[1]), took


def send(case: Case) -> tuple[float, float]:
    user = case[2]
    started = time.monotonic()
    answer = asked(user, "--format", "json", "--", case[0])
    took = time.monotonic() - started
    session, times = answer["session_id"], []
    for _, text in case[1]:
        assert answer["status"] == "input_required", answer
        shown = time.monotonic()
        answer = asked(user, "send", session, text, "--format", "json")
        while answer["status"] == "running":
            answer = asked(user, "poll", session, "--wait", "10", "--format", "json")
        times.append(time.monotonic() - shown)
    assert answer["status"] == "completed" and answer["exit_code"] == 0, answer
    return statistics.mean(times), took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    try:
        users = Users()
        sudoer, other = users.make(sudoer=True), users.make()
    except Unavailable as why:
        sys.exit(f"bench_secret_prompts: {why}")
    try:
        print(f"{'prompt':<9} {'plain':>8} {'terminal':>17} {'attach':>17} {'send':>17} {'asked':>8}  (s, median of {runs})")
        for name, make in cases(sudoer, other, users).items():
            figures: dict[str, list[float]] = {"plain": [], "terminal": [], "attach": [], "send": [], "asked": []}
            for _ in range(runs):
                for way in ("plain", "terminal", "attach", "send"):
                    case = make()
                    if way == "plain":
                        figures[way].append(plain(case))
                    elif way == "terminal":
                        figures[way].append(at_terminal(case))
                    else:
                        value, took = attach(case) if way == "attach" else send(case)
                        figures[way].append(value)
                        figures["asked"].append(took)
            reference = statistics.median(figures["plain"])
            cells = [f"{reference:8.3f}"] + [
                f"{statistics.median(figures[way]):8.3f} ({statistics.median(figures[way]) / reference:5.2f}x)"
                for way in ("terminal", "attach", "send")]
            print(f"{name:<9} {' '.join(cells)} {statistics.median(figures['asked']):8.3f}")
    finally:
        users.remove()


if __name__ == "__main__":
    main()

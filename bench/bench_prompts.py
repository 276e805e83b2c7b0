"""What a user's prompt framework costs a call: `true` with their rc files against `--no-rc`.

    .venv/bin/python bench/bench_prompts.py [--runs N] [--pause S] [--only NAME,...]

For every setup of tests/test_prompt_setups.py whose packages are installed (liquidprompt,
powerline, bash-completion, fzf, direnv, zoxide, autojump, atuin; pure, spaceship, powerlevel9k,
autosuggestions with syntax highlighting, an options set; fish with its tools and a git prompt),
in a git work tree, it times `safe-run --format json -- true` as an agent calls it, three ways,
each in a HOME of its own (so each has its own warm process), interleaved, each call after a
pause (`--pause`) that lets the warm process keep the next shell ready:
  rc        the setup's rc files, loaded in the shell kept ahead
  --no-rc   the same call with --no-rc, the issue's reference: the shell kept ahead is a plain
            call's, so this side starts its shell at each call
  empty     no rc files at all: the shell kept ahead is taken, as on the rc side
It prints the medians in ms and the rc side's ratio to each reference, against the target of at
most 1.5x: a call's answer waits for the command's end, not for the prompt to be drawn or its
hooks to finish. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from test_prompt_setups import SETUPS, Setup, _missing  # noqa: E402
from private import scratch

TARGET = 1.5


def safe_run_argv() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "safe-run")
    return [script] if os.access(script, os.X_OK) else [sys.executable, "-m", "safe_run"]


def prepare(setup: Setup, root: Path, side: str) -> tuple[dict[str, str], Path]:
    home = root / setup.name / side / "home"
    tree = root / setup.name / "tree"
    home.mkdir(parents=True)
    tree.mkdir(exist_ok=True)
    subprocess.run(["git", "init", "-q", str(tree)], check=False)
    if setup.shell == "fish":
        rc = home / ".config" / "fish" / "config.fish"
        rc.parent.mkdir(parents=True)
        (home / ".local" / "share" / "fish" / "generated_completions").mkdir(parents=True)
    else:
        rc = home / (".bashrc" if setup.shell == "bash" else ".zshrc")
    rc.write_text(setup.rc if side != "empty" else "")
    path = os.pathsep.join([*map(str, setup.path), os.environ["PATH"]])
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
           "SHELL": shutil.which(setup.shell) or setup.shell, "TMPDIR": str(home.parent)}
    return env, tree


def timed(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - started) * 1000


def stop_warm(home: str) -> None:
    for lock in glob.glob(os.path.join(home, ".local/state/safe-run/sessions/warm/*.lock")):
        try:
            os.kill(int(Path(lock).read_text().split()[0]), signal.SIGTERM)
        except (OSError, ValueError, IndexError):
            pass


def measure(setup: Setup, root: Path, runs: int, pause: float) -> dict[str, float]:
    """Each side in a HOME of its own (the same rc files), so that each has its own warm process
    and keeps its own kind of shell ahead, as a caller that makes one kind of call does."""
    base = [*safe_run_argv(), "--format", "json"]
    sides = {"rc": ([*base, "--", "true"], *prepare(setup, root, "rc")),
             "no-rc": ([*base, "--no-rc", "--", "true"], *prepare(setup, root, "no-rc")),
             "empty": ([*base, "--", "true"], *prepare(setup, root, "empty"))}
    times: dict[str, list[float]] = {side: [] for side in sides}
    try:
        for _ in range(3):  # the warm processes, and the shells they keep ahead, ready
            for argv, env, tree in sides.values():
                timed(argv, env, tree)
                time.sleep(pause)
        for _ in range(runs):
            for name, (argv, env, tree) in sides.items():
                time.sleep(pause)
                times[name].append(timed(argv, env, tree))
    finally:
        for _, env, _ in sides.values():
            stop_warm(env["HOME"])
    return {side: statistics.median(figures) for side, figures in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=float, default=1.0)
    parser.add_argument("--only", default="", help="comma-separated setup names")
    args = parser.parse_args()
    chosen = [s for s in SETUPS if not args.only or s.name in args.only.split(",")]
    print(f"{'setup':<18} {'shell':<5} {'rc ms':>7} {'--no-rc':>8} {'empty':>7} {'/no-rc':>7} {'/empty':>7}"
          f"  target <= {TARGET}x")
    with scratch("bench-prompts-") as root:
        for setup in chosen:
            missing = _missing(setup) if shutil.which(setup.shell) else [setup.shell]
            if missing:
                print(f"{setup.name:<18} {setup.shell:<5} skipped: {', '.join(missing)} not found")
                continue
            ms = measure(setup, Path(root), args.runs, args.pause)
            ratios = ms["rc"] / ms["no-rc"], ms["rc"] / ms["empty"]
            print(f"{setup.name:<18} {setup.shell:<5} {ms['rc']:7.1f} {ms['no-rc']:8.1f} {ms['empty']:7.1f}"
                  f" {ratios[0]:7.2f} {ratios[1]:7.2f}{'' if max(ratios) <= TARGET else '  over'}", flush=True)


if __name__ == "__main__":
    main()

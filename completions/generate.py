#!/usr/bin/env python3
"""Write safe-run's bash, zsh and fish completion scripts from its click command.

    .venv/bin/python completions/generate.py                 # rewrite the files next to this script
    .venv/bin/python completions/generate.py --output-dir D  # write them into D instead

Each script is exactly what `_SAFE_RUN_COMPLETE=<shell>_source safe-run` prints, preceded by a
one-line comment. The command is run from this checkout's `src` (not whatever safe-run happens
to be installed), under the name `safe-run` that `main` gives click, so the output depends only
on the source tree and the installed click, never on how this script was called. Run it with a
Python that has safe-run's dependencies (the project's venv) after changing the options of
`run_command`; tests/test_completions.py fails until the committed files match.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
PROG = "safe-run"
COMPLETE_VAR = "_SAFE_RUN_COMPLETE"  # click's name for it: "_" + PROG upper-cased, "-" -> "_", + "_COMPLETE"
FUNCTION = "_safe_run_completion"  # the shell function click names after PROG

# shell -> the file that holds its script (the names the shells' loaders look for)
FILES = {
    "bash": "safe-run",
    "zsh": "_safe-run",
    "fish": "safe-run.fish",
}

HEADER = "# {shell} completion for safe-run, generated from its click command by completions/generate.py; do not edit.\n"


def click_source(shell: str) -> str:
    """What safe-run itself prints when asked for its completion script for `shell`."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    env[COMPLETE_VAR] = f"{shell}_source"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))
    proc = subprocess.run(
        [sys.executable, "-m", "safe_run"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    source = proc.stdout
    if proc.returncode != 0 or FUNCTION not in source or PROG not in source:
        raise SystemExit(
            f"generate.py: `{COMPLETE_VAR}={shell}_source python -m safe_run` did not print a {shell} "
            f"completion script for {PROG} (exit {proc.returncode}).\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        )
    return source


# safe-run prints a fish script that splits each answer at its first comma only (see
# src/safe_run/cli/commands/completion.py); click's own splits at every one.
FISH_SPLIT_ONCE = 'set -l metadata (string split --max 1 "," $completion);'


def render(shell: str) -> str:
    """The file's text: safe-run's script with a header (after `#compdef`, which zsh needs first)."""
    source = click_source(shell)
    if shell == "fish" and FISH_SPLIT_ONCE not in source:
        raise SystemExit(f"generate.py: the fish script does not split its answers with {FISH_SPLIT_ONCE!r}")
    if not source.endswith("\n"):
        source += "\n"
    header = HEADER.format(shell=shell)
    if shell == "zsh":
        first, _, rest = source.partition("\n")
        if not first.startswith("#compdef"):
            raise SystemExit(f"generate.py: the zsh script does not start with #compdef: {first!r}")
        return f"{first}\n{header}{rest}"
    return header + source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write safe-run's shell completion scripts.")
    parser.add_argument(
        "--output-dir", type=Path, default=HERE, help="where to write the scripts (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for shell, name in FILES.items():
        path = args.output_dir / name
        path.write_text(render(shell), encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

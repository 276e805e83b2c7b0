"""The shell completion scripts safe-run prints (`_SAFE_RUN_COMPLETE=fish_source safe-run`).

click's fish script splits each answer at every comma, which cuts a description (and a value)
at its first comma; only the first comma separates the answer's type from the rest. The script
printed at run time is the one `completions/generate.py` writes into the package's files, so a
person who loads it either way gets the same completions.
"""

from __future__ import annotations

from click.shell_completion import FishComplete, add_completion_class

# The variable click reads: "_" + the program's name upper-cased, "-" as "_", + "_COMPLETE".
COMPLETE_VAR = "_SAFE_RUN_COMPLETE"
FISH_SPLIT = 'set -l metadata (string split "," $completion);'
FISH_SPLIT_ONCE = 'set -l metadata (string split --max 1 "," $completion);'


class FishSplitOnce(FishComplete):
    source_template = FishComplete.source_template.replace(FISH_SPLIT, FISH_SPLIT_ONCE)


def use_ours() -> None:
    """Print and answer with the fixed fish script instead of click's own."""
    if FISH_SPLIT not in FishComplete.source_template:
        raise RuntimeError(f"click's fish script no longer splits its answers with {FISH_SPLIT!r}")
    add_completion_class(FishSplitOnce, FishComplete.name)

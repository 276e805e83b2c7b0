"""What each benchmark's runs share: a HOME and session store of their own, and a terminal's TERM."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager

# How long the end of a benchmark waits for holders to finish writing in its directory.
REMOVAL_S = 5.0


def private_environment(root: str, shell: str = "/bin/bash") -> dict[str, str]:
    """An environment whose HOME, TMPDIR and XDG_RUNTIME_DIR are under `root` (created here), so
    that a benchmark's sessions and shells never meet the machine's; no warm process, so that
    each call is measured as it is."""
    runtime = os.path.join(root, "run")
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    passed = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    return {**passed, "HOME": root, "XDG_RUNTIME_DIR": runtime, "TMPDIR": root, "SHELL": shell,
            "LANG": "C.UTF-8", "TERM": "xterm-256color", "SAFE_RUN_WARM": "0"}


@contextmanager
def scratch(prefix: str = "bench-") -> Iterator[str]:
    """A temporary directory for a benchmark's HOME and sessions, removed at the end. A holder
    finishes its session after its answer (the shell's hang-up, the session's files), so the
    removal is repeated, for up to REMOVAL_S, until nothing new was written meanwhile."""
    root = tempfile.mkdtemp(prefix=prefix)
    try:
        yield root
    finally:
        deadline = time.monotonic() + REMOVAL_S
        shutil.rmtree(root, ignore_errors=True)
        while os.path.lexists(root) and time.monotonic() < deadline:
            time.sleep(0.05)
            shutil.rmtree(root, ignore_errors=True)
        if os.path.lexists(root):
            shutil.rmtree(root)  # says why it cannot go

"""What each benchmark's runs share: a HOME and session store of their own, and a terminal's TERM."""

from __future__ import annotations

import os


def private_environment(root: str, shell: str = "/bin/bash") -> dict[str, str]:
    """An environment whose HOME, TMPDIR and XDG_RUNTIME_DIR are under `root` (created here), so
    that a benchmark's sessions and shells never meet the machine's; no warm process, so that
    each call is measured as it is."""
    runtime = os.path.join(root, "run")
    os.makedirs(runtime, mode=0o700, exist_ok=True)
    passed = {name: os.environ[name] for name in ("PATH", "PYTHONPATH") if name in os.environ}
    return {**passed, "HOME": root, "XDG_RUNTIME_DIR": runtime, "TMPDIR": root, "SHELL": shell,
            "LANG": "C.UTF-8", "TERM": "xterm-256color", "SAFE_RUN_WARM": "0"}

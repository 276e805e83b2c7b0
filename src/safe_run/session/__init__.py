"""Sessions: a command that outlives the call that started it, held by a detached process.

`store` is where sessions live on disk, `holder` the process that owns a session's terminal,
`wire` how callers and holders talk, `client` the caller's side, `keys` what `send --key` types,
`typist` when `send` text may be typed, `orphans` what a killed holder's command left running.
The one thing defined here is the error every part may raise, so that the command line can catch
it without loading the rest.
"""

from __future__ import annotations

from ..core.result import ExitStatus


class SessionError(Exception):
    """A session cannot be used: unknown, malformed, gone, or its directory is not private."""

    def __init__(self, message: str, status: int = ExitStatus.NO_SESSION) -> None:
        super().__init__(message)
        self.status = status

"""Sessions: a command that outlives the call that started it, held by a detached process.

The caller's side: `client` (start a session, ask its holder), `launch` and `forkserver` (how a
holder's process is started), `attach` (a person's terminal joined to a session's), `orphans`
(what a killed holder's command left running). The holder's side, run in the holder's process
(`processes/holder.py`): `holder` (a holder of the right kind, and a one-shot session's),
`holder_base` (what both kinds share), `shell_holder` (a named shell's), `callers` and
`onlookers` (its socket and the people attached), `typist` (when `send` text may be typed),
`adoption`. Both sides: `store` (where sessions live on disk), `wire` (how callers and holders
talk), `keys` (what `send --key` types). The one thing defined here is the error every part may raise, so that the command line can catch
it without loading the rest.
"""

from __future__ import annotations

from ..core.result import ExitStatus


class SessionError(Exception):
    """A session cannot be used: unknown, malformed, gone, or its directory is not private."""

    def __init__(self, message: str, status: int = ExitStatus.NO_SESSION) -> None:
        super().__init__(message)
        self.status = status

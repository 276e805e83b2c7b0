"""The bodies of safe-run's long-lived processes, one module each, and what they share.

`warm` (the warm process), `spare` (its spare child), `warm_call` (a warm call's child), `holder`
(a session's holder, however it was started), `holder_ahead` (a holder forked ahead, waiting),
`fork_server` (the fork server); `forking` (forks and passed descriptors), `caller` (the caller's
place a process takes), `memory` and `title` (what each says of itself in `ps`).
"""

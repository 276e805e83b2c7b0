"""The warm process: a call of the command line handed to a copy of safe-run that has already started.

Most of a call's time is Python starting and importing click and the engine (~0.1 s), not the run.
An agent makes hundreds of calls, so once the same caller has called twice within `SEEN_S`, a
warm process is started for it: it imports everything once, listens on a socket in the user's
private state directory, and forks one child per call. The child takes the caller's descriptors,
directory, environment, signal dispositions and mask, becomes exactly the process the call would
have been, and runs the command line; the caller's process (the client) passes its stop signals
on and exits as the child did.

It is used only where nothing about the caller could make the child differ from the process it
replaces: the client and the warm process must share a context (`context.fingerprint`: user,
groups, capabilities, namespaces, cgroup, limits, umask, CPU set, security labels, seccomp,
interpreter and its settings, safe-run's own files). A caller at a terminal (any of descriptors
0-2 a tty) is never served, nor `mcp` (a long-lived server of its own); in CI none is started,
since a CI job expects its steps to leave no process behind. `SAFE_RUN_WARM=0` turns it off.
A warm process ends after `IDLE_S` without a call, or when its socket or directory is removed.

`client` is the caller's side and imports nothing but C modules, `wire` the request's format;
the warm process itself runs `processes.warm` (its spare child `processes.spare`, each call's
child `processes.warm_call`).
"""

from __future__ import annotations

VARIABLE = "SAFE_RUN_WARM"
OFF = ("0", "off", "no", "false", "never")
# A warm process with no call this long ends.
IDLE_S = 600.0
# A call that finds no warm process starts one when the same context called within this long.
SEEN_S = 600.0

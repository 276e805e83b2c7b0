"""The command line's first words: its verbs, and the options that mean the group itself.

Apart from `cli` (which reads them before click is loaded) and `commands` (which routes them), so
that neither imports the other for them.
"""

RUN = "run"
SERVER_VERB = "mcp"  # its stdout carries the protocol alone
VERBS = (RUN, "poll", "send", "stop", "close", "sessions", "attach", "watch", "doctor", SERVER_VERB)
# Words that mean the group itself rather than a command to run.
GROUP_OPTIONS = ("-h", "--help", "--version")
VERSION_ONLY = ["--version"]

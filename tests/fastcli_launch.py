"""`safe-run` for test runs where a test starts the program itself (an MCP server, the
far side of a prefix): run as `python fastcli_launch.py ARGS...`, it hands its own stdin, stdout,
stderr, arguments, environment and directory to the zygote of `fastcli.py`, which forks a child
that runs them; this process passes its stop signals on and exits as the child did. It loads only
the standard library, so it starts in a few milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

ZYGOTE_VARIABLE = "SAFE_RUN_TEST_ZYGOTE"
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def main() -> None:
    env = dict(os.environ)
    path = env.pop(ZYGOTE_VARIABLE)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    request = {"argv": sys.argv[1:], "env": env, "cwd": os.getcwd()}
    message = json.dumps(request).encode() + b"\n"  # the zygote reads up to the line's end
    sent = socket.send_fds(conn, [message], [0, 1, 2])
    if sent < len(message):  # the rest of a long request; nothing more to send may meet a closed zygote
        conn.sendall(message[sent:])
    replies = conn.makefile("rb")
    child = json.loads(replies.readline())["pid"]

    def forward(signum: int, frame: object) -> None:
        try:
            os.kill(child, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    line = replies.readline()
    status = json.loads(line)["status"] if line else 1 << 8
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main()

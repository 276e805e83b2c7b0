"""What a client sends a warm process: a call, as length-prefixed byte strings.

Bytes rather than JSON: arguments and variables may hold any byte but NUL, and the client must
not pay for importing `json`. A request is `<total>:` followed by items, each `<length>:<bytes>`.
The warm process answers with lines: `ok` (it will run the call once told to), `no <reason>`
(not taken: the client runs the call itself), `run <pid>` (the child started), `exit <wait
status>`. After `ok` the client alone decides: a NUL byte (`GO`) commits the call to the warm
process; closing the connection instead means it runs the call itself, so a call is never run
twice nor lost when the answer comes late. The client sends one byte per stop signal it receives,
the signal's number, for the child.
"""

from __future__ import annotations

from .. import TYPE_CHECKING
if TYPE_CHECKING:
    from collections.abc import Sequence

VERSION = b"safe-run-warm 2"
# The client's commitment after `ok`; no signal has the number 0.
GO = b"\0"
# A request longer than this is refused before it is read: arguments and environment together
# stay far below it (the kernel's own limit on both is 2 MiB by default).
MAX_REQUEST = 16 * 1024 * 1024
# The kernel passes at most this many descriptors in one message.
MAX_DESCRIPTORS = 253


class Call:
    """One call of the command line, as the client's process would have run it."""

    def __init__(
        self, fingerprint: bytes, ignored: int, blocked: int, targets: Sequence[int], argv: Sequence[bytes],
        environ: Sequence[bytes],
    ) -> None:
        self.fingerprint = fingerprint
        self.ignored = ignored  # signal dispositions SIG_IGN, as a mask (bit n-1 for signal n)
        self.blocked = blocked  # the signal mask
        self.targets = list(targets)  # the descriptor number each passed descriptor takes, after the directory
        self.argv = list(argv)
        self.environ = list(environ)  # NAME=VALUE


def encode(call: Call) -> bytes:
    items = [
        VERSION, call.fingerprint, b"%x" % call.ignored, b"%x" % call.blocked,
        b",".join(b"%d" % fd for fd in call.targets), b"%d" % len(call.argv), *call.argv, *call.environ,
    ]
    body = b"".join(b"%d:%s" % (len(item), item) for item in items)
    return b"%d:%s" % (len(body), body)


def request_length(head: bytes) -> int | None:
    """The length of the whole request from its first bytes; None until the prefix is complete."""
    size, colon, _ = head.partition(b":")
    if not colon:
        if len(head) > 12 or not head.isdigit():
            raise ValueError("not a request")
        return None
    if not size.isdigit() or int(size) > MAX_REQUEST:
        raise ValueError("not a request, or too long")
    return len(size) + 1 + int(size)


def decode(data: bytes) -> Call:
    """The call in a complete request; ValueError for anything else."""
    size, _, body = data.partition(b":")
    if int(size) != len(body):
        raise ValueError("truncated request")
    items = _items(body)
    if len(items) < 6 or items[0] != VERSION:
        raise ValueError("another version of the request")
    argc = int(items[5])
    if argc < 0 or 6 + argc > len(items):
        raise ValueError("malformed request")
    targets = [int(fd) for fd in items[4].split(b",")] if items[4] else []
    return Call(items[1], int(items[2], 16), int(items[3], 16), targets, items[6:6 + argc], items[6 + argc:])


def _items(body: bytes) -> list[bytes]:
    items = []
    position = 0
    while position < len(body):
        colon = body.index(b":", position)
        length = int(body[position:colon])
        start = colon + 1
        if length < 0 or start + length > len(body):
            raise ValueError("malformed request")
        items.append(body[start:start + length])
        position = start + length
    return items

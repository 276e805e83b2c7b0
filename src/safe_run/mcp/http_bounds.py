"""What one connection may hold of the MCP HTTP server: its place among the open connections, and
the time until its next request's headers, and its body, are complete.

Runs in: the MCP server over HTTP (`mcp/http.py`), on uvicorn's event loop, in front of uvicorn's own
HTTP protocol (`Guard`) and of the app (`Watched`).

uvicorn bounds neither. It keeps a connection that sends nothing, or half a header a byte at a
time, for as long as the client likes (its keep-alive bound starts only after an answer, and any
byte stops it), and accepts as many as come: each holds a descriptor and some memory, and enough
of them leave the server unable to accept the next client. Here a connection has `header_s`
seconds from its opening, or from the end of its last request, to complete its next request:
uvicorn calls the app once it has the headers, which `Watched` sees, and the clock stops then, or
once the app has read the whole body where one is to come (a body sent a byte at a time held
the connection as long as half a header did), until that request ends. And at most `connections` are open at once: one beyond them is answered 503
and closed as soon as it is accepted, before anything it sent is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # the command line's --help takes the defaults from here, without uvicorn
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

# Ample for a client on the far side of a slow link; a half-header client is cut after it.
HEADER_S = 10.0
# Each call waits in a worker thread (`http.WORKER_THREADS`), and a client may hold a connection
# per call in flight: as many connections as threads.
MAX_CONNECTIONS = 256

Peer = tuple[str, int]


@dataclass(frozen=True)
class Bounds:
    header_s: float = HEADER_S
    connections: int = MAX_CONNECTIONS


def _plain_answer(status: bytes, text: bytes) -> bytes:
    return b"HTTP/1.1 %s\r\ncontent-type: text/plain\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (
        status, len(text), text)


BUSY = _plain_answer(b"503 Service Unavailable", b"too many connections are open: try again once one has closed\n")
TOO_SLOW = _plain_answer(b"408 Request Timeout", b"the request did not come in time\n")


def admits(open_now: int, bounds: Bounds) -> bool:
    """Whether one more connection may be served while `open_now` are."""
    return open_now < bounds.connections


def last_words(heard: bool) -> bytes:
    """What a connection out of time is told before it is closed: a request begun gets a 408; a
    connection that said nothing since its last answer gets nothing, as an idle keep-alive one
    does, since its client may be sending a request at this very moment and would take the 408
    for its answer."""
    return TOO_SLOW if heard else b""


def body_to_come(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request with these headers (as uvicorn hands them, names in lower case) has a body
    to read: a length other than 0, or chunks."""
    for name, value in headers:
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


def peer_of(transport: asyncio.BaseTransport) -> Peer | None:
    """The peer's address and port, as uvicorn names them in a request's scope (`client`)."""
    name = transport.get_extra_info("peername")
    return (str(name[0]), int(name[1])) if isinstance(name, (tuple, list)) and len(name) >= 2 else None


class Book:
    """The connections served now, by their peer's address: what uvicorn names a request's
    `client` in its scope, so that `Watched` finds the connection of a request."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        self._open: set[Guard] = set()
        self._by_peer: dict[Peer, Guard] = {}

    def protocol(self) -> type[asyncio.Protocol]:
        """The protocol class uvicorn is to make for each connection, bound to this book; in front
        of the one uvicorn would have made."""
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        book = self

        class Booked(Guard):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(book, lambda: AutoHTTPProtocol(**kwargs))

        return Booked

    def enter(self, guard: Guard, peer: Peer | None) -> bool:
        """Whether `guard`'s connection is served; if so, it is booked until `leave`."""
        if not admits(len(self._open), self.bounds):
            return False
        self._open.add(guard)
        if peer is not None:
            self._by_peer[peer] = guard
        return True

    def leave(self, guard: Guard, peer: Peer | None) -> None:
        self._open.discard(guard)
        if peer is not None and self._by_peer.get(peer) is guard:
            del self._by_peer[peer]

    def of(self, scope: Scope) -> Guard | None:
        client = scope.get("client")
        return self._by_peer.get((str(client[0]), int(client[1]))) if client else None


class Guard(asyncio.Protocol):
    """One connection: refused beyond the book's bound, else handed to uvicorn's own protocol with
    a clock that runs while no request of it is in the app."""

    def __init__(self, book: Book, served_by: Callable[[], asyncio.Protocol]) -> None:
        self._book = book
        self._served_by = served_by  # uvicorn's protocol, made for a connection served
        self._inner: asyncio.Protocol | None = None  # None: refused, or not yet made
        self._transport: asyncio.Transport | None = None
        self._peer: Peer | None = None
        self._clock: asyncio.TimerHandle | None = None
        self._in_app = 0
        self._heard = False  # bytes came since the clock started

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._peer = peer_of(transport)
        stream = cast(asyncio.Transport, transport)  # a stream server's, as uvicorn's protocol takes too
        if not self._book.enter(self, self._peer):
            stream.write(BUSY)
            stream.close()
            return
        self._transport = stream
        self._inner = self._served_by()
        self._inner.connection_made(transport)
        self._start_clock()

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._heard = True
            self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._inner is None:
            return
        self._stop_clock()
        self._transport = None
        self._book.leave(self, self._peer)
        self._inner.connection_lost(exc)

    def request_started(self, body: bool) -> None:
        """The app has a request of this connection: its headers are complete, and with no `body`
        to come, the request too; else the clock runs on until the body has come (`body_read`)."""
        self._in_app += 1
        if not body:
            self._stop_clock()

    def body_read(self) -> None:
        self._stop_clock()

    def request_ended(self) -> None:
        self._in_app -= 1
        if self._in_app == 0 and self._transport is not None:
            self._start_clock()

    def _start_clock(self) -> None:
        self._stop_clock()
        self._heard = False
        self._clock = asyncio.get_running_loop().call_later(self._book.bounds.header_s, self._out_of_time)

    def _stop_clock(self) -> None:
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None

    def _out_of_time(self) -> None:
        self._clock = None
        if self._transport is not None:
            self._transport.write(last_words(self._heard))
            self._transport.close()


class Watched:
    """The app, each request of which stops its connection's clock while the app has it."""

    def __init__(self, app: ASGIApp, book: Book) -> None:
        self.app = app
        self.book = book

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guard = self.book.of(scope) if scope["type"] == "http" else None
        if guard is None:
            await self.app(scope, receive, send)
            return
        body = body_to_come(scope.get("headers", []))
        guard.request_started(body)
        try:
            await self.app(scope, _reading(receive, guard) if body else receive, send)
        finally:
            guard.request_ended()


def _reading(receive: Receive, guard: Guard) -> Receive:
    """`receive`, telling `guard` once the request's body has all come (or the client has gone)."""
    read = False

    async def watched() -> Message:
        nonlocal read
        message = await receive()
        if not read and (message["type"] != "http.request" or not message.get("more_body", False)):
            read = True
            guard.body_read()
        return message

    return watched

"""A holder's answers to its callers, over real sockets: one too large for its socket goes out whole
while its caller takes it, and a caller that stops taking it is not waited for; a connection the
holder keeps carries the caller's next request, and is closed when the holder ends."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace

from safe_run.core.result import error_result
from safe_run.session import wire
from safe_run.session.callers import Callers, Waiter

LARGE = 3_000_000  # many times a socket's buffer


def answering() -> tuple[Callers, socket.socket, socket.socket]:
    """Callers with one caller waiting for a large answer, already handed over as far as it fits."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    holder_side, caller_side = socket.socketpair()
    holder_side.setblocking(False)
    callers = Callers(listener, time.monotonic)
    result = replace(error_result("seq", "a large answer"), output="x" * LARGE)
    callers.answer(Waiter(holder_side, None), result)
    return callers, holder_side, caller_side


def test_a_large_answer_goes_out_whole_while_its_caller_takes_it() -> None:
    callers, _, caller_side = answering()
    taken: list[dict[str, object] | None] = []
    reader = threading.Thread(target=lambda: taken.append(wire.receive(caller_side, time.monotonic() + 30)))
    reader.start()
    try:
        callers.deliver_while_taken(patience=10.0)
        assert not callers.sending, "all of it went out before the holder went on"
    finally:
        reader.join(30)
        caller_side.close()
        callers.listener.close()
    message = taken[0]
    assert message is not None and message["output"] == "x" * LARGE


def test_a_caller_that_takes_nothing_is_not_waited_for() -> None:
    callers, holder_side, caller_side = answering()
    try:
        callers.deliver_while_taken(patience=0.05)
        assert callers.sending, "the rest goes out later, as the caller takes it"
    finally:
        holder_side.close()
        caller_side.close()
        callers.listener.close()


# ---- a connection kept for the caller's next request ---------------------------------------------


class Holder:
    """Callers on a real listening socket, answering every request at once, keeping the
    connection when `keep` says so; `asked`: the requests it took, with the connection each came on."""

    def __init__(self, keep: bool) -> None:
        # An abstract address: a test's own directory can be longer than a socket's path may be.
        self.address = f"\0safe-run-test-{os.getpid()}-{os.urandom(4).hex()}"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.address)
        self.listener.listen(8)
        self.callers = Callers(self.listener, time.monotonic)
        self.keep = keep
        self.asked: list[tuple[int, wire.Request]] = []

    def handle(self, conn: socket.socket, request: wire.Request) -> None:
        self.asked.append((conn.fileno(), request))
        self.callers.answer_now(conn, error_result("echo", "answered"), keep=self.keep)

    def serve(self, until: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 10
        while not until() and time.monotonic() < deadline:
            self.callers.serve(self.handle, timeout=0.05)


def ask(conn: socket.socket) -> dict[str, object] | None:
    conn.sendall(wire.encode_request(wire.Poll()))
    return wire.receive(conn, time.monotonic() + 10)


def connected(holder: Holder) -> socket.socket:
    caller = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    caller.connect(holder.address)
    caller.settimeout(10)
    return caller


def answered(holder: Holder, caller: socket.socket, asks: int = 1) -> list[dict[str, object] | None]:
    """The answers to `asks` requests the caller sends one after another on its connection, while
    the holder serves them."""
    answers: list[dict[str, object] | None] = []
    taken = len(holder.asked) + asks
    asking = threading.Thread(target=lambda: answers.extend(ask(caller) for _ in range(asks)))
    asking.start()
    holder.serve(until=lambda: len(holder.asked) == taken and not holder.callers.sending)
    asking.join(10)
    return answers


def test_a_kept_connection_carries_the_callers_next_request() -> None:
    holder = Holder(keep=True)
    caller = connected(holder)
    answers = answered(holder, caller, asks=2)
    assert [answer and answer.get(wire.KEPT) for answer in answers] == [True, True]
    assert holder.asked[0][0] == holder.asked[1][0], "both came on the one connection"
    assert not holder.callers.busy, "a kept connection is no caller at work: the shell may idle out"
    caller.close()
    holder.serve(until=lambda: not holder.callers.fds()[1:])
    assert holder.callers.fds() == [holder.listener.fileno()], "closed by its caller, it is let go"
    holder.listener.close()


def test_kept_connections_are_closed_when_the_holder_ends() -> None:
    holder = Holder(keep=True)
    caller = connected(holder)
    answered(holder, caller)
    holder.callers.close_kept(ending=True)
    assert caller.recv(1) == b"", "the caller finds it closed, and connects anew"
    caller.close()
    late = connected(holder)
    answers = answered(holder, late)
    assert answers[0] is not None and wire.KEPT not in answers[0], "an ending holder keeps none"
    assert late.recv(1) == b""
    late.close()
    holder.listener.close()


def test_a_connection_not_kept_is_closed_after_its_answer() -> None:
    holder = Holder(keep=False)
    caller = connected(holder)
    answers = answered(holder, caller)
    assert answers[0] is not None and wire.KEPT not in answers[0]
    assert caller.recv(1) == b""
    caller.close()
    holder.listener.close()

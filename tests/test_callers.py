"""A holder's answers to its callers, over real sockets: one too large for its socket goes out whole
while its caller takes it, and a caller that stops taking it is not waited for."""

from __future__ import annotations

import socket
import threading
import time
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

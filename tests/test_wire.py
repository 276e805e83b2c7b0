"""The messages between a session's callers and its holder: typed, and checked on arrival."""

from __future__ import annotations

import pytest

from safe_run.session import wire


@pytest.mark.parametrize(
    "message",
    [
        wire.Poll(), wire.Poll(wait=2.5, first=True), wire.Send(text="yes\r", keys="\x03", queue=True, wait=0.0),
        wire.Stop(), wire.Interrupt(signal="SIGTERM"), wire.Status(), wire.Close(),
        wire.Run(command="make", wait=20.0, timers={"idle": 0.5, "timeout": None}, max_output=4096, cwd="/tmp",
                 env={"A": "1"}),
        wire.Run(command="ls", wait=3, timers={"idle": 2}, max_output=1024, env=None),
        wire.Poll(about="c2"), wire.Stop(about="c2", why="its client went away"),
        wire.Attach(), wire.Attach(watch=True, rows=1, columns=1000),
    ],
)
def test_every_message_comes_back_as_it_was_sent(message: wire.Request) -> None:
    line = wire.encode_request(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert wire.decode_request(line[:-1]) == message


@pytest.mark.parametrize(
    "line",
    [
        b'{"op": "poll", "wait": "soon"}',  # a field of the wrong type
        b'{"op": "poll", "wait": NaN}',
        b'{"op": "send", "text": 3}',
        b'{"op": "poll", "shell": "/bin/sh"}',  # a field the message does not have
        b'{"op": "run"}',  # a required field missing
        b'{"op": "run", "command": "x", "max_output": 10}',
        b'{"op": "run", "command": "x", "max_output": 1023}',
        b'{"op": "run", "command": "x", "max_output": 4096.0}',
        b'{"op": "run", "command": "x", "max_output": true}',
        b'{"op": "poll", "wait": true}',  # a JSON boolean is no number, whatever Python makes of it
        b'{"op": "poll", "wait": Infinity}',
        b'{"op": "poll", "first": 1}',
        b'{"op": "send", "queue": "yes"}',
        b'{"op": "stop", "why": 3}',
        b'{"op": "interrupt", "signal": null}',
        b'{"op": "attach", "rows": 0}',
        b'{"op": "attach", "columns": 1001}',
        b'{"op": "attach", "rows": 24.0}',
        b'{"op": "attach", "watch": null}',
        b'{"op": "run", "command": null}',
        b'{"op": "run", "command": "x", "cwd": 1}',
        b'{"op": "run", "command": "x", "timers": {"idle": "1"}}',
        b'{"op": "run", "command": "x", "timers": {"idle": false}}',
        b'{"op": "run", "command": "x", "timers": null}',
        b'{"op": "run", "command": "x", "env": {"A": 1}}',
        b'{"op": "run", "command": "x", "env": ["A=1"]}',
        b'{"op": "close", "about": "c1"}',
        b'{"op": "rm -rf"}',  # no such message
        b'{"wait": 1}',
        b'["poll"]',
        b"not json",
    ],
)
def test_anything_else_is_refused_before_it_is_acted_on(line: bytes) -> None:
    assert wire.decode_request(line) is None


def test_a_wait_too_large_for_a_float_is_refused_not_raised() -> None:
    assert wire.decode_request(b'{"op": "poll", "wait": 1' + b"0" * 400 + b"}") is None
    assert wire.decode_request(b'{"op": "poll", "wait": 100000000000000000000}') == wire.Poll(wait=10 ** 20)


def test_a_wait_is_bounded() -> None:
    assert wire.wait_of(wire.Poll(wait=-1)) == 0.0
    assert wire.wait_of(wire.Poll(wait=1e12)) == wire.MAX_WAIT_S
    assert wire.wait_of(wire.Stop()) == 0.0


@pytest.mark.parametrize("kind", ["one-shot", "named shell"])
def test_each_kind_of_holder_has_a_handler_for_every_request(kind: str) -> None:
    """A request the wire accepts and a holder has no entry for would end the holder."""
    from typing import get_args

    from safe_run.session import holder, shell_holder

    table = holder.HANDLERS if kind == "one-shot" else shell_holder.HANDLERS
    assert set(table) == set(get_args(wire.Request))

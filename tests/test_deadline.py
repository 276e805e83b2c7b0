"""One deadline shared by the steps of a stop, on an injected clock."""

from __future__ import annotations

from safe_run.engine.deadline import Deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_each_step_gets_its_share_and_never_more_than_is_left() -> None:
    clock = Clock()
    stop = Deadline(3.0, clock)
    assert stop.share(1.0) == 1.0
    clock.now += 1.0
    assert stop.share(1.5) == 1.5
    clock.now += 1.5
    assert stop.share(2.0) == 0.5, "the last step gets what is left, not its own bound"
    clock.now += 2.0
    assert (stop.left(), stop.share(1.0)) == (0.0, 0.0)


def test_the_steps_that_ran_out_are_named_in_one_line() -> None:
    stop = Deadline(3.0, Clock())
    assert stop.summary() is None
    stop.note("runs in flight not all answered", finished=True)
    assert stop.summary() is None
    stop.note("2 connection shell(s) still closing", finished=False)
    stop.note("the fork server killed", finished=False)
    assert stop.summary() == "stopped within 3 s, cutting short: 2 connection shell(s) still closing; the fork server killed"

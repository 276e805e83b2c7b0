"""The one rule for whether typed keys go to the command (send, attach, a person's terminal),
decided from the tracker's last look alone."""

from __future__ import annotations

import pytest

from safe_run.core.evidence import Observation
from safe_run.core.reading import Reading, reading


def seen(shell_in_foreground: bool = False, waiting: bool = False, canonical: bool = True, echo: bool = True,
         hidden: bool = False, listening: bool = False, keyless: bool = False) -> Observation:
    return Observation(shell_in_foreground, 100, waiting, canonical, "sudo" if hidden else "cat", echo=echo,
                       hidden=hidden, listening=listening, keyless=keyless)


@pytest.mark.parametrize(
    ("observation", "input_wait", "reads"),
    [
        (seen(waiting=True), False, True),  # a program blocked reading the terminal
        (seen(listening=True), False, True),  # an event loop: it takes keys at once
        (seen(), True, False),  # a busy program, whatever the run thought before
        (seen(waiting=True, keyless=True), True, False),  # it waits on the pipe it was given: keys wait
        (seen(True, True), False, False),  # the shell reading: at its prompt, or not yet known
        (seen(True, True), True, True),  # a shell builtin (`read`) in an input wait
        (None, True, True),  # nothing seen: the run's input wait decides
        (None, False, False),
    ],
)
def test_keys_go_to_a_foreground_the_kernel_sees_reading(
    observation: Observation | None, input_wait: bool, reads: bool
) -> None:
    assert reading(observation, input_wait).reading is reads


@pytest.mark.parametrize(
    ("observation", "input_wait", "reads"),
    [
        (seen(hidden=True, echo=False), False, True),  # a password read in line mode: sudo -S, su, passwd
        (seen(hidden=True), True, True),  # the run holds the wait: the screen showed the prompt
        (seen(hidden=True), False, False),  # hidden and nothing known: it may be working (dpkg under sudo)
        (seen(hidden=True, echo=False, canonical=False), False, False),  # raw: a program's own editor
    ],
)
def test_a_program_the_kernel_cannot_see_gets_keys_when_its_wait_is_known(
    observation: Observation, input_wait: bool, reads: bool
) -> None:
    assert reading(observation, input_wait).reading is reads


def test_nothing_is_the_commands_before_its_start_or_after_its_end() -> None:
    assert reading(seen(waiting=True), True, running=False) == Reading(False)


def test_what_reads_is_named_and_an_unknown_terminal_counts_as_line_mode() -> None:
    assert reading(seen(hidden=True, echo=False), False) == Reading(True, True, "sudo", secret=True)
    assert reading(None, True).canonical is True

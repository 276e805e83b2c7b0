"""What a real shell's output becomes in the result: stray C1 bytes and editing along a line."""

from __future__ import annotations

import pytest

from conftest import SafeRun


@pytest.fixture
def bash(safe_run: SafeRun) -> SafeRun:
    safe_run.shell = "bash"
    return safe_run


def test_stray_8_bit_osc_byte_keeps_the_rest_of_the_output(bash: SafeRun) -> None:
    result = bash("--format", "json", "--", r"printf 'a\x9db\nc\n'; echo end").json
    assert result["status"] == "completed"
    assert result["output"] == "a\ufffdb\nc\nend\n"
    assert result["output_truncated"] is False


def test_cursor_back_then_text_overwrites_within_the_line(bash: SafeRun) -> None:
    result = bash("--format", "json", "--", r"printf 'abcdef\033[3Dxy\n'; printf '\r\033[4Cz\n'").json
    assert result["output"] == "abcxyf\n    z\n"


def test_dropped_bytes_are_counted_in_the_units_of_the_output(bash: SafeRun) -> None:
    result = bash("--format", "json", "--max-output", "1024", "--", "seq 1 5000").json
    whole = "".join(f"{n}\n" for n in range(1, 5001))
    dropped = result["output_dropped_bytes"]
    shown = result["output"].replace(f"[... {dropped} bytes of output omitted ...]\n", "")
    assert result["output_truncated"] is True
    # The marker starts its own line, with a newline of its own when the kept head ends mid-line.
    assert len(whole) - dropped - len(shown) in (0, -1)

import json
import random
from pathlib import Path

from safe_run.engine.recording import Recording

PIECES = ["plain ", "héllo", "€", "😀", "\x1b[31m", "\r\n", '"quoted\\', "\x00\x07", "\t"]


def _events(path: Path) -> list[list[object]]:
    header, *events = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(header)["version"] == 2
    return [json.loads(event) for event in events]


def test_events_hold_the_text_whatever_the_reads_cut(tmp_path: Path) -> None:
    """A character cut between two reads is shown whole in the later event; bytes that are no
    UTF-8 become replacement characters; each line is a JSON event, as asciinema reads it."""
    rng = random.Random(7)
    for trial in range(200):
        stream = "".join(rng.choice(PIECES) for _ in range(30)).encode()
        if trial % 3 == 0:
            stream = stream[:10] + b"\xff" + stream[10:]
        cuts = sorted(rng.sample(range(1, len(stream)), 8))
        reads = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)])]
        path = tmp_path / f"{trial}.cast"
        ticks = iter(range(100))
        recording = Recording(path, 80, 24, 1 << 20, clock=lambda: float(next(ticks)))
        for read in reads:
            recording.output(read)
        recording.close()
        events = _events(path)
        assert "".join(str(text) for _, _, text in events) == stream.decode("utf-8", errors="replace")
        assert all(kind == "o" and isinstance(at, float) for at, kind, _ in events)


def test_input_and_output_are_decoded_apart(tmp_path: Path) -> None:
    path = tmp_path / "r.cast"
    recording = Recording(path, 80, 24, 1 << 20)
    euro = "€".encode()
    recording.output(euro[:1])
    recording.input(b"y")
    recording.output(euro[1:])
    recording.close()
    assert [event[1:] for event in _events(path)] == [["i", "y"], ["o", "€"]]

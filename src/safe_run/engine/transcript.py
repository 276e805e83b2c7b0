"""The --log copy of the terminal: kept as it comes, and never the reason a run fails.

The transcript is a convenience beside the result; a disk that fills or a file system that errs
while the command runs must not cost the caller the result. The first failed write ends the
transcript, and the run carries on; the result's message says where the transcript stops.
"""

from __future__ import annotations

from typing import BinaryIO


class Transcript:
    """Writes every chunk in full to `file` until a write fails, then only remembers why."""

    def __init__(self, file: BinaryIO | None) -> None:
        self._file = file
        self.written = 0
        self.problem: str | None = None

    def write(self, data: bytes) -> None:
        if self._file is None or self.problem is not None:
            return
        view = memoryview(data)
        try:
            while view:
                count = self._file.write(view)
                if not count:  # an unbuffered file took nothing: full, and it will stay so
                    raise OSError("the file took no more bytes")
                self.written += count
                view = view[count:]
        except OSError as exc:
            self.problem = (
                f"the --log transcript stops after {self.written} bytes: {exc.strerror or exc}; "
                "the command ran on and this result is complete"
            )
        except ValueError as exc:  # closed under us
            self.problem = f"the --log transcript stops after {self.written} bytes: {exc}"

    def noted(self, message: str | None) -> str | None:
        """`message` with the transcript's problem, if it had one, after it."""
        if self.problem is None:
            return message
        return f"{message}; {self.problem}" if message else self.problem

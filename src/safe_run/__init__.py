"""safe-run: run one command through the user's real shell and report honestly how it ended."""

__version__ = "0.1.0"

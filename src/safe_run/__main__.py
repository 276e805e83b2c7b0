"""`python -m safe_run` is the same as the `safe-run` command."""

from .cli import main

main()

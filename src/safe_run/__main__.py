"""`python -m safe_run` is the same as the `safe-run` command."""

from .cli.main import main

main()

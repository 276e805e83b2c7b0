"""The Python library: `api` (run, Shell, Session) and `remote` (the same through a command prefix)."""

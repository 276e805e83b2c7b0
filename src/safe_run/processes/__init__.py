"""The bodies of safe-run's long-lived processes, one module each, and what they share."""

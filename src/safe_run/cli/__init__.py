"""The command line: its process (`main`), the verbs (`commands/`) and how an answer is written."""

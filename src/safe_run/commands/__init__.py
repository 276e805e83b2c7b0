"""One module per verb of the command line; `cli` puts them together."""

"""`python -m runner`: one module per command group, each a thin layer over lab/ and db/ (runner.cli.main parses
and dispatches)."""

"""What every `python -m runner` command module shares for its arguments (runner.cli, runner.cli_lab,
runner.cli_diff): the usage error the CLI prints as one line, and a job or sweep id as typed."""
from __future__ import annotations

import argparse
import re


class UsageError(Exception):
    """A command-line value is malformed before it reaches the spec (say --arg without '=')."""


def row_id(text: str) -> int:
    """A job or sweep id: a positive integer a database column can hold (not '１', not 10**30)."""
    if not re.fullmatch(r"[0-9]{1,19}", text.strip()) or not 1 <= int(text) < 2**63:
        shown = repr(text[:24]) + ("..." if len(text) > 24 else "")
        raise argparse.ArgumentTypeError(f"{shown} is not a job or sweep id (a positive integer below 2**63)")
    return int(text)

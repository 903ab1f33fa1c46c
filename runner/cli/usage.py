"""What every `python -m runner` command module shares for its arguments (runner.cli.main, runner.cli.sweeps,
runner.cli.diff, runner.cli.advise, runner.cli.work, ...): the usage error the CLI prints as one line, a job or sweep
id, a count, model arguments as typed and the variable naming the model folders when --models-dir is left out."""
from __future__ import annotations

import argparse
import re

from lab.checks import integer

MODELS_ENV = "COMPILE_LAB_MODELS_DIR"  # the model folders of a worker started without --models-dir


class UsageError(Exception):
    """A command-line value is malformed before it reaches the spec (say --arg without '=')."""


def row_id(text: str) -> int:
    """A job or sweep id: a positive integer a database column can hold (not '１', not 10**30)."""
    if not re.fullmatch(r"[0-9]{1,19}", text.strip()) or not 1 <= int(text) < 2**63:
        shown = repr(text[:24]) + ("..." if len(text) > 24 else "")
        raise argparse.ArgumentTypeError(f"{shown} is not a job or sweep id (a positive integer below 2**63)")
    return int(text)


def count(text: str) -> int:
    """A whole number a person types for a count (--max-jobs, --threads): ASCII digits, a few of them."""
    if not re.fullmatch(r"[0-9]{1,9}", text.strip()):
        shown = repr(text[:20]) + ("..." if len(text) > 20 else "")
        raise argparse.ArgumentTypeError(f"{shown} is not a whole number (at most 9 digits)")
    return int(text)


def model_args(pairs: list[str]) -> dict:
    """`--arg NAME=VALUE ...` as the spec's model_args: a value of digits as an integer, any other as text."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise UsageError(f"--arg {pair!r}: expected NAME=VALUE")
        name, value = (x.strip() for x in pair.split("=", 1))
        out[name] = integer(value, f"model_args.{name}") if re.fullmatch(r"-?[0-9]+", value) else value
    return out

"""Counts and id lists as a sentence reads them: "1 job", "2 jobs", "id 10", "ids 10–12"; the CLI and the pages
print them alike."""
from __future__ import annotations

from typing import Iterable


def count(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number it takes: 1 job, 0 jobs, 2,500 jobs."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def ids(numbers: Iterable[int]) -> str:
    """One id as "id 10", a run without gaps as "ids 10–12", anything else listed: "ids 3, 5"."""
    numbers = list(numbers)
    if len(numbers) == 1:
        return f"id {numbers[0]}"
    if len(numbers) > 2 and numbers == list(range(numbers[0], numbers[0] + len(numbers))):
        return f"ids {numbers[0]}–{numbers[-1]}"
    return "ids " + ", ".join(map(str, numbers))

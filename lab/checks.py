"""Checks every way in shares (CLI flags, the dashboard form, JSON from the database): a value is turned into what
the lab stores, or refused with a SpecError that names the field. The three-valued dynamic and the two-valued
fullgraph are read from the names a person types ("none", "true", "false") by `to_value` and written back by
`to_text`."""
from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import fields
from typing import Any, Iterable, Mapping

TRI = {"none": None, "true": True, "false": False}  # torch.compile's dynamic=None/True/False by name
BOOL = {"false": False, "true": True}
MAX_DIGITS = 18  # every count and size here fits in 18 digits, and so in a 64-bit database column
MAX_NAME = 200
_ASCII_INT = re.compile(r"[+-]?[0-9]+")


class SpecError(ValueError):
    """A submitted experiment or sweep is invalid; the message names the offending field."""

    def __init__(self, field_name: str, message: str):
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


def to_value(value: Any, names: dict, where: str):
    """A named value ("none" / "true" / "false", any case) or the value itself, as the Python value."""
    if value is None or isinstance(value, bool):
        if value in names.values():
            return value
    elif isinstance(value, str) and value.strip().lower() in names:
        return names[value.strip().lower()]
    if names is BOOL:
        raise SpecError(where, f"expected true or false, got {value!r}")
    raise SpecError(where, f"unknown value {value!r}; choose one of {', '.join(names)}")


def to_text(value: Any) -> str:
    """None / True / False as "none" / "true" / "false"; anything else as written."""
    if value is None or isinstance(value, bool):
        return {None: "none", True: "true", False: "false"}[value]
    return str(value)


def integer(value: Any, where: str) -> int:
    """A whole number, from an int, a float that is whole or ASCII digits (not '１２', not '1_0'), of at most
    MAX_DIGITS digits."""
    if isinstance(value, bool):
        raise SpecError(where, f"expected an integer, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and _ASCII_INT.fullmatch(value.strip()):  # int() alone also takes '１２' and '1_0'
        digits = len(value.strip().lstrip("+-").lstrip("0"))
        if digits > MAX_DIGITS:  # before int(): Python refuses past 4300 digits, with its own ValueError
            raise SpecError(where, f"a {digits}-digit number is too large")
        value = int(value.strip())
    if isinstance(value, int):
        if abs(value) >= 10 ** MAX_DIGITS:  # not printed: past 4300 digits even str() refuses it
            raise SpecError(where, f"a number of more than {MAX_DIGITS} digits is too large")
        return value
    raise SpecError(where, f"expected an integer, got {value!r}")


def check_text(value: Any, where: str, max_len: int = MAX_NAME, blank_ok: bool = False) -> str:
    """A name a person typed, stripped: text, printable (no control characters: a NUL is refused by
    PostgreSQL and a newline or escape sequence forges lines in logs and terminals), not blank unless
    allowed, and not longer than max_len (cutting it would store a name nobody typed)."""
    if not isinstance(value, str):
        raise SpecError(where, f"expected text, got {type(value).__name__}")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cs") or c in "\u2028\u2029"), None)
    if bad is not None:
        raise SpecError(where, "contains a byte that is not UTF-8" if unicodedata.category(bad) == "Cs" else
                        f"contains the control character U+{ord(bad):04X}; use printable text only")
    text = value.strip()
    if not text and not (blank_ok and not value):
        raise SpecError(where, "is blank; type a name" + (" or leave it empty" if blank_ok else ""))
    if len(text) > max_len:
        raise SpecError(where, f"is {len(text)} characters long; at most {max_len}")
    return text


def choice(value: Any, allowed: Iterable[str], where: str) -> str:
    allowed = tuple(allowed)
    if not isinstance(value, str) or value not in allowed:
        raise SpecError(where, f"unknown value {value!r}; choose one of {', '.join(allowed)}")
    return value


def parse_dynamic(value: Any, where: str = "dynamic") -> bool | None:
    """torch.compile's dynamic=None/True/False from the names none/true/false (or the values)."""
    return to_value(value, TRI, where)


def parse_bool(value: Any, where: str) -> bool:
    return to_value(value, BOOL, where)


def dynamic_name(value: bool | None) -> str:
    return to_text(value)


def dynamic_text(value: Any) -> str:
    """A stored dynamic as the worker reads it: none / true / false; a value it refuses (the job failed on
    it) as written."""
    try:
        return dynamic_name(parse_dynamic(value))
    except SpecError:
        return str(value)


def reject_unknown(cls, d: Mapping, what: str) -> None:
    """Refuse a key of `d` that is no field of the dataclass `cls`, naming it and the known ones."""
    if not isinstance(d, Mapping):
        raise SpecError(what, f"expected an object, got {type(d).__name__}")
    known = {f.name for f in fields(cls)}
    for key in d:
        if key not in known:
            raise SpecError(str(key), f"unknown field in {what}; known fields: {', '.join(sorted(known))}")


_unknown_logged: set = set()


def known_fields(cls, d: Mapping) -> dict:
    """The keys of `d` that are fields of `cls`; the rest are logged, once per class and key set."""
    known = {f.name for f in fields(cls)}
    extra = tuple(sorted(str(k) for k in d if k not in known))
    if extra and (cls.__name__, extra) not in _unknown_logged:
        _unknown_logged.add((cls.__name__, extra))
        logging.getLogger("compile_lab.spec").warning(
            "ignoring %s of %s unknown here: %s (published by a newer worker?)",
            "a field" if len(extra) == 1 else f"{len(extra)} fields", cls.__name__, ", ".join(extra))
    return {k: v for k, v in d.items() if k in known}

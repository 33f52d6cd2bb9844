"""Whole numbers as templates and container environments write them: ASCII digits only, and few enough that no
hostile value costs time or memory to read (Python's ``int`` takes other scripts' digits, and refuses more than 4,300
digits with an exception)."""

from __future__ import annotations

import re

__all__ = ["MAX_DIGITS", "parse_whole_number"]

MAX_DIGITS = 18
"""The most digits a whole number here has: more than any count, size or index a template states."""
_WHOLE_NUMBER = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def parse_whole_number(text: str) -> int | None:
    """``int(text)`` for 1 to :data:`MAX_DIGITS` ASCII digits (white space around them allowed); ``None`` for
    anything else (``"²"``, ``"٣"``, ``"-1"``, ``"1e3"``, ``""``)."""
    match = _WHOLE_NUMBER.fullmatch(text.strip())
    return int(match.group(0)) if match else None

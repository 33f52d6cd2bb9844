"""Text from templates, parameters and servers as a terminal may show it: every control character escaped.

A template's logical id, a parameter's value or a server's answer may hold terminal escape sequences (``ESC [ 2 J``
clears the screen, ``ESC ] 52`` writes the clipboard, ``ESC ] 8`` hides a link), a carriage return that overwrites
what came before on the line, a newline that forges a line of output, or a Unicode bidirectional control that
shows text in another order than it reads. ``neuron-ecs`` passes every such text through :func:`terminal_safe`
before printing it: the character is printed as its escape (``\\x1b``, ``\\r``, ``\\u202e``), so what the reader
sees is what the text holds. Standard library only.
"""

from __future__ import annotations

import unicodedata

__all__ = ["terminal_safe"]

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ESCAPED_CATEGORIES = ("Cc", "Cf", "Zl", "Zp", "Cs")
"""Unicode control (C0, DEL, C1), format (bidirectional controls, zero-width characters), line and paragraph
separators, and lone surrogates."""


def _escape(character: str) -> str:
    if character in _SHORT:
        return _SHORT[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal_safe(text: object, *, limit: int | None = None) -> str:
    """``text`` (``str()`` of any value) with each control, format and separator character replaced by its escape;
    at most ``limit`` characters of ``text`` are kept, ``...`` marking a cut."""
    value = str(text)
    cut = limit is not None and len(value) > limit
    shown = value[:limit] if cut else value
    safe = "".join(_escape(c) if c in _SHORT or unicodedata.category(c) in _ESCAPED_CATEGORIES else c for c in shown)
    return safe + ("..." if cut else "")

"""How every command of ``neuron-ecs`` answers: its exit status, and the text it writes, plain or (on a terminal)
with bold headers and coloured findings, with no control character of a value reaching the terminal raw."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Sequence
from typing import IO, Any

from neuron_constructs.checks.terminal import terminal_safe

__all__ = ["EXIT_AWS_ERROR", "EXIT_CONFLICT", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_AWS_ERROR = 1
EXIT_USAGE = 2
EXIT_CONFLICT = 3


_SGR = re.compile(r"(\x1b\[[0-9;]*m)")
"""A Select Graphic Rendition sequence (bold, a colour, reset): the only escape the command line writes itself."""


class _Output:
    """Plain text, or bold headers and coloured findings on a terminal.

    Once the reader closes the pipe (``| head``), further lines are dropped: the command still
    finishes and returns its exit status. Whatever is written, no control character but the newline reaches the
    stream raw (:func:`~neuron_constructs.checks.terminal.terminal_safe`), nor any escape sequence but the colours
    and bold of :meth:`style` on a terminal; the commands also escape each untrusted value where they print it, so
    that a value cannot forge a line or a colour either.
    """

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream
        self.styled = stream.isatty() and not os.environ.get("NO_COLOR")
        self.closed = False

    def style(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.styled else text

    def line(self, text: str = "") -> None:
        self.write(text + "\n")

    def write(self, text: str) -> None:
        if self.closed:
            return
        try:
            self.stream.write(self.safe(text))
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True

    def safe(self, text: str) -> str:
        """``text`` with every control character but the newline escaped, the colours of :meth:`style` kept on a
        terminal."""
        parts = _SGR.split(text) if self.styled else [text]
        return "".join(
            part if index % 2 else "\n".join(terminal_safe(line) for line in part.split("\n"))
            for index, part in enumerate(parts)
        )

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
        rows = [tuple(terminal_safe(c) for c in r) for r in rows]  # cells hold what AWS, registries, templates said
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
        self.line(self.style("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(), "1"))
        for row in rows:
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _compact(ids: Iterable[str]) -> str:
    """``0-3, 6`` for device ids that are indices; the ids as given otherwise; ``-`` for none."""
    from neuron_constructs.knowledge.devices import device_index, format_index_runs

    ids = list(ids)
    indices = [device_index(i) for i in ids]
    if not ids:
        return "-"
    if any(i is None for i in indices):
        return ", ".join(ids)
    return format_index_runs(i for i in indices if i is not None)


def _print_json(document: Any, out: _Output) -> None:
    out.line(json.dumps(document, indent=2, sort_keys=False))


class _UsageError(ValueError):
    """A usage error found after parsing (exit status 2)."""

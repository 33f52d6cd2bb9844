"""How the library carries a program: its source without docstrings and comments, so that editing them changes no
task definition, job definition or function (a new daemon revision replaces every Managed Instance; a new job
definition revision is a new job).

Standard library only, like the programs themselves, and none of them imports it: it reads their files, it does not
run them.
"""

from __future__ import annotations

import ast
import functools
from importlib import resources

__all__ = ["program_source"]


@functools.cache
def program_source(package: str, filename: str) -> str:
    """The code of ``filename`` in ``package``, for ``python3 -c`` in a container: docstrings and comments dropped, so
    that editing them changes no task or job definition."""
    tree = ast.parse(resources.files(package).joinpath(filename).read_text())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                n
                for n in body
                if not (
                    isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                )
            ]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.unparse(tree) + "\n"

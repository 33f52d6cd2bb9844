"""The complete apps of the pages, synthesized once per text in a test process: the README's and Getting started's
are one text, which ``tests/test_readme.py`` and ``tests/test_docs_examples.py`` share (their tests of it are one
``xdist_group``, so one worker builds it)."""

from __future__ import annotations

import runpy
import tempfile
from functools import cache
from pathlib import Path

GROUP = "readme-app"
"""The ``xdist_group`` of every test that synthesizes a page's complete app."""


@cache
def run_app(code: str) -> Path:
    """``code`` saved as ``app.py`` and run as ``python app.py`` runs it: the cloud assembly it synthesized."""
    with tempfile.TemporaryDirectory(prefix="docs-app-") as directory:
        path = Path(directory) / "app.py"
        path.write_text(code)
        app = runpy.run_path(str(path), run_name="__main__")["app"]
        return Path(app.synth().directory)

"""Sphinx configuration: the guides (Markdown, MyST) and the API reference from the docstrings (autodoc, numpy style).

``make docs`` builds it strictly: a warning - a broken link between pages, a reference to a name that is not
documented, a docstring autodoc cannot read - fails the build.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aws_cdk import Duration
from aws_cdk.aws_lambda import Runtime
from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.ext.autodoc._dynamic import _signatures
from sphinx.ext.napoleon.docstring import NumpyDocstring

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

project = "neuron_constructs"
author = "the neuron_constructs maintainers"
copyright = "2026, the neuron_constructs maintainers"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
napoleon_google_docstring = False
napoleon_custom_sections = [("Attributes", "params_style")]
autodoc_typehints = "description"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
"""Signatures show defaults as the source writes them (``Duration.minutes(30)``), not as reprs."""
autodoc_default_options = {"members": True, "show-inheritance": False}
nitpicky = True
_NO_INVENTORY = (
    # Libraries whose inventories the build does not fetch (it runs offline): their names stay plain text.
    "aws_cdk|constructs|jsii|typing_extensions|botocore|boto3|cfnlint|moto",
    # The standard library's, for the same reason.
    "collections|datetime|enum|inspect|pathlib|subprocess|types|typing",
    # aws-cdk-lib modules as the library imports them (``from aws_cdk import aws_ec2 as ec2``).
    "acm|batch|cloudwatch|ec2|ecs|efs|elbv2|fsx|iam|kms|logs|s3|secretsmanager|sns",
)
nitpick_ignore = [
    ("py:class", "~P"),
    ("py:class", "neuron_constructs.base.arguments.R"),
    ("py:class", "neuron_constructs.base.tree.T"),
    ("py:class", "Duration"),
]
"""The type variables of ``checked``'s and ``kept``'s signatures, and ``Duration`` as an optional parameter's type
(``Duration | None``) names it: aws-cdk-lib's, whose inventory the build does not fetch."""
nitpick_ignore_regex = [("py:.*", rf"({'|'.join(_NO_INVENTORY)})\..*")]
html_theme = "furo"
html_title = "neuron_constructs"


def _public_name(app: Sphinx, env: BuildEnvironment, node: pending_xref, contnode: nodes.Element) -> Any:
    """Resolve a short Python name (``:class:`NeuronCluster```, as the docstrings write them) to the one documented
    object with that name; ambiguous or undocumented names stay missing, and so fail the build."""
    if node.get("refdomain") != "py":
        return None
    domain = env.get_domain("py")
    target = str(node["reftarget"]).lstrip("~.")
    if target.startswith("neuron_constructs.") and target.count(".") == 1:
        target = target.split(".", 1)[1]  # the public face: neuron_constructs.NeuronCluster
    matches = domain.find_obj(  # type: ignore[attr-defined]
        env, node.get("py:module"), node.get("py:class"), target, node["reftype"], 1
    )
    if len(matches) != 1:
        return None
    name, _ = matches[0]
    return domain.resolve_xref(env, node["refdoc"], app.builder, node["reftype"], name, node, contnode)


def _prose_attribute(self: NumpyDocstring) -> tuple[str, list[str]]:
    """Napoleon reads ``type: text`` into an attribute's first line; here an attribute docstring is prose (its type
    is its annotation), so a colon in its first sentence stays text."""
    lines = [self._lines.next(), *self._dedent(self._consume_to_end())]
    return "", self.__class__(lines, self._config).lines()


NumpyDocstring._consume_inline_attribute = _prose_attribute  # type: ignore[method-assign]

# jsii gives every construct class a metaclass ``__call__(cls, *args, **kwargs)``; a class's signature is its
# ``__init__``'s, as autodoc already reads it for enums.
_signatures._METACLASS_CALL_BLACKLIST = _signatures._METACLASS_CALL_BLACKLIST | {"jsii._runtime.JSIIMeta.__call__"}


def _duration(duration: Duration) -> str:
    """A ``Duration`` as the source writes it, in its largest whole unit: ``Duration.minutes(30)``."""
    try:
        ms = duration.to_milliseconds()
    except Exception:  # a token: known at deploy time only
        return "Duration(<token>)"
    for unit, size in (("days", 86_400_000), ("hours", 3_600_000), ("minutes", 60_000), ("seconds", 1000)):
        if ms % size == 0:
            return f"Duration.{unit}({int(ms // size)})"
    return f"Duration.millis({int(ms)})"


# autodoc prints a module constant's value by its repr; jsii objects have none worth reading
# (``<aws_cdk.Duration object>``), so the reference shows them as they are written.
Duration.__repr__ = _duration  # type: ignore[method-assign,assignment]
Runtime.__repr__ = lambda runtime: f"Runtime({runtime.name!r})"  # type: ignore[method-assign,assignment]


def setup(app: Sphinx) -> None:
    app.connect("missing-reference", _public_name)

"""A synthesized CloudWatch dashboard as a picture: each widget where CloudWatch lays it out (a 24-column grid), with
its title and the metrics it plots, as SVG.

``python -m neuron_constructs.tools.dashboard_picture TEMPLATE [--out FILE]`` draws every ``AWS::CloudWatch::Dashboard``
of a template (read within the template reader's bounds, :mod:`neuron_constructs.checks.template_loading`); the docs'
picture of the monitoring dashboard is this command's output for the team app's platform, and a test keeps it so. A
widget's metrics are named as its ``SEARCH`` expressions and metric arrays name them (``MetricName="..."``, or the
array's second element); values known only at deploy time (``Ref``, ``Fn::GetAtt``) are left out of the text. The
picture shows the layout and what each widget plots, never values: there are none before a deploy.

No AWS CDK, no AWS call.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

__all__ = ["COLUMN", "ROW", "dashboards_of", "main", "metric_names", "picture"]

COLUMN = 40
"""Pixels per grid column (CloudWatch's grid is 24 columns wide)."""
ROW = 28
"""Pixels per grid row."""
_HIGHLIGHTED = ("Requests per copy", "What each model's users feel")
"""Widgets the LLM rows add, drawn in the accent colour."""
_METRIC_NAME = re.compile(r'MetricName="([A-Za-z0-9_.:-]+)"')


def _text(parts: Sequence[Any]) -> str:
    return "".join(p if isinstance(p, str) else "…" for p in parts)


def dashboards_of(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each dashboard of ``template`` by logical id: its body as JSON (a ``Fn::Join`` of text and deploy-time values,
    those as ``…``); a body that is not JSON is left out."""
    found: dict[str, dict[str, Any]] = {}
    for logical_id, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, dict) or resource.get("Type") != "AWS::CloudWatch::Dashboard":
            continue
        body = (resource.get("Properties") or {}).get("DashboardBody")
        joined = body.get("Fn::Join") if isinstance(body, dict) else None
        if isinstance(body, str):
            text = body
        elif isinstance(joined, list) and len(joined) == 2 and isinstance(joined[1], list):
            text = _text(joined[1])
        else:
            continue
        try:
            parsed = json.loads(text)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            found[str(logical_id)] = parsed
    return found


def metric_names(widget: Mapping[str, Any]) -> list[str]:
    """The metrics a widget plots, in order, each once."""
    names: list[str] = []
    for entry in (widget.get("properties") or {}).get("metrics") or []:
        if not isinstance(entry, list) or not entry:
            continue
        first = entry[0]
        if isinstance(first, dict) and isinstance(first.get("expression"), str):
            names += _METRIC_NAME.findall(first["expression"])
        elif len(entry) > 1 and isinstance(entry[1], str) and entry[1] != "…":
            names.append(entry[1])
    return list(dict.fromkeys(names))


def _wrapped(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines or [""]


def picture(body: Mapping[str, Any], *, title: str = "") -> str:
    """``body``'s widgets as an SVG document."""
    widgets = [w for w in body.get("widgets") or [] if isinstance(w, dict)]
    bottom = max((int(w.get("y", 0)) + int(w.get("height", 6)) for w in widgets), default=0)
    top = 36 if title else 8
    width, height = 24 * COLUMN + 16, top + bottom * ROW + 8
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="Helvetica, Arial, sans-serif">',
        f'<rect width="{width}" height="{height}" fill="#f4f5f7"/>',
    ]
    if title:
        out.append(f'<text x="8" y="24" font-size="16" font-weight="bold" fill="#16191f">{escape(title)}</text>')
    for widget in widgets:
        x = 8 + int(widget.get("x", 0)) * COLUMN
        y = top + int(widget.get("y", 0)) * ROW
        w = int(widget.get("width", 6)) * COLUMN - 8
        h = int(widget.get("height", 6)) * ROW - 8
        properties = widget.get("properties") or {}
        name = str(properties.get("title") or widget.get("type") or "")
        accent = any(name.startswith(prefix) for prefix in _HIGHLIGHTED)
        out.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="4" fill="#ffffff" '
            f'stroke="{"#d45b07" if accent else "#c6c9cf"}" stroke-width="{2 if accent else 1}"/>'
        )
        for index, line in enumerate(_wrapped(name, max(10, w // 8))[:2]):
            out.append(
                f'<text x="{x + 10}" y="{y + 20 + 16 * index}" font-size="13" font-weight="bold" fill="#16191f">'
                f"{escape(line)}</text>"
            )
        if widget.get("type") == "alarm":
            alarms = len(properties.get("alarms") or [])
            out.append(f'<text x="{x + 10}" y="{y + 56}" font-size="12" fill="#545b64">{alarms} alarms</text>')
            continue
        axis_top, axis_bottom = y + 52, y + h - 14 - 16 * min(3, len(metric_names(widget)))
        out.append(f'<path d="M{x + 14} {axis_top} V{axis_bottom} H{x + w - 12}" fill="none" stroke="#c6c9cf"/>')
        for index, metric in enumerate(metric_names(widget)[:4]):
            column, row = index % 2, index // 2
            mx, my = x + 14 + column * (w // 2), axis_bottom + 18 + 16 * row
            colour = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")[index]
            out.append(f'<rect x="{mx}" y="{my - 9}" width="10" height="10" fill="{colour}"/>')
            out.append(f'<text x="{mx + 14}" y="{my}" font-size="11" fill="#545b64">{escape(metric)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Draw every dashboard of a template (the first one's picture, with ``--out``, to a file)."""
    from neuron_constructs.checks.template_loading import TemplateError, load_template

    parser = argparse.ArgumentParser(prog="python -m neuron_constructs.tools.dashboard_picture")
    parser.add_argument("template", help="a synthesized CloudFormation template (JSON or YAML)")
    parser.add_argument("--out", help="write the SVG here (default: stdout)")
    parser.add_argument("--title", default="", help="a heading above the widgets")
    args = parser.parse_args(argv)
    try:
        template = load_template(Path(args.template)).template
    except (TemplateError, OSError) as error:
        sys.stderr.write(f"dashboard_picture: {args.template}: {error}\n")
        return 2
    dashboards = dashboards_of(template)
    if not dashboards:
        sys.stderr.write(f"dashboard_picture: {args.template} has no CloudWatch dashboard\n")
        return 2
    drawn = picture(next(iter(dashboards.values())), title=args.title)
    if args.out:
        Path(args.out).write_text(drawn)
    else:
        sys.stdout.write(drawn)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A change ``neuron-ecs plan --diff`` read, as a picture: one bar per term of its duration on a shared time axis, the
capacities' refreshes first, then each service's rollout; a term with a start to measure ends in an open, dashed
tail, since the picture never invents the minutes a template does not state. SVG, no AWS CDK, no AWS call."""

from __future__ import annotations

from html import escape

from neuron_constructs.tools.diff_planning import DiffResult

__all__ = ["picture"]

_ROW = 34
_LABEL = 330
_WIDTH = 980


def picture(result: DiffResult, *, title: str = "") -> str:
    """``result``'s duration terms as an SVG timeline."""
    terms = result.duration_terms()
    refreshes = sum(1 for c in result.capacities if c.refreshed)
    refresh_minutes = sum(minutes for _, minutes, _ in terms[:refreshes])
    span = max(result.least_minutes(), 1.0) * 1.4
    scale = (_WIDTH - _LABEL - 40) / span
    top = 40 if title else 12
    height = top + _ROW * (len(terms) + 1) + 24
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-family="Helvetica, Arial, sans-serif">',
        f'<rect width="{_WIDTH}" height="{height}" fill="#ffffff"/>',
    ]
    if title:
        out.append(f'<text x="12" y="26" font-size="16" font-weight="bold" fill="#16191f">{escape(title)}</text>')
    start = 0.0
    for index, (term, minutes, complete) in enumerate(terms):
        y = top + index * _ROW
        begin = start if index < refreshes else refresh_minutes
        x, width = _LABEL + begin * scale, max(2.0, minutes * scale)
        colour = "#d45b07" if index < refreshes else "#1f77b4"
        name = term.split(":", 1)[0]
        shown = name if len(name) <= 46 else "…" + name[-45:]
        out.append(f'<text x="12" y="{y + 20}" font-size="12" fill="#16191f">{escape(shown)}</text>')
        out.append(f'<rect x="{x:.1f}" y="{y + 6}" width="{width:.1f}" height="20" fill="{colour}" rx="2"/>')
        label = f"{minutes:g} min" + ("" if complete else " + to measure")
        after = x + width + (46 if not complete else 6)
        out.append(f'<text x="{after:.1f}" y="{y + 20}" font-size="11" fill="#545b64">{escape(label)}</text>')
        if not complete:
            tail = x + width
            out.append(
                f'<line x1="{tail:.1f}" y1="{y + 16}" x2="{tail + 40:.1f}" y2="{y + 16}" stroke="{colour}" '
                'stroke-width="2" stroke-dasharray="4 3"/>'
            )
        if index < refreshes:
            start += minutes
    axis = top + _ROW * len(terms) + 8
    out.append(f'<line x1="{_LABEL}" y1="{axis}" x2="{_WIDTH - 20}" y2="{axis}" stroke="#c6c9cf"/>')
    step = max(30, int(span / 8 / 30 + 1) * 30)
    for tick in range(0, int(span) + 1, step):
        x = _LABEL + tick * scale
        out.append(f'<line x1="{x:.1f}" y1="{axis}" x2="{x:.1f}" y2="{axis + 5}" stroke="#c6c9cf"/>')
        out.append(
            f'<text x="{x:.1f}" y="{axis + 18}" font-size="10" fill="#545b64" text-anchor="middle">{tick} min</text>'
        )
    out.append("</svg>")
    return "\n".join(out) + "\n"

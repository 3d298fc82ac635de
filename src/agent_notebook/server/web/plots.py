"""Plots drawn on the server as inline SVG (no script, no library): moments per day, and
active tokens per age tier. The data comes from small queries: a count of moment numbers
per day and the sessions' own statistics, never the moments themselves."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup

from ...notebook.facade import Notebook
from .common import Nb
from .render import page

router = APIRouter(include_in_schema=False)
#: Bars of the moments-per-day plot at most (a longer span puts several days in a bar).
BINS = 60
_W, _H, _PAD, _BOTTOM = 640, 220, 36, 48
_CHAR_W = 7.0  # the widest a label's character may be, in the plot's units


def moments_per_day(nb: Notebook, bins: int = BINS) -> tuple[list[tuple[str, float]], int]:
    """Moments recorded per day from the notebook's first activity to its last, and the
    days each bar counts (1 for a span of up to ``bins`` days, more for a longer one)."""
    stats = nb.stats()
    if stats.first_activity is None or stats.last_activity is None:
        return [], 1
    first, last = stats.first_activity, stats.last_activity
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    span = (last - start).days + 1
    width = max(1, -(-span // bins))  # days per bar, rounded up
    counts = []
    for n in range(-(-span // width)):
        since = start + timedelta(days=n * width)
        found = nb.moment_count(since=since, until=since + timedelta(days=width))
        counts.append((since.strftime("%Y-%m-%d"), float(found)))
    return counts, width


def tokens_per_tier(nb: Notebook, now: datetime | None = None) -> list[tuple[str, float]]:
    """Active tokens by the age tiers of the compaction policy, each session's tokens put in
    the tier of its last activity."""
    policy = nb.config.compaction
    when = now or datetime.now(UTC)
    tiers = [
        (f"full (< {policy.full_fidelity_days:g} d)", policy.full_fidelity_days),
        (f"daily (< {policy.weekly_after_days:g} d)", policy.weekly_after_days),
        (f"weekly (< {policy.monthly_after_days:g} d)", policy.monthly_after_days),
        (f"monthly (≥ {policy.monthly_after_days:g} d)", float("inf")),
    ]
    totals = dict.fromkeys((name for name, _ in tiers), 0.0)
    offset = 0
    while batch := nb.sessions(offset, 500):
        offset += len(batch)
        for s in batch:
            age = (when - (s.stats.last_activity or s.started)).total_seconds() / 86400
            name = next(name for name, limit in tiers if age < limit)
            totals[name] += s.stats.tokens
    return list(totals.items())


def bar_chart(points: Sequence[tuple[str, float]], title: str, unit: str) -> Markup:
    """A bar chart of ``points`` as SVG, with a title and a text alternative."""
    if not points:
        return Markup(f'<p class="empty">{escape(title)}: nothing to plot yet.</p>')
    top = max(v for _, v in points) or 1.0
    inner_w, inner_h = _W - 2 * _PAD, _H - _PAD - _BOTTOM
    step = inner_w / len(points)
    bar = max(1.0, step * 0.8)
    # as many labels as fit side by side (11 px text: under 7 px a character), no overlap
    widest = max(len(label) for label, _ in points) * _CHAR_W + 8
    every = max(1, -(-len(points) // max(1, int(inner_w // widest))))
    parts = [
        f'<svg class="plot" viewBox="0 0 {_W} {_H}" role="img" aria-labelledby="t-{id(points)}">',
        f'<title id="t-{id(points)}">{escape(title)}</title>',
        f'<text x="{_PAD}" y="20" class="plot-title">{escape(title)}</text>',
        f'<text x="{_PAD}" y="{_PAD - 2}" class="plot-axis">{top:g} {escape(unit)}</text>',
        f'<line x1="{_PAD}" y1="{_H - _BOTTOM}" x2="{_W - _PAD}" y2="{_H - _BOTTOM}" class="plot-base"/>',
    ]
    for i, (label, value) in enumerate(points):
        h = inner_h * value / top
        x = _PAD + i * step + (step - bar) / 2
        y = _H - _BOTTOM - h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}" class="plot-bar">'
            f"<title>{escape(label)}: {value:g} {escape(unit)}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + bar / 2:.1f}" y="{_H - _BOTTOM + 16}" class="plot-label" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


@router.get("/plots", response_class=HTMLResponse)
def plots(request: Request, nb: Nb) -> HTMLResponse:
    per_day, width = moments_per_day(nb)
    tiers = tokens_per_tier(nb)
    title = "Moments per day" if width == 1 else f"Moments per {width} days"
    return page(
        request,
        "plots.html",
        per_day=bar_chart(per_day, title, "moments"),
        tiers=bar_chart(
            tiers, "Active tokens per age tier (by each session's last activity)", "tokens"
        ),
        per_day_rows=per_day,
        tier_rows=tiers,
    )

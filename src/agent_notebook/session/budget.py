"""Planning cuts that bring a notebook within its token budgets (pure; no I/O).

A plan says, per section, what text stays and what is cut (oldest first); the caller keeps
the cut text somewhere durable first, then writes each section as ``kept`` plus a marker
naming where the cut text went. Markers are measured with a placeholder at least as long as
any reference the caller will write, so the real ones always fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.tokens import TokenCounter
from .sections import SECTIONS, Sections, cut_to_budget, marker, render

#: Stands in for a real reference while measuring; callers whose references may be longer
#: pass their own placeholder.
PLACEHOLDER_REFERENCE = "moment m_99999999999999"


@dataclass(slots=True)
class SectionCut:
    kept: str
    removed: str


def marker_tokens(counter: TokenCounter, placeholder: str = PLACEHOLDER_REFERENCE) -> int:
    return counter.count("\n" + marker(placeholder))


def plan_section_cut(
    text: str,
    max_tokens: int,
    counter: TokenCounter,
    previous: SectionCut | None = None,
    placeholder: str = PLACEHOLDER_REFERENCE,
) -> SectionCut | None:
    """Cut ``text`` to ``max_tokens`` including its marker; ``None`` when it already fits.
    With ``previous`` (an earlier cut of the same section in this plan), cut from what that
    kept and add to what it removed."""
    base = previous.kept if previous is not None else text
    if previous is None and counter.count(text) <= max_tokens:
        return None
    # Cut to a quarter below the limit, so a section that grows a little each update is not
    # condensed (one more moment) on every update.
    target = max(marker_tokens(counter, placeholder), max_tokens * 3 // 4)
    cut = cut_to_budget(base, target, counter, marker_tokens(counter, placeholder))
    if previous is not None and not cut.removed:
        return previous
    return SectionCut(kept=cut.kept, removed=(previous.removed if previous else "") + cut.removed)


def with_marker(kept: str, reference: str) -> str:
    return f"{kept}\n{marker(reference)}" if kept else marker(reference)


def plan_budget(
    sections: Sections,
    max_section_tokens: int,
    max_total_tokens: int,
    counter: TokenCounter,
    placeholder: str = PLACEHOLDER_REFERENCE,
) -> dict[str, SectionCut]:
    """Cuts that bring every section within ``max_section_tokens`` and the whole rendered
    notebook within ``max_total_tokens``, condensing the largest sections first."""
    cuts: dict[str, SectionCut] = {}
    work = dict(sections)
    for name in SECTIONS:
        cut = plan_section_cut(work[name], max_section_tokens, counter, placeholder=placeholder)
        if cut is not None:
            cuts[name] = cut
            work[name] = with_marker(cut.kept, placeholder)
    floor = marker_tokens(counter, placeholder)
    while (excess := counter.count(render(work)) - max_total_tokens) > 0:
        name = max(SECTIONS, key=lambda n: (counter.count(work[n]), -list(SECTIONS).index(n)))
        size = counter.count(work[name])
        if size <= floor:  # nothing left to cut: the headers alone exceed the total
            break
        target = max(floor, size - excess)
        cut = plan_section_cut(work[name], target, counter, cuts.get(name), placeholder)
        if cut is None or cut is cuts.get(name):
            break
        cuts[name] = cut
        work[name] = with_marker(cut.kept, placeholder)
    return cuts

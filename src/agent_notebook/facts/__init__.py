"""Facts that stay true, read from the conversation by rules, with no model (issue 30):
decisions and open threads, repeats, updates that end an earlier fact (supersession),
contradictions and expiry. Pure: no I/O; the notebook applies it on record
(:mod:`agent_notebook.notebook.facts`).

:class:`FactEngine` takes :class:`Statement` s in the order said and returns
:class:`Findings` for each; the rules live in :mod:`.threads` (decisions, pending items),
:mod:`.claims` (subject, attribute, value), :mod:`.relate` (repeat, supersession,
contradiction) and :mod:`.expiry`.
"""

from .engine import (
    Closure,
    FactEngine,
    FactLink,
    FactRules,
    Findings,
    FoundDecision,
    FoundPending,
    Relation,
    Statement,
)

__all__ = [
    "Closure",
    "FactEngine",
    "FactLink",
    "FactRules",
    "Findings",
    "FoundDecision",
    "FoundPending",
    "Relation",
    "Statement",
]

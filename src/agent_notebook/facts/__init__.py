"""Facts that stay true, read from the conversation by rules, with no model (issue 30):
decisions and open threads, repeats, updates that end an earlier fact (supersession),
contradictions and expiry. Pure: no I/O; the notebook applies it on record
(:mod:`agent_notebook.notebook.facts`).

:class:`FactEngine` takes :class:`Statement` s in the order said and returns
:class:`Findings` for each; the rules live in :mod:`.threads` (decisions, pending items),
:mod:`.claims` (subject, attribute, value), :mod:`.relate` (repeat, supersession,
contradiction), :mod:`.quantities` (values that change) and :mod:`.expiry`; a
:class:`FactJudge` (:mod:`.judge`: the rules alone, or a chat model) may confirm or change
the links they propose.
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
from .judge import FactJudge, LlmJudge, RuleJudge, Verdict

__all__ = [
    "Closure",
    "FactEngine",
    "FactJudge",
    "FactLink",
    "FactRules",
    "Findings",
    "FoundDecision",
    "FoundPending",
    "LlmJudge",
    "Relation",
    "RuleJudge",
    "Statement",
    "Verdict",
]

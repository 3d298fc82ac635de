"""What a guest token may read, as its owner set it (``token create --guest NAME --session
… --concept … --since … --until … --max-budget …``): the sessions, the concepts, a time
window and a token budget per call. The facade's slice (``Notebook.slice(scope=…)``) reads
nothing outside it, for HTTP, MCP and the web page alike. An empty field does not narrow."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..model import SessionId, UtcTime, normalize_concept

#: A slice's largest budget (``search.slice.MAX_SLICE_TOKENS``; privacy may not import search).
MAX_BUDGET = 262_144


class GuestScope(BaseModel):
    """A guest token's scope. A moment is in it when its session is one of ``sessions``, it
    holds one of ``concepts`` and its time is in ``[since, until]`` (each when given); a
    session's task, pending item or decision when its session is in ``sessions``, its time
    in the window and its text names one of ``concepts``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sessions: tuple[SessionId, ...] = ()
    concepts: tuple[str, ...] = ()
    since: UtcTime | None = None
    until: UtcTime | None = None
    max_budget_tokens: int | None = Field(None, ge=1, le=MAX_BUDGET)

    @model_validator(mode="after")
    def _normalized(self) -> GuestScope:
        concepts = tuple(sorted({normalize_concept(c) for c in self.concepts} - {""}))
        object.__setattr__(self, "concepts", concepts)
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError(f"since ({self.since}) is after until ({self.until})")
        return self

    @property
    def narrows(self) -> bool:
        return bool(self.sessions or self.concepts or self.since or self.until)

    def admits_time(self, when: datetime) -> bool:
        return (self.since is None or when >= self.since) and (
            self.until is None or when <= self.until
        )

    def admits_text(self, text: str) -> bool:
        """Whether ``text`` names one of the concepts (any case), or there are none."""
        if not self.concepts:
            return True
        folded = normalize_concept(text)
        return any(concept in folded for concept in self.concepts)

    def describe(self) -> str:
        """One line for the token list: ``sessions s_…; concepts lyon; since …; budget 2000``."""
        parts = []
        if self.sessions:
            parts.append("sessions " + ", ".join(self.sessions))
        if self.concepts:
            parts.append("concepts " + ", ".join(self.concepts))
        if self.since is not None:
            parts.append(f"since {self.since.isoformat()}")
        if self.until is not None:
            parts.append(f"until {self.until.isoformat()}")
        if self.max_budget_tokens is not None:
            parts.append(f"budget {self.max_budget_tokens}")
        return "; ".join(parts) or "everything"

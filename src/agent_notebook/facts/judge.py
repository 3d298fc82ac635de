"""A judge of two statements: does the later one end the earlier (an update), contradict it,
or neither? The rules propose; a judge confirms, rejects or changes what they propose, and
may be asked about a pair the rules only suspect (a value changed with no update cue).

* :class:`RuleJudge` (the default, offline): what the rules propose stands; a suspicion
  stays one.
* :class:`LlmJudge`: asks a chat model (``langchain_core``) with one short prompt per pair and
  reads one word back (``update`` / ``conflict`` / ``none``); on a model error or an answer
  it cannot read, the rules' proposal stands (``last_fallback_reason`` says why).

Set one on a notebook with ``notebook.facts.judge = LlmJudge(model)``: the engines made
after that use it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["FactJudge", "LlmJudge", "RuleJudge", "Verdict"]

#: What a judge says of (earlier, later): the later ends the earlier, they cannot both
#: hold, or neither.
Verdict = Literal["superseded_by", "conflicts_with", "none"]

MAX_STATEMENT_CHARS: Final = 1200
_PROMPT: Final = """Two statements from one conversation, by the same speaker, in the order said.

EARLIER: {earlier}

LATER: {later}

Does the LATER statement update the EARLIER one (a new value for the same thing, so the
earlier no longer holds), contradict it (both cannot be true, and the later does not say it
changed), or neither (different things, both can hold)?
Answer with one word: update, conflict or none."""
_WORDS: Final = {"update": "superseded_by", "conflict": "conflicts_with", "none": "none"}
_THINK: Final = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)


@runtime_checkable
class FactJudge(Protocol):
    name: str

    def judge(self, earlier: str, later: str, proposed: Verdict) -> Verdict:
        """The relation of ``later`` to ``earlier``; ``proposed`` is what the rules found
        (``none`` for a pair they only suspect)."""
        ...


class RuleJudge:
    """The rules alone: what they propose stands."""

    name = "rules"

    def judge(self, earlier: str, later: str, proposed: Verdict) -> Verdict:
        return proposed


class LlmJudge:
    """A chat model confirms or changes what the rules propose."""

    name = "llm"

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model
        self.last_fallback_reason = ""

    def judge(self, earlier: str, later: str, proposed: Verdict) -> Verdict:
        from langchain_core.messages import HumanMessage

        prompt = _PROMPT.format(earlier=_short(earlier), later=_short(later))
        try:
            answer = self.model.invoke([HumanMessage(prompt)])
        except Exception as err:  # noqa: BLE001 - any model failure: the rules' word stands
            self.last_fallback_reason = f"the model failed: {type(err).__name__}: {err}"
            return proposed
        text = _THINK.sub(" ", str(answer.text)).strip().casefold()
        word = next((w for w in re.findall(r"[a-z]+", text) if w in _WORDS), None)
        if word is None:
            self.last_fallback_reason = f"no update/conflict/none in the answer {text[:80]!r}"
            return proposed
        self.last_fallback_reason = ""
        verdict: Verdict = _WORDS[word]  # type: ignore[assignment]
        return verdict


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_STATEMENT_CHARS else flat[: MAX_STATEMENT_CHARS - 1] + "…"

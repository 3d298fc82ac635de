"""Summarizers behind one protocol: compaction folds the messages that leave a thread into its
condensed history (``previous``; ``guidance`` is the session notebook), the age policy rolls
moments up.

* :class:`ExtractiveSummarizer` (no model) picks sentences greedily for coverage of the
  sources' identifiers, named things and concepts (:mod:`agent_notebook.core.enrich`) per token,
  skipping sentences mostly covered already, and writes them in source order, one line per
  source text, after ``previous`` (trimmed from its oldest end when the new lines need the
  room; they get at least half of ``max_tokens``). Deterministic.
* :class:`LlmSummarizer` asks a chat model, strips ``<think>`` blocks, and on a model error or
  an empty answer falls back (extractive by default), saying why in ``last_fallback_reason``.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Final, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ..core.enrich import STOPWORDS, enrich, identifiers
from ..core.tokens import DEFAULT_COUNTER, TokenCounter
from ..errors import InvalidInput, SummaryFailed

__all__ = [
    "ExtractiveSummarizer",
    "LlmSummarizer",
    "Summarizer",
    "SummaryFailed",
    "build_prompt",
    "messages_as_texts",
    "strip_think",
    "trim_oldest",
]

MAX_SOURCE_CHARS: Final = 4000  # longer source texts keep their start and end in a prompt
MAX_PROMPT_IDENTIFIERS: Final = 60
NOVELTY: Final = 0.5  # a sentence is picked only if at least this share of its weight is new
UNITS_KEPT: Final = 4096  # sentences whose units a summarizer keeps (see prepare)
_SENTENCE_END: Final = re.compile(r"(?<=[.!?…])\s+(?=\S)|\s*\n+\s*")
_ROLE: Final = re.compile(r"(?:user|assistant|system|tool result(?: \(error\))?): ")
_WORD: Final = re.compile(r"[^\W\d_][\w'-]{2,}")
_THINK: Final = re.compile(r"<think>.*?(?:</think>|\Z)", re.S | re.I)
_ROLES: Final = ((HumanMessage, "user"), (AIMessage, "assistant"), (ToolMessage, "tool result"))


@runtime_checkable
class Summarizer(Protocol):
    name: str

    def summarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str: ...

    async def asummarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str: ...


def messages_as_texts(messages: Sequence[BaseMessage]) -> list[str]:
    """``user: …``, ``assistant: …``, ``assistant called tool({args})``, ``tool result: …`` or
    ``tool result (error): …``, ``system: …``; empty texts left out."""
    texts: list[str] = []
    for m in messages:
        text = str(m.text).strip()
        role = next((r for kind, r in _ROLES if isinstance(m, kind)), m.type)
        role += " (error)" if isinstance(m, ToolMessage) and m.status == "error" else ""
        if text:
            texts.append(f"{role}: {text}")
        for call in m.tool_calls if isinstance(m, AIMessage) else []:
            args = json.dumps(call["args"], ensure_ascii=False, default=str)
            texts.append(f"assistant called {call['name']}({args})")
    return texts


def _clip(text: str, max_tokens: int, counter: TokenCounter, *, keep_end: bool = False) -> str:
    """``text`` cut (at a word) to fit ``max_tokens``: its start kept, or its end."""
    if counter.count(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # the longest piece that fits, by bisection on its length
    while low < high:
        mid = (low + high + 1) // 2
        piece = text[len(text) - mid :] if keep_end else text[:mid]
        fits = counter.count("…" + piece if keep_end else piece + "…") <= max_tokens
        low, high = (mid, high) if fits else (low, mid - 1)
    piece = text[len(text) - low :] if keep_end else text[:low]
    space = piece.find(" ", 1) if keep_end else piece.rfind(" ", 0, len(piece) - 1)
    if space > 0 and (space < len(piece) // 2 if keep_end else space > len(piece) // 2):
        piece = piece[space:].lstrip() if keep_end else piece[:space].rstrip()  # at a word
    return ("…" + piece if keep_end else piece + "…") if piece.strip() else ""


def trim_oldest(text: str, max_tokens: int, counter: TokenCounter = DEFAULT_COUNTER) -> str:
    """``text`` within ``max_tokens``: whole lines, then words, dropped from its start."""
    lines = text.strip().splitlines()
    while lines and counter.count("\n".join(lines)) > max_tokens:
        if len(lines) == 1:
            return _clip(lines[0], max_tokens, counter, keep_end=True)
        lines.pop(0)
    return "\n".join(lines)


class ExtractiveSummarizer:
    """Sentences picked for coverage and novelty, no model (see the module doc)."""

    name = "extractive"

    def __init__(self, counter: TokenCounter = DEFAULT_COUNTER) -> None:
        self.counter = counter
        # Sentence -> its units (:func:`_units`, a pure function of the sentence), newest
        # last, at most UNITS_KEPT: filled by :meth:`prepare` and by :meth:`pick`.
        self._units: dict[str, tuple[dict[str, float], float]] = {}
        self._units_lock = threading.Lock()
        #: How many sentences :meth:`pick` has had to analyse itself (not found prepared).
        self.units_made = 0

    def prepare(self, texts: Sequence[str]) -> None:
        """Analyse the sentences of ``texts`` now, for a later :meth:`summarize` of them:
        the chat graph prepares a turn's messages after the turn, so that the turn that
        folds them into the condensed history does not analyse them then. The result is
        the same either way."""
        for text in texts:
            for _, units_of in _sentences(text, None, self.counter):
                self._units_of(units_of, count=False)

    def _units_of(self, text: str, *, count: bool = True) -> tuple[dict[str, float], float]:
        with self._units_lock:
            found = self._units.get(text)
        if found is not None:
            return found
        found = _units(text)
        with self._units_lock:
            if count:
                self.units_made += 1
            self._units[text] = found
            while len(self._units) > UNITS_KEPT:
                del self._units[next(iter(self._units))]
        return found

    async def asummarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str:
        return self.summarize(texts, previous=previous, guidance=guidance, max_tokens=max_tokens)

    def summarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str:
        """``guidance`` is for models; picking sentences needs none."""
        _check(max_tokens)
        count = self.counter.count
        previous = previous.strip()
        room = max_tokens - min(count(previous), max_tokens // 2) - (1 if previous else 0)
        new = "\n".join(line for _, line in self.pick(texts, max(room, 0)))
        left = max_tokens - count(new) - 1 if new else max_tokens
        old = trim_oldest(previous, left, self.counter)
        joined = "\n".join(part for part in (old, new) if part)
        return joined if count(joined) <= max_tokens else new  # a counter that is not additive

    def pick(self, texts: Sequence[str], max_tokens: int) -> list[tuple[int, str]]:
        """One line per source text that has picked sentences, in source order, with the
        index of its text (for a caller that labels lines by their source)."""
        count = self.counter.count
        sentences: list[tuple[int, str, str, dict[str, float], float]] = []
        weight: dict[str, float] = {}
        texts_with: Counter[str] = Counter()  # unit -> how many texts hold it
        for t, text in enumerate(texts):
            role = m.group(0) if (m := _ROLE.match(text)) else ""
            here: set[str] = set()
            for s, (sentence, units_of) in enumerate(_sentences(text, max_tokens, self.counter)):
                units, value = self._units_of(units_of)
                weight.update({u: weight.get(u, 0.0) + w for u, w in units.items()})
                here.update(units)
                sentences.append((t, "" if s == 0 else role, sentence, units, value))
            texts_with.update(here)
        for u in weight:  # recurring units weigh more, but one in every text says nothing
            weight[u] *= math.log((len(texts) + 1) / texts_with[u])
        covered: set[str] = set()
        totals = [sum(units.values()) for *_, units, _ in sentences]
        sizes = [count(role + sentence) + 1 for _, role, sentence, *_ in sentences]
        candidates = [c for c in range(len(sentences)) if totals[c]]
        holding: dict[str, list[int]] = {}  # unit -> the candidates whose sentence has it
        for c in candidates:
            for u in sentences[c][3]:
                holding.setdefault(u, []).append(c)
        scores: dict[int, float] = {}
        stale = set(candidates)  # candidates whose score coverage may have changed
        picked: list[int] = []
        used = 0
        while candidates and used < max_tokens:
            for c in candidates:  # novelty only falls as coverage grows: drop the stale ones
                if c not in stale:  # none of its units was covered since it was scored
                    continue
                new = {u: w for u, w in sentences[c][3].items() if u not in covered}
                if sum(new.values()) >= NOVELTY * totals[c]:  # gain: units weighed by recurrence
                    gain = sum(weight[u] for u in new) * (0.5 + sentences[c][4])
                    scores[c] = gain / sizes[c] ** 0.5
                else:
                    scores.pop(c, None)
            stale.clear()
            if not scores:
                break
            best = max(scores, key=lambda c: (scores[c], -c))
            del scores[best]
            candidates = list(scores)
            if used + sizes[best] <= max_tokens:
                picked.append(best)
                used += sizes[best]
                for u in sentences[best][3]:
                    if u not in covered:
                        covered.add(u)
                        stale.update(holding[u])
        lines: dict[int, list[str]] = {}
        for c in sorted(picked):
            t, role, sentence, *_ = sentences[c]
            part = sentence if t in lines else role + sentence  # a later sentence names its role
            lines.setdefault(t, []).append(part)
        out = [(t, " ".join(parts)) for t, parts in sorted(lines.items())]
        while out and count("\n".join(line for _, line in out)) > max_tokens:  # not additive
            out.pop()
        return out


def _sentences(
    text: str, max_tokens: int | None, counter: TokenCounter
) -> Iterator[tuple[str, str]]:
    """The sentences of ``text`` as :meth:`ExtractiveSummarizer.pick` takes them (each cut
    to a third of ``max_tokens``, when given), each with the text its units are made of
    (the first one without its role prefix)."""
    role = m.group(0) if (m := _ROLE.match(text)) else ""
    for s, sentence in enumerate(p for p in _SENTENCE_END.split(text.strip()) if p):
        if max_tokens is not None:
            sentence = _clip(sentence, max(8, max_tokens // 3), counter)
        yield sentence, sentence.removeprefix(role) if s == 0 else sentence


def _units(sentence: str) -> tuple[dict[str, float], float]:
    """What a sentence covers (code-like identifiers weigh most, then names and concepts, then
    other words), and its importance."""
    found = enrich(sentence)
    units = {w: 0.25 for w in map(str.casefold, _WORD.findall(sentence)) if w not in STOPWORDS}
    units.update((c, 1.0) for c in found.concepts)
    units.update((k, 1.0 if k.replace(" ", "").isalpha() else 2.0) for k in found.retrieval_keys)
    return units, found.importance


def _check(max_tokens: int) -> None:
    if max_tokens < 1:
        raise InvalidInput(f"max_tokens must be 1 or more, not {max_tokens}")


def strip_think(text: str) -> str:
    """The answer without ``<think>…</think>`` blocks (closed or not, opened or not)."""
    return _THINK.sub("", text).rsplit("</think>", 1)[-1].strip()


_INSTRUCTIONS: Final = """\
You keep the condensed history of a conversation: a short record of what was asked, done, \
found and decided, which replaces messages that no longer fit the live context.

Rules:
- Merge the old condensed history and the new material into one updated history. Keep what \
still matters from the old one; add what the new material brings; drop chit-chat.
- Copy identifiers verbatim: file paths and line numbers, function, class and module names, \
ids, names, numbers, dates, commands and error messages. Never paraphrase or renumber them.
- Say who asked or did what (the user, the assistant, a tool) and which problems are still open.
- Plain lines or bullets, oldest first. Answer with the history only, no preamble."""


def build_prompt(
    texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
) -> list[BaseMessage]:
    """The messages to send: the rules, then the context, the old history and the new
    material, with the identifiers to keep."""
    half = MAX_SOURCE_CHARS // 2
    sources = [t if len(t) <= 2 * half else f"{t[:half]} […] {t[-half:]}" for t in texts]
    keys = list(dict.fromkeys(k for t in sources for k in identifiers(t)))[:MAX_PROMPT_IDENTIFIERS]
    parts = [
        f"Context (for reference; do not copy it whole):\n\n{guidance.strip()}"
        * bool(guidance.strip()),
        f"The old condensed history:\n\n{previous.strip() or '(empty)'}",
        "The new material:\n\n" + "\n\n".join(sources),
        f"Identifiers to keep verbatim: {', '.join(keys)}" * bool(keys),
        f"Write the updated condensed history in at most about {max_tokens * 3 // 4} tokens "
        f"(roughly {max_tokens // 2} words).",
    ]
    return [SystemMessage(_INSTRUCTIONS), HumanMessage("\n\n".join(p for p in parts if p))]


class LlmSummarizer:
    """A chat model summarizes; on failure the fallback does (see the module doc). Answers
    longer than ``max_tokens`` are cut at the end, as a model's own limit would cut them."""

    name = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        fallback: Summarizer | None = ExtractiveSummarizer(),
        *,
        counter: TokenCounter = DEFAULT_COUNTER,
    ) -> None:
        self.model, self.fallback, self.counter = model, fallback, counter
        self.last_fallback_reason: str | None = None  # why the last call fell back, if it did

    def summarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str:
        if isinstance(prompt := self._prompt(texts, previous, guidance, max_tokens), str):
            return prompt
        try:
            reply: BaseMessage | Exception = self.model.invoke(prompt)
        except Exception as err:  # noqa: BLE001 - any model failure means the fallback
            reply = err
        if isinstance(answer := self._answer(reply, max_tokens), str):
            return answer
        return answer.summarize(texts, previous=previous, guidance=guidance, max_tokens=max_tokens)

    async def asummarize(
        self, texts: Sequence[str], *, previous: str = "", guidance: str = "", max_tokens: int = 400
    ) -> str:
        if isinstance(prompt := self._prompt(texts, previous, guidance, max_tokens), str):
            return prompt
        try:
            reply: BaseMessage | Exception = await self.model.ainvoke(prompt)
        except Exception as err:  # noqa: BLE001 - any model failure means the fallback
            reply = err
        if isinstance(answer := self._answer(reply, max_tokens), str):
            return answer
        return await answer.asummarize(
            texts, previous=previous, guidance=guidance, max_tokens=max_tokens
        )

    def _prompt(
        self, texts: Sequence[str], previous: str, guidance: str, max_tokens: int
    ) -> list[BaseMessage] | str:
        """The prompt, or the answer when there is nothing new to fold in."""
        _check(max_tokens)
        self.last_fallback_reason = None
        if not any(t.strip() for t in texts):
            return trim_oldest(previous, max_tokens, self.counter)
        return build_prompt(texts, previous=previous, guidance=guidance, max_tokens=max_tokens)

    def _answer(self, reply: BaseMessage | Exception, max_tokens: int) -> str | Summarizer:
        """The summary from the model's reply, or the summarizer to ask instead."""
        if isinstance(reply, Exception):
            reason = f"the model call failed: {type(reply).__name__}: {reply}"
        elif text := strip_think(str(reply.text)):
            return _clip(text, max_tokens, self.counter)
        else:
            reason = "the model gave an empty answer"
        if self.fallback is None:
            cause = reply if isinstance(reply, Exception) else None
            raise SummaryFailed(f"the llm summarizer got no summary: {reason}") from cause
        self.last_fallback_reason = f"{reason}; used the {self.fallback.name} summarizer"
        return self.fallback

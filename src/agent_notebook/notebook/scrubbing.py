"""Matching redacted texts wherever they were copied: :class:`Scrubber` takes each
:class:`Secret` (a redacted moment's text) and each forgotten concept out of strings, records
and JSON-like values (LangChain messages too), as :mod:`.redaction` describes: a text goes
where it appears whole or as any of its sentences of :data:`MIN_WORDS` words or more, and a
line that still shares a run of :data:`RUN_WORDS` words with it is replaced whole.

A forgotten concept is matched as search matches words (:class:`ConceptMatch`): by their
Porter stems (``peanuts`` is ``peanut``), an adjective in -ic or -ical also by its noun in -y
(``allergic`` is ``allergy``), and a text matches only when it holds *all* the concept's
words (short function words such as "the" or "my" aside), in any order and place: forgetting
is destructive, and one word alone ("peanut butter" for "peanut allergy") is not the concept.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ..core.lexical import stem, tokenize
from ..model import Moment, is_free_text

__all__ = [
    "FORGOTTEN",
    "MIN_WORDS",
    "RUN_WORDS",
    "ConceptMatch",
    "Scrubber",
    "Secret",
    "secret_of",
    "word_forms",
    "words_of",
]

#: A sentence of this many words or more is removed wherever it appears verbatim.
MIN_WORDS: Final = 4
#: A line sharing this many consecutive words with a redacted text is replaced whole.
RUN_WORDS: Final = 6
#: What replaces a line that mentions a forgotten concept.
FORGOTTEN: Final = "[redacted]"
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
_WORD = re.compile(r"\w+")
#: Words a concept's match neither needs nor redacts: they say nothing of what it is about.
_FUNCTION_WORDS: Final = frozenset(
    _WORD.findall("a an the of to in on at for from by with and or my our your his her their its s")
)


def words_of(text: str) -> list[str]:
    """The words of ``text``, case folded."""
    return _WORD.findall(text.casefold())


def _fragments(text: str) -> list[str]:
    """The pieces of ``text`` removed wherever they appear verbatim, longest first."""
    pieces = [text.strip(), *(s.strip() for s in _SENTENCE_END.split(text))]
    found = {p for p in pieces if len(words_of(p)) >= MIN_WORDS}
    return sorted(found, key=len, reverse=True)


def _runs(text: str) -> set[tuple[str, ...]]:
    """Word runs of ``text`` whose presence in a line gives it away."""
    words = words_of(text)
    if len(words) < MIN_WORDS:
        return set()
    size = min(RUN_WORDS, len(words))
    return {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}


def _word_key(word: str) -> str:
    """A word as written (a run of ``\\w``), as the full-text index spells it (case folded,
    accents removed); an identifier joined by ``_`` stays one word (``s_2026`` is not
    "2026": forgetting a concept rewrites no id)."""
    return "_".join(tokenize(word))


@functools.lru_cache(maxsize=1 << 16)
def word_forms(word: str) -> frozenset[str]:
    """The forms a tokenized word is matched by: its Porter stem, as search indexes it
    ("peanuts": "peanut"), and for an adjective in -ic or -ical the stem of its noun in -y
    too ("allergic": "allergi", as "allergy"), which the stemmer keeps apart."""
    forms = {stem(word)}
    for suffix in ("ical", "ic"):
        root = word.removesuffix(suffix)
        if root != word and len(root) >= 4:
            forms.add(stem(root + "y"))
            break
    return frozenset(forms)


class ConceptMatch:
    """A forgotten concept, matched in a text as search matches it (see the module doc):
    the text must hold each of the concept's words in one of its forms."""

    def __init__(self, concept: str) -> None:
        tokens = [k for w in _WORD.findall(concept) if (k := _word_key(w))]
        #: The words a text must hold (each, in one of its forms), as the index spells them.
        self.words = list(dict.fromkeys([t for t in tokens if t not in _FUNCTION_WORDS] or tokens))
        self._forms = [word_forms(w) for w in self.words]
        self._which: dict[str, frozenset[int]] = {}  # token -> the concept's words it is

    def __bool__(self) -> bool:
        return bool(self.words)

    def _of(self, word: str) -> frozenset[int]:
        """Which of the concept's words ``word`` (as written) is, if any."""
        found = self._which.get(word)
        if found is None:
            forms = word_forms(key) if (key := _word_key(word)) else frozenset()
            found = frozenset(i for i, f in enumerate(self._forms) if f & forms)
            if len(self._which) < 1 << 16:
                self._which[word] = found
        return found

    def _hits(self, text: str) -> list[tuple[re.Match[str], frozenset[int]]]:
        """The words of ``text`` (as written) that are one of the concept's words."""
        return [(m, which) for m in _WORD.finditer(text) if (which := self._of(m.group()))]

    def found(self, text: str, concepts: Iterable[str] = ()) -> list[str] | None:
        """The words of ``text`` that match, as written (each once, in order), when
        ``text`` with ``concepts`` (a moment's concept index) holds all the concept's
        words; those found in ``concepts`` alone are given as the concept they are in.
        None when it does not."""
        if not self.words:
            return None
        hits = self._hits(text)
        seen = set().union(*(which for _, which in hits))
        words = list(dict.fromkeys(m.group() for m, _ in hits))
        for concept in concepts:
            if len(seen) == len(self.words):
                break
            which = set().union(*map(self._of, _WORD.findall(concept))) - seen
            if which:
                seen |= which
                words.append(concept)
        return words if len(seen) == len(self.words) else None

    def matches(self, text: str) -> bool:
        return self.found(text) is not None

    def redacted(self, text: str, *, always: bool = False) -> str:
        """``text`` with each of the concept's words (a run of them as one) replaced by
        ``[redacted]``, when it holds them all (or ``always``: a text of what matched);
        else ``text`` as it is."""
        if not always and self.found(text) is None:
            return text
        spans: list[list[int]] = []
        for match, _ in self._hits(text):
            start, end = match.span()
            if spans and not text[spans[-1][1] : start].strip():
                spans[-1][1] = end  # only spaces between: one run
            else:
                spans.append([start, end])
        for start, end in reversed(spans):
            text = text[:start] + FORGOTTEN + text[end:]
        return text


@dataclass
class Secret:
    """A redacted moment's text, with the pieces and word runs that give it away."""

    moment_id: str
    text: str
    source_id: str | None
    fragments: list[str] = field(init=False)
    runs: set[tuple[str, ...]] = field(init=False)

    def __post_init__(self) -> None:
        self.fragments = _fragments(self.text)
        self.runs = _runs(self.text)

    @property
    def marker(self) -> str:
        return f"[redacted {self.moment_id}]"


class Scrubber:
    """Removes redacted texts (and forgotten concepts) from strings and JSON-like values.

    A forgotten concept goes from a line that holds all its words (the line is replaced
    whole) or, ``words_only``, from a text that holds them all (its words are replaced,
    anywhere in it)."""

    def __init__(
        self,
        secrets: Sequence[Secret] = (),
        concepts: Sequence[str] = (),
        words_only: bool = False,
    ) -> None:
        self.secrets = list(secrets)
        self.concepts = [m for c in concepts if (m := ConceptMatch(c))]
        #: Replace a forgotten concept's words only, not the whole line that holds them.
        self.words_only = words_only
        self.texts = {s.text for s in self.secrets if s.text}
        self.source_ids = {s.source_id for s in self.secrets if s.source_id}
        self.run_sizes = {len(r) for s in self.secrets for r in s.runs}

    def add(self, secret: Secret) -> None:
        self.secrets.append(secret)
        if secret.text:
            self.texts.add(secret.text)
        if secret.source_id:
            self.source_ids.add(secret.source_id)
        self.run_sizes |= {len(r) for r in secret.runs}

    def __bool__(self) -> bool:
        return bool(self.secrets or self.concepts)

    def _leak(self, line: str) -> str | None:
        """The marker for ``line`` if it still gives a redacted text away, else None."""
        for concept in [] if self.words_only else self.concepts:
            if concept.matches(line):
                return FORGOTTEN
        if not self.run_sizes:
            return None
        words = words_of(line)
        for size in self.run_sizes:
            runs = {tuple(words[i : i + size]) for i in range(len(words) - size + 1)}
            for secret in self.secrets:
                if runs & secret.runs:
                    return secret.marker
        return None

    def leaks(self, text: str) -> bool:
        return self.text(text) != text

    def text(self, value: str) -> str:
        if self.words_only:
            for concept in self.concepts:
                value = concept.redacted(value)
        for secret in self.secrets:
            if secret.text and value.strip() == secret.text.strip():
                return secret.marker
            for piece in secret.fragments:
                if piece in value:
                    value = value.replace(piece, secret.marker)
        lines = value.split("\n")
        leaked = False
        for i, line in enumerate(lines):
            if (marker := self._leak(line)) is not None:
                indent = line[: len(line) - len(line.lstrip(" \t-*>0123456789."))]
                lines[i] = indent + marker
                leaked = True
        return "\n".join(lines) if leaked else value

    def words(self, text: str) -> str:
        """``text`` without any of the forgotten concepts' words (each ``[redacted]``), be
        they all there or not: the text of a moment or a rollup the concept matched."""
        for concept in self.concepts:
            text = concept.redacted(text, always=True)
        return text

    def value(self, data: Any) -> Any:
        """``data`` (str, dict, list, tuple, LangChain message, nested) with redacted text
        removed; the same object when nothing changed."""
        if isinstance(data, str):
            return self.text(data)
        if isinstance(data, BaseMessage):
            return self._message(data)
        if isinstance(data, dict):
            items = {k: self.value(v) for k, v in data.items()}
            return data if all(items[k] is v for k, v in data.items()) else items
        if isinstance(data, list | tuple):
            changed = [self.value(v) for v in data]
            if all(a is b for a, b in zip(changed, data, strict=True)):
                return data
            return type(data)(changed) if isinstance(data, tuple) else changed
        return data

    def record(self, record: BaseModel) -> BaseModel:
        """``record`` with redacted text removed from its free-text fields only: an id, a
        time or a status that happens to contain a forgotten phrase is structure, and
        rewriting it would break the record. The same object when nothing changed."""
        update: dict[str, Any] = {}
        for name, info in type(record).model_fields.items():
            value = getattr(record, name)
            new = self._field(value, is_free_text(info.annotation, info.metadata))
            if new is not value:
                update[name] = new
        return record.model_copy(update=update) if update else record

    def _field(self, value: Any, free_text: bool) -> Any:
        if isinstance(value, BaseModel):
            return self.record(value)
        if isinstance(value, list):
            changed = [self._field(v, free_text) for v in value]
            return value if all(a is b for a, b in zip(changed, value, strict=True)) else changed
        if free_text and isinstance(value, str) and not isinstance(value, Enum):
            return self.text(value)
        return value

    def _message(self, message: BaseMessage) -> BaseMessage:
        marker = next(
            (
                s.marker
                for s in self.secrets
                if (s.source_id and message.id == s.source_id)
                or (s.text and message.text.strip() == s.text.strip())
            ),
            None,
        )
        content = marker if marker is not None else self.value(message.content)
        update: dict[str, Any] = {}
        if content is not message.content:
            update["content"] = content
        calls = getattr(message, "tool_calls", None)
        if calls:
            scrubbed = self.value(calls)
            if scrubbed is not calls:
                update["tool_calls"] = scrubbed
        return message.model_copy(update=update) if update else message


def secret_of(moment: Moment) -> Secret:
    """What a redaction of ``moment`` removes: its text and its chat message."""
    return Secret(moment.id, moment.content.text, moment.source_id)

"""Matching redacted texts wherever they were copied: :class:`Scrubber` takes each
:class:`Secret` (a redacted moment's text) and each forgotten phrase out of strings, records
and JSON-like values (LangChain messages too), as :mod:`.redaction` describes: a text goes
where it appears whole or as any of its sentences of :data:`MIN_WORDS` words or more, and a
line that still shares a run of :data:`RUN_WORDS` words with it is replaced whole."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from ..model import Moment, is_free_text

__all__ = [
    "FORGOTTEN",
    "MIN_WORDS",
    "RUN_WORDS",
    "Scrubber",
    "Secret",
    "phrase_pattern",
    "secret_of",
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


def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words, any case, any spacing."""
    words = phrase.split()
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)", re.I)


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
    """Removes redacted texts (and forgotten phrases) from strings and JSON-like values."""

    def __init__(
        self, secrets: Sequence[Secret] = (), phrases: Sequence[str] = (), words_only: bool = False
    ) -> None:
        self.secrets = list(secrets)
        self.patterns = [phrase_pattern(p) for p in phrases if p.strip()]
        #: Replace a forgotten phrase's words only, not the whole line that holds it.
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
        return bool(self.secrets or self.patterns)

    def _leak(self, line: str) -> str | None:
        """The marker for ``line`` if it still gives a redacted text away, else None."""
        for pattern in [] if self.words_only else self.patterns:
            if pattern.search(line):
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
            for pattern in self.patterns:
                value = pattern.sub(FORGOTTEN, value)
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

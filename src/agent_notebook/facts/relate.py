"""Two claims, or two statements, compared: the same value said again, an update that ends
the earlier claim (supersession), or two claims that cannot both hold (a contradiction).

* **supersession**: the same subject and attribute with another value. A value claim
  ("the launch is June 5" → "the launch moved to June 12"), where one lives or works, a
  version of what is used ("we use PostgreSQL 15" → "we now use PostgreSQL 16"), "switched
  from A to B", or the same act denied with an update cue ("I no longer use Docker").
  Never across subjects ("my dog" / "my cat", "ticket 123" / "ticket 456"), owners ("my" /
  "her"), nor for a multi-valued attribute or an enumeration ("likes tea" leaves "likes
  coffee" true).
* **contradiction**: the same subject, attribute and value, one affirmed and one denied
  ("I have never used Docker" / "I used Docker last week"), the later one with no update cue.
* **repetition**: the same words (case, blanks and punctuation aside), or a paraphrase: the
  vectors close *and* the content words shared, with the same numbers and the same
  negations (a changed value or a flipped claim is never a repeat).
"""

from __future__ import annotations

import re
from typing import Final

from ..core.lexical import stem
from .claims import Claim, same_subject, value_name
from .text import content_stems, word_set

__all__ = ["contradicts", "numbers_of", "overlap", "same_value", "supersedes"]

_USE: Final = stem("use")
#: Two counts of one noun are of the same thing when their sentences share this many words.
_COUNT_CONTEXT: Final = 3
#: Acts whose object has one version at a time: "we run Node 18" ends at "we now run Node 20".
_VERSIONED: Final = frozenset(
    stem(w) for w in word_set("use run deploy target require install pin")
)
_NEGATION: Final = re.compile(
    r"\b(?:not|never|no|nobody|nothing|none|neither|nor|without|n't)\b|n't\b"
)


def same_value(a: str, b: str) -> bool:
    """The same value, however much is said around it: "June 12" and "June 12 at 10am"."""
    if a == b:
        return True
    sa, sb = content_stems(a), content_stems(b)
    if not sa or not sb:
        return False
    if numbers_of(a) != numbers_of(b) and not (
        numbers_of(a) <= numbers_of(b) or numbers_of(b) <= numbers_of(a)
    ):
        return False
    return sa <= sb or sb <= sa


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard overlap of two stem sets (0 when both are empty)."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def numbers_of(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"\d+(?:[.:,]\d+)*", text))


def negations_of(text: str) -> int:
    return len(_NEGATION.findall(text.casefold()))


def supersedes(new: Claim, old: Claim) -> bool:
    """Whether ``new`` (said later) ends ``old``. A story about the past ends nothing and
    is ended by nothing: it was never the current fact."""
    if new.attribute != old.attribute or new.historical or old.historical:
        return False
    if new.attribute == "count":  # the same thing counted, in the same context, anew
        return (
            new.update
            and new.head == old.head
            and new.value != old.value
            and len(new.subject & old.subject) >= _COUNT_CONTEXT
        )
    if new.attribute == "value":
        return (
            same_subject(new, old)
            and new.polarity
            and old.polarity
            and not new.multi
            and not same_value(new.value, old.value)
        )
    if new.owner != old.owner:
        return False
    if old.multi and new.polarity and old.polarity and not new.replaces:
        return _new_version(new, old)
    if new.attribute in ("home", "employer"):
        return new.polarity and old.polarity and not same_value(new.value, old.value)
    if new.replaces:  # "switched from MySQL to PostgreSQL" ends "we use MySQL"
        return (
            old.polarity
            and old.attribute == _USE
            and same_value(value_name(old.value), new.replaces)
        )
    if not new.polarity and old.polarity:  # "I no longer use Docker"
        return new.update and same_value(new.value, old.value)
    if new.polarity and not old.polarity:  # "I have never drunk coffee" → "I now drink coffee"
        return new.update and same_value(new.value, old.value)
    return _new_version(new, old)


def _new_version(new: Claim, old: Claim) -> bool:
    """ "we use PostgreSQL 15" → "we now use PostgreSQL 16": the same thing, another version."""
    name_new, name_old = value_name(new.value), value_name(old.value)
    return (
        new.attribute in _VERSIONED
        and name_new != new.value
        and name_new == name_old
        and numbers_of(new.value) != numbers_of(old.value)
    )


def contradicts(new: Claim, old: Claim) -> bool:
    """Whether ``new`` and ``old`` cannot both hold, ``new`` not saying it is an update."""
    if new.update or new.attribute != old.attribute or new.polarity == old.polarity or new.replaces:
        return False
    if new.attribute == "value":
        return same_subject(new, old) and same_value(new.value, old.value)
    return new.owner == old.owner and same_value(new.value, old.value)

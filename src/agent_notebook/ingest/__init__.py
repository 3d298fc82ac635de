"""Pure parsers that turn a conversation file into an ingest plan (no database writes),
and what a notebook already holds of a plan's sources (:mod:`.held`).

Formats: a JSON list of chat messages (``messages-json``), one message per line
(``messages-jsonl``), and LoCoMo conversations (``locomo``). The facade records the plan,
skipping what an earlier ingest of the same source recorded.
"""

from __future__ import annotations

from .detect import detect_format, parse_file
from .held import SOURCE_RELATION, HeldSource, held_sources, source_of
from .locomo import parse_locomo_time
from .plan import FORMATS, Format, IngestPlan, IngestReport, IngestSession

__all__ = [
    "FORMATS",
    "SOURCE_RELATION",
    "Format",
    "HeldSource",
    "IngestPlan",
    "IngestReport",
    "IngestSession",
    "detect_format",
    "held_sources",
    "parse_file",
    "parse_locomo_time",
    "source_of",
]

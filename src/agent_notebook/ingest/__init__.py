"""Pure parsers that turn a conversation file into an ingest plan (no database writes).

Formats: a JSON list of chat messages (``messages-json``), one message per line
(``messages-jsonl``), and LoCoMo conversations (``locomo``). The facade records the plan.
"""

from __future__ import annotations

from .detect import detect_format, parse_file
from .locomo import parse_locomo_time
from .plan import FORMATS, Format, IngestPlan, IngestSession

__all__ = [
    "FORMATS",
    "Format",
    "IngestPlan",
    "IngestSession",
    "detect_format",
    "parse_file",
    "parse_locomo_time",
]

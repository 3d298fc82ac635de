"""Age-tiered compaction (seed 002): rollups with lineage, the dropped manifest, and the
cold archive. See :mod:`.policy` for the tiers and :mod:`.runner` for why a killed run loses
nothing."""

from __future__ import annotations

from .archive import ColdArchive
from .policy import LEVELS, age_days, decayed_importance, summarizable
from .rollup import ROLLUP_ROLE, dropped_manifest
from .runner import CompactionReport, Compactor, DroppedItem

__all__ = [
    "ARCHIVE_DIR",
    "LEVELS",
    "ROLLUP_ROLE",
    "ColdArchive",
    "CompactionReport",
    "Compactor",
    "DroppedItem",
    "age_days",
    "decayed_importance",
    "dropped_manifest",
    "summarizable",
]

#: The cold archive's directory inside the notebook's home.
ARCHIVE_DIR = "archive"

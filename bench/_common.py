"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

SAMPLE_TEXTS = [
    "Let's move the auth check into auth/middleware.py:42 and call verify_token() first.",
    "Caroline said the LGBTQ support group meets every Tuesday at 7 pm near the library.",
    "Booked the 09:04 TGV to Lyon Part-Dieu, seat 42, coach 7; receipt saved for EXP-2291.",
    "Actually no, the deadline moved to 14 June, please update the plan and tell Melanie.",
    "The migration failed with sqlite3.OperationalError: database is locked, retrying.",
    "ok thanks!",
    "We decided to keep the YAML backend for inspection and SQLite for volume.",
    "Remember that I am vegetarian for the conference dinner at Brasserie Georges.",
]


def percentile(samples: Sequence[float], q: float) -> float:
    ordered = sorted(samples)
    k = (len(ordered) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(samples: Sequence[float]) -> str:
    ms = [s * 1000 for s in samples]
    return (
        f"p50 {percentile(ms, 0.5):8.3f} ms   p95 {percentile(ms, 0.95):8.3f} ms   "
        f"mean {statistics.fmean(ms):8.3f} ms"
    )

"""The LoCoMo dev set (2,760 turns), kept beside the checkout in ``../shared/data/locomo``
(``../../shared`` from a worktree one level deeper, or ``/work/shared``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ROOT

_PLACES = [ROOT.parent, ROOT.parent.parent, Path("/work")]
#: The dev set's file; it may be absent (:func:`locomo_file` skips then).
LOCOMO_DEV = next(
    (
        found
        for up in _PLACES
        if (found := up / "shared" / "data" / "locomo" / "locomo-dev.json").is_file()
    ),
    _PLACES[0] / "shared" / "data" / "locomo" / "locomo-dev.json",
)


def locomo_file() -> Path:
    """The dev set's file; the test is skipped where it is absent."""
    if not LOCOMO_DEV.is_file():
        pytest.skip("the LoCoMo dev set is absent (see ../shared/data/locomo/README.md)")
    return LOCOMO_DEV

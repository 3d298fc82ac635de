"""The notebook: the facade (:class:`Notebook`, :mod:`.facade`) and the operations around
it: the check of what is recorded (:mod:`.drafts`), export and import between notebooks
(:mod:`.exchange`), redaction and forgetting (:mod:`.redaction`), key rotation
(:mod:`.rotation`), importing LangGraph checkpoints (:mod:`.checkpoints`), ``doctor``
(:mod:`.doctor`) and the tools for agents (:mod:`.agent_tools`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .facade import Notebook

__all__ = ["Notebook"]


def __getattr__(name: str) -> Any:
    # The facade loads on first use (PEP 562), so importing an operation of this package
    # (``agent_notebook.notebook.drafts``, say) does not load the facade first.
    if name != "Notebook":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .facade import Notebook

    globals()[name] = Notebook
    return Notebook

"""Prompt templates (Jinja2): the package's own, overridable from a directory of the user's.

Templates get the ``describe`` filter, which renders any value of a thread's state as
plain text: the seed's ``notebook`` is a domain object in Open Notebook, a dict once its
checkpoint is read back without that class, and ``{"session_id", "task"}`` in ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, TemplateNotFound
from pydantic import BaseModel

from ..errors import InvalidInput

PACKAGE_PROMPTS = Path(__file__).parent / "prompts"


def describe(value: Any) -> str:
    """``value`` as text: a mapping or a model (pydantic, dataclass-like object) as one
    ``key: value`` line per field that holds something; anything else as ``str``."""
    if isinstance(value, BaseModel):
        value = value.model_dump()
    elif not isinstance(value, Mapping) and hasattr(value, "__dict__"):
        value = {k: v for k, v in vars(value).items() if not k.startswith("_")}
    if isinstance(value, Mapping):
        return "\n".join(
            f"{key}: {item}" for key, item in value.items() if item not in (None, "", [], {})
        )
    return "" if value is None else str(value)


class Prompter:
    """Renders ``<name>.jinja`` (for example ``chat/system``), looking in ``override_dir``
    first, so a user's ``chat/system.jinja`` replaces ours."""

    def __init__(self, override_dir: Path | None = None) -> None:
        loaders = [FileSystemLoader(str(override_dir))] if override_dir else []
        self.env = Environment(
            loader=ChoiceLoader([*loaders, FileSystemLoader(str(PACKAGE_PROMPTS))]),
            undefined=StrictUndefined,
            autoescape=False,  # prompts are plain text for a model, not HTML
            keep_trailing_newline=False,
        )
        self.env.filters["describe"] = describe

    def render(self, name: str, **data: Any) -> str:
        try:
            template = self.env.get_template(f"{name}.jinja")
        except TemplateNotFound:
            raise InvalidInput(
                f"no prompt template {name}.jinja (looked in {self.env.loader})"
            ) from None
        return template.render(**data).strip()

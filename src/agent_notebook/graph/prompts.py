"""Prompt templates (Jinja2): the package's own, overridable from a directory of the user's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, StrictUndefined, TemplateNotFound

from ..errors import InvalidInput

PACKAGE_PROMPTS = Path(__file__).parent / "prompts"


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

    def render(self, name: str, **data: Any) -> str:
        try:
            template = self.env.get_template(f"{name}.jinja")
        except TemplateNotFound:
            raise InvalidInput(
                f"no prompt template {name}.jinja (looked in {self.env.loader})"
            ) from None
        return template.render(**data).strip()

"""Secrets in what is about to be recorded: API keys, tokens, private keys, passwords.

Each detector is a precise pattern (a vendor's key format, a PEM block, a labelled value),
so ordinary prose, git SHAs, UUIDs and hashes are left alone. :func:`mask` replaces each
secret by ``[secret:<kind> masked]`` and keeps no part of it: not even a prefix, because
the kind already names the key to rotate, and any characters of the random part would help
match the key across places. :func:`screen` applies ``privacy.secrets`` to moment drafts
(their text and their actions' arguments and results) before anything derives from them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import JsonValue

from ..errors import InvalidInput
from ..model import Action, MomentDraft

__all__ = ["Finding", "SecretsMode", "audit_text", "mask", "mask_value", "placeholder", "screen"]

SecretsMode = Literal["mask", "refuse", "off"]

#: A masked secret; never itself taken for a secret, so masking twice changes nothing.
PLACEHOLDER_RE = re.compile(r"\[secret:[a-z ]+ masked\]")

# Keys are runs of these; a key's edges are where they stop.
_KEY = r"A-Za-z0-9_\-"
_START = rf"(?<![{_KEY}])"
_END = rf"(?![{_KEY}])"
# Labels of a value that is a secret: password=..., OPENAI_API_KEY: ..., client_secret="...".
_LABEL = (
    r"pass(?:word|wd|phrase)?|pwd|secret|client[_-]?secret|secret[_-]?key|api[_-]?key|apikey"
    r"|access[_-]?key|private[_-]?key|(?:access|auth|refresh|bearer|api)[_-]?token|token"
)


@dataclass(frozen=True)
class Finding:
    """One secret: its kind and where it was (``start``/``end`` in the text it was found in)."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # the group that is the secret (a labelled value masks the value only)
    accept: Callable[[str], bool] | None = None


def _looks_random(key: str) -> bool:
    """A generated key mixes digits and letters of both cases; hyphenated words do not."""
    return (
        any(c.isdigit() for c in key)
        and any(c.isupper() for c in key)
        and any(c.islower() for c in key)
    )


def _has_digit(key: str) -> bool:
    return any(c.isdigit() for c in key)


_CODE_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+[(\[]?|[A-Za-z_][\w.]*[(\[].*")


def _is_value(value: str) -> bool:
    """A labelled value worth masking: not a placeholder (``$VAR``, ``<key>``, ``{x}``,
    ``***``, ``None``), nor code that fetches it (``os.environ[``, ``getpass()``), nor a
    prose word after a colon ("password: please reset it")."""
    quoted = value[:1] in "\"'"
    bare = value.strip("\"'")
    if len(bare) < 4 or bare[0] in "$<{%*([" or set(bare) <= {"*", "x", "X", "."}:
        return False
    if bare.lower() in {"none", "null", "true", "false", "redacted", "hidden", "required"}:
        return False
    return quoted or not ((bare.isalpha() and bare.islower()) or _CODE_RE.fullmatch(bare))


def _is_password_label(labelled: str) -> bool:
    return re.match(r"(?i)(?:[A-Za-z0-9]+[_.-])*(?:pass|pwd)", labelled) is not None


# In priority order: where two detectors match the same span, the first one names it.
DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    _Detector(
        "jwt",
        re.compile(
            rf"{_START}eyJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]+{_END}"
        ),
    ),
    _Detector(
        "anthropic key",
        re.compile(rf"{_START}sk-ant-(?:[a-z]+\d\d-)?[A-Za-z0-9_-]{{32,}}{_END}"),
        accept=_looks_random,
    ),
    _Detector(
        "openai key",
        re.compile(rf"{_START}sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{{20,}}{_END}"),
        accept=_looks_random,
    ),
    _Detector("aws access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    _Detector(
        "aws secret key",
        re.compile(
            r"(?i:aws[_\- ]?secret(?:[_\- ]?access)?[_\- ]?key(?:[_\- ]?id)?)[\"']?\s*(?:=|:|=>)\s*"
            r"[\"']?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        group=1,
    ),
    _Detector("github token", re.compile(rf"{_START}gh[pousr]_[A-Za-z0-9]{{36,}}{_END}")),
    _Detector("github token", re.compile(rf"{_START}github_pat_[A-Za-z0-9_]{{40,}}{_END}")),
    _Detector(
        "slack token",
        re.compile(rf"{_START}xox[abposr]-[A-Za-z0-9-]{{10,}}{_END}"),
        accept=_has_digit,
    ),
    _Detector("google api key", re.compile(rf"{_START}AIza[0-9A-Za-z_-]{{35}}{_END}")),
    _Detector(
        "bearer token",
        re.compile(
            r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:bearer|basic|token)\s+"
            r"([A-Za-z0-9._~+/=-]{8,})"
        ),
        group=1,
    ),
    _Detector(
        "credential",
        re.compile(
            rf"(?<![A-Za-z0-9])(?:[A-Za-z0-9]+[_.-])*(?i:{_LABEL})[\"']?\s*(?::=|=>|=|:)\s*"
            r"(\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s,;'\"]{1,200})"
        ),
        group=1,
        accept=_is_value,
    ),
)


def find(text: str) -> list[Finding]:
    """The secrets of ``text``, in order, none overlapping another (nor a placeholder)."""
    taken: list[tuple[int, int]] = [m.span() for m in PLACEHOLDER_RE.finditer(text)]
    found: list[Finding] = []
    for detector in DETECTORS:
        for match in detector.pattern.finditer(text):
            start, end = match.span(detector.group)
            secret = match.group(detector.group)
            if detector.accept is not None and not detector.accept(secret):
                continue
            if detector.group and secret[:1] in "\"'" and secret[-1:] == secret[:1]:
                start, end = start + 1, end - 1  # the quotes stay, the value goes
            if any(start < b and a < end for a, b in taken):
                continue
            taken.append((start, end))
            found.append(Finding(_kind(detector, match), start, end))
    return sorted(found, key=lambda f: f.start)


def _kind(detector: _Detector, match: re.Match[str]) -> str:
    if detector.kind == "credential" and _is_password_label(match[0]):
        return "password"
    return detector.kind


def placeholder(kind: str) -> str:
    return f"[secret:{kind} masked]"


def mask(text: str) -> tuple[str, list[Finding]]:
    """``text`` with each secret replaced by ``[secret:<kind> masked]``, and the findings
    (their offsets are in the original text). Text without secrets comes back unchanged."""
    found = find(text)
    if not found:
        return text, []
    parts, at = [], 0
    for finding in found:
        parts += [text[at : finding.start], placeholder(finding.kind)]
        at = finding.end
    parts.append(text[at:])
    return "".join(parts), found


_LABEL_KEY_RE = re.compile(rf"(?:[A-Za-z0-9]+[_.-])*(?i:{_LABEL}|authorization)")


def mask_value(value: JsonValue) -> tuple[JsonValue, list[str]]:
    """Mask the secrets in a JSON value (an action's arguments or result): in every string,
    and the whole string value of a key that names a secret (``{"password": "hunter2"}``).
    Returns the value (unchanged when it holds no secret) and the kinds found."""
    if isinstance(value, str):
        masked, found = mask(value)
        return masked, [f.kind for f in found]
    if isinstance(value, list):
        kinds: list[str] = []
        items = []
        for item in value:
            new, more = mask_value(item)
            items.append(new)
            kinds += more
        return (items, kinds) if kinds else (value, [])
    if isinstance(value, dict):
        kinds = []
        entries: dict[str, JsonValue] = {}
        for key, item in value.items():
            if (
                _LABEL_KEY_RE.fullmatch(key)
                and isinstance(item, str)
                and item
                and not PLACEHOLDER_RE.fullmatch(item)
            ):
                kind = "password" if _is_password_label(key) else "credential"
                entries[key] = placeholder(kind)
                kinds.append(kind)
                continue
            entries[key], more = mask_value(item)
            kinds += more
        return (entries, kinds) if kinds else (value, [])
    return value, []


def screen(
    drafts: Sequence[MomentDraft], mode: SecretsMode
) -> tuple[list[MomentDraft], dict[int, list[str]]]:
    """Apply ``privacy.secrets`` to ``drafts``: the drafts to record, and for each index the
    kinds masked there. ``refuse`` raises :class:`InvalidInput` at the first draft with a
    secret (naming its index and kind, never the secret); ``off`` changes nothing."""
    if mode == "off":
        return list(drafts), {}
    result: list[MomentDraft] = []
    masked: dict[int, list[str]] = {}
    for index, draft in enumerate(drafts):
        new, kinds = _mask_draft(draft)
        if kinds and mode == "refuse":
            raise InvalidInput(
                f"moment {index}: it holds {_count(kinds)}; nothing was recorded. Remove or "
                "mask it yourself (write '[secret:<kind> masked]' in its place), or set "
                "privacy.secrets to 'mask' in config.yaml to have it masked on record"
            )
        result.append(new)
        if kinds:
            masked[index] = kinds
    return result, masked


def _mask_draft(draft: MomentDraft) -> tuple[MomentDraft, list[str]]:
    text, found = mask(draft.text)
    kinds = [f.kind for f in found]
    actions: list[Action] = []
    for action in draft.actions:
        arguments, in_args = mask_value(dict(action.arguments))
        result, in_result = mask_value(action.result)
        kinds += in_args + in_result
        if in_args or in_result:
            assert isinstance(arguments, dict)
            action = action.model_copy(update={"arguments": arguments, "result": result})
        actions.append(action)
    # Concepts and keys given by the caller are recorded as given: one with a secret is
    # dropped (masked, it would be no handle at all).
    update: dict[str, object] = {}
    for name in ("concepts", "retrieval_keys"):
        given: list[str] | None = getattr(draft, name)
        if given is not None:
            kept = [item for item in given if not find(item)]
            kinds += [f.kind for item in given for f in find(item)]
            if len(kept) != len(given):
                update[name] = kept
    if not kinds:
        return draft, []
    return draft.model_copy(update={"text": text, "actions": actions, **update}), kinds


def _count(kinds: Sequence[str]) -> str:
    counted = Counter(kinds)
    total = sum(counted.values())
    names = ", ".join(f"{kind}" if n == 1 else f"{n} {kind}" for kind, n in counted.items())
    return f"{total} secret{'s' if total != 1 else ''} ({names})"


def audit_text(kinds: Sequence[str], moment_id: str) -> str:
    """The audit log's entry for a masked moment: ``masked 1 secret (openai key) in m_7``."""
    return f"masked {_count(kinds)} in {moment_id}"

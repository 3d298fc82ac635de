"""What a guest may write back (``guests:`` in ``config.yaml``): the caps of a guest's
write-back, enforced by the facade (``Notebook.write_back``) for HTTP, MCP and the web page
alike. A write-back past a cap is refused, naming the cap and its value; nothing is written.
The owner's own write-backs are not capped."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

#: The most write-backs an hourly window can count (the window's counter keeps the hour and
#: the count in one number: ``hour * HOURLY_SPAN + count``).
HOURLY_SPAN: Final = 1_000_000


class GuestLimits(BaseModel):
    """The caps of a guest's write-backs. A write-back's size is the UTF-8 bytes of its text
    and its ``why``; the counts are of write-backs, whatever their kind."""

    model_config = ConfigDict(extra="forbid")

    #: The most bytes one write-back may hold (HTTP 413 past it).
    write_back_max_bytes: int = Field(4 * 1024, ge=1, le=1024 * 1024)
    #: The most guest write-backs one session takes, all guests together (HTTP 429): the
    #: session's record, rewritten at each one, grows by at most this many times
    #: ``write_back_max_bytes`` (400 KiB at the defaults).
    write_backs_per_session: int = Field(100, ge=1, le=100_000)
    #: The most write-backs one guest may make in a clock hour (UTC; HTTP 429 with a
    #: Retry-After up to the next hour).
    write_backs_per_hour: int = Field(60, ge=1, le=HOURLY_SPAN - 1)
    #: The most bytes one guest may write back in all, over every session (HTTP 413).
    write_back_total_bytes: int = Field(1024 * 1024, ge=1, le=1024**4)

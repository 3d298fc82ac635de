"""The tables a PostgreSQL notebook keeps for the servers beside the notes: the API tokens
of ``serve`` (:class:`~agent_notebook.privacy.tokens.DatabaseTokens`) and the web pages'
sign-in sessions (:mod:`agent_notebook.privacy.web_sessions`), hashes only, so every server
honours (and ends) the same ones. A file notebook keeps them in files in its home instead.
"""

from __future__ import annotations

from datetime import datetime

from .connection import PostgresConnection


class PostgresServerTables(PostgresConnection):
    """API tokens and web sign-in sessions, shared by every server."""

    # -- API tokens -------------------------------------------------------------------------

    def api_tokens(self) -> list[tuple[str, str, str, datetime, str | None]]:
        """Each token's role, name, hash, time made and (a guest's) scope as JSON."""
        found = self._query(
            "SELECT role, name, sha256, created, scope FROM api_tokens ORDER BY 1, 2"
        )
        return [(str(r), str(n), str(h), c, s) for r, n, h, c, s in found]

    def add_api_token(
        self, role: str, name: str, sha256: str, created: datetime, scope: str | None = None
    ) -> bool:
        """Insert a token's row (a guest's with its ``scope``, JSON); False (nothing
        changed) when ``role``/``name`` has one."""
        with self.atomic():
            done = self._write(
                "INSERT INTO api_tokens (role, name, sha256, created, scope) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (role, name, sha256, created, scope),
            )
            return bool(done.rowcount)

    def set_api_token(self, role: str, name: str, sha256: str, created: datetime) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO api_tokens (role, name, sha256, created) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (role, name) DO UPDATE SET sha256 = excluded.sha256, "
                "created = excluded.created",
                (role, name, sha256, created),
            )

    def delete_api_token(self, role: str, name: str) -> bool:
        with self.atomic():
            done = self._write("DELETE FROM api_tokens WHERE role = %s AND name = %s", (role, name))
            return bool(done.rowcount)

    # -- the web pages' sign-in sessions ----------------------------------------------------

    def web_sessions(self) -> list[tuple[str, str, datetime]]:
        found = self._query("SELECT sha256, token_sha256, created FROM web_sessions")
        return [(str(h), str(t), c) for h, t, c in found]

    def add_web_session(self, sha256: str, token_sha256: str, created: datetime) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO web_sessions (sha256, token_sha256, created) VALUES (%s, %s, %s)",
                (sha256, token_sha256, created),
            )

    def delete_web_sessions(self, sha256s: list[str]) -> None:
        with self.atomic():
            self._write("DELETE FROM web_sessions WHERE sha256 = ANY(%s)", (sha256s,))

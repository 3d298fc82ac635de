"""The notebook's LangGraph checkpointers: what they share (:mod:`.base`, :mod:`.codec`,
:mod:`.delta_history`), the SQLite one (:mod:`.sqlite`, :mod:`.sqlite_history`) and the
PostgreSQL one (:mod:`.postgres`, :mod:`.postgres_history`). Import from the modules
directly."""

"""The notebook's LangGraph stores: the SQLite one (:mod:`.sqlite`), the PostgreSQL one
(:mod:`.postgres`), values sealed at rest (:mod:`.sealed`), and the semantic index they share
(:mod:`.index`, :mod:`.vectors`, :mod:`.vector_cache`). Import from the modules directly."""

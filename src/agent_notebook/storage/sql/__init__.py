"""What the SQL backends (SQLite, PostgreSQL) share: the reads and writes that differ only in
dialect (:mod:`.reads`, :mod:`.writes`, told apart by a :class:`.dialect.Dialect`), key
rotation (:mod:`.rotation`), how rows are sealed (:mod:`.sealed`) and the choice of a
search's terms (:mod:`.ranking`). What truly differs (the full-text index, transactions,
the vector change log) lives in each backend's own package."""

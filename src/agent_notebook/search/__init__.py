"""Search: vectors and the embedding queue (:mod:`.vectors`, :mod:`.semantic`), the query
(:mod:`.query`), the engine that fuses the signals (:mod:`.engine`, :mod:`.hybrid`) and
slices, what a guess of the context should read (:mod:`.slice`). The lexical tokenizer and
BM25 that the backends share sit below storage, in :mod:`agent_notebook.core.lexical`.
Import from the modules directly."""

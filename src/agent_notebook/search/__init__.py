"""Search: vectors and the embedding queue (:mod:`.vectors`, :mod:`.semantic`), the query
(:mod:`.query`), the engine that fuses the signals (:mod:`.engine`, :mod:`.hybrid`) and
slices, what a guess of the context should read (:mod:`.slice`). What a search is asked
(:class:`.request.SearchRequest`, the modes) and what it returns (:class:`.hits.SearchHit`,
its typed :class:`.explanation.Explanation` naming each :class:`.explanation.Signal`) are
the vocabulary the front ends speak. The lexical tokenizer and BM25 that the backends share
sit below storage, in :mod:`agent_notebook.core.lexical`. Import from the modules directly."""

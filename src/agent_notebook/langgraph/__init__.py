"""LangGraph on a notebook's own storage: the checkpointers (:mod:`.checkpoint`), the stores
(:mod:`.store`), opening both on a backend (:mod:`.stores`) and LangChain messages as
moments (:mod:`.messages`). A storage backend knows nothing of LangGraph: this layer sits
above it. Import from the modules directly."""

"""Search: the lexical tokenizer and BM25 the backends share (:mod:`.lexical`), vectors and
the embedding queue (:mod:`.vectors`, :mod:`.semantic`), and the engine that fuses the
signals (:mod:`.engine`, :mod:`.hybrid`). Import from the modules directly: they sit in
different layers (the backends import :mod:`.lexical`)."""

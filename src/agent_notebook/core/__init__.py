"""Pure helpers every layer above may use, with no notebook state of their own: files
written atomically and kept private (:mod:`.files`), the YAML codec (:mod:`.yamlcodec`),
encryption at rest (:mod:`.crypto`), the lexical tokenizer and BM25 (:mod:`.lexical`),
enrichment of a moment (:mod:`.enrich`), relative dates (:mod:`.dates`), token counting
(:mod:`.tokens`) and a matrix-vector product kept on the calling thread (:mod:`.products`). Import from the modules directly."""

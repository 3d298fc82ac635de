"""Seed 002's privacy rules: owner-only files, modality opt-outs, secret masking, the audit
line, API tokens and web sign-in sessions. Each concern is its own module; import from them
directly. Encryption at rest is :mod:`agent_notebook.core.crypto`; redaction and key rotation
are operations of the notebook (:mod:`agent_notebook.notebook.redaction`,
:mod:`agent_notebook.notebook.rotation`)."""

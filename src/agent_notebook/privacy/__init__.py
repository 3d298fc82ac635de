"""Seed 002's privacy model: owner-only files, modality opt-outs, secret masking, encryption
at rest and API tokens. Each concern is its own module; import from them directly."""

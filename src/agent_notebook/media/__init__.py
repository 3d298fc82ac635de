"""Media attached to moments (issue 9): decoding images and audio, and the local signatures
(a perceptual hash for images, a fingerprint for audio) that search by example ranks on.
No model and no download: Pillow, libsndfile (through ``soundfile``) and numpy only."""

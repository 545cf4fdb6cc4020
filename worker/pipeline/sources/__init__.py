"""Where samples come from: dataset specs and readers, label files, injected noise and copies,
and ingest (decoding, thumbnails).
"""

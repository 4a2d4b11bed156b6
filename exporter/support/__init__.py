"""Pieces every layer uses: the injected clock, logs with secret redaction, JSON off the GIL."""

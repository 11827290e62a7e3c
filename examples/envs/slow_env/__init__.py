"""Slow: reset takes longer than the verifier's probe timeout."""

"""Broken: healthy on /health, but every reset raises (the env answers 500)."""

"""Legacy: its Dockerfile copies src/core and puts it on PYTHONPATH (staging fixes that)."""

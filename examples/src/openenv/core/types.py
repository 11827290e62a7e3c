"""Stands for the legacy ``src/core/types.py``: put this folder itself on PYTHONPATH (as old
Dockerfiles did with /app/src/core) and it shadows the stdlib ``types`` module, so Python fails
at start with ``cannot import name 'GenericAlias' from partially initialized module 'types'``."""

GenericAliasMissing = True

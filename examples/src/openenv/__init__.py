"""Shim: extend this package with the installed openenv-core, so /app/src on PYTHONPATH works."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

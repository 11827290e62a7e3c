"""Shim: extend this package with the installed openenv-core's ``openenv.core``."""

from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

"""Built-in plugins: one module per env that needs anything special, named after the env.

``BUILTIN_PLUGINS`` is the explicit, ordered list the plugin manager registers; a meta-test
checks that every module here is listed and that each env module's profile names its own env.
"""

BUILTIN_PLUGINS: tuple[str, ...] = (
    "releaselib.checks",
)

"""Run ``invoke --list`` from the project root; the tasks live in openenv_release/tasks.py."""

from openenv_release.tasks import ns  # noqa: F401  (invoke looks for `ns`)

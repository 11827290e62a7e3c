"""The Space runtime: plan a Space from its Dockerfile, build it, run it, watch it.

The embedded Hub (``releaselib.localhub``) and ``nox -s staged_run``/``staged_docker`` use it;
it imports nothing from either.
"""

from releaselib.space_runtime.plan import BuildError, RunPlan, read_plan
from releaselib.space_runtime.process import SpaceProcess, free_port, start_space_process

__all__ = [
    "BuildError",
    "RunPlan",
    "SpaceProcess",
    "free_port",
    "read_plan",
    "start_space_process",
]

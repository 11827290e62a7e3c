"""The embedded Hub: a Hub HTTP API for the real huggingface_hub client, a container-less Space
runtime behind it, and scenarios that make it misbehave on purpose.

    with LocalHub() as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
"""

from releaselib.localhub.hub import LocalHub
from releaselib.localhub.requestlog import Counters, RequestRecord
from releaselib.localhub.scenario import Fault, Scenario, SpaceBehaviour
from releaselib.space_runtime import (
    BuildError,
    RunPlan,
    SpaceProcess,
    free_port,
    read_plan,
    start_space_process,
)

__all__ = [
    "BuildError",
    "Counters",
    "Fault",
    "LocalHub",
    "RequestRecord",
    "RunPlan",
    "Scenario",
    "SpaceBehaviour",
    "SpaceProcess",
    "free_port",
    "read_plan",
    "start_space_process",
]

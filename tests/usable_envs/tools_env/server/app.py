"""A tool-calling (MCP) env: its one tool needs two integer arguments. With the Space variable
WS_ONLY set it serves episodes over /ws only."""

import os

from fastapi import Request
from fastapi.responses import JSONResponse
from fastmcp import FastMCP
from openenv.core.env_server import create_app
from openenv.core.env_server.mcp_environment import MCPEnvironment
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation
from openenv.core.env_server.types import Observation, State


def tools() -> FastMCP:
    mcp = FastMCP("tools_env")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return mcp


class ToolsEnvironment(MCPEnvironment):
    def __init__(self) -> None:
        super().__init__(tools())

    def reset(self, seed=None, episode_id=None, **kwargs) -> Observation:
        return Observation(done=False, reward=0.0)

    def _step_impl(self, action, timeout_s=None, **kwargs) -> Observation:
        return Observation(done=False, metadata={"error": f"not a tool call: {action!r}"})

    @property
    def state(self) -> State:
        return State(episode_id="x", step_count=0)


app = create_app(ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools_env")

if os.environ.get("WS_ONLY"):  # like agent_world_model_env: HTTP reset and step answer 400

    @app.middleware("http")
    async def ws_only(request: Request, call_next):
        if request.url.path in ("/reset", "/step"):
            return JSONResponse({"detail": "episodes are served over /ws"}, status_code=400)
        return await call_next(request)

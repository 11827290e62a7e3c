"""A tool-calling (MCP) env: its one tool needs two integer arguments."""

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

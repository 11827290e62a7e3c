"""Built-in plugins: one module per env that needs anything special, named after the env.

``BUILTIN_PLUGINS`` is the explicit, ordered list the plugin manager registers; a meta-test
checks that every module here is listed and that each env module's profile names its own env.
"""

BUILTIN_PLUGINS: tuple[str, ...] = (
    "releaselib.stage.checks",
    "releaselib.hub.signatures",
    "env_plugins.agent_world_model_env",
    "env_plugins.atari_env",
    "env_plugins.browsergym_env",
    "env_plugins.calendar_env",
    "env_plugins.carla_env",
    "env_plugins.chat_env",
    "env_plugins.chess_env",
    "env_plugins.coding_env",
    "env_plugins.coding_tools_env",
    "env_plugins.dm_control_env",
    "env_plugins.echo_env",
    "env_plugins.finqa_env",
    "env_plugins.git_env",
    "env_plugins.julia_env",
    "env_plugins.jupyter_env",
    "env_plugins.kernrl",
    "env_plugins.maze_env",
    "env_plugins.openapp_env",
    "env_plugins.opencode_env",
    "env_plugins.openspiel_env",
    "env_plugins.repl_env",
    "env_plugins.snake_env",
    "env_plugins.sumo_rl_env",
    "env_plugins.tbench2_env",
    "env_plugins.terminus_env",
    "env_plugins.textarena_env",
    "env_plugins.unity_env",
    "env_plugins.websearch_env",
    "env_plugins.wildfire_env",
)

"""openenv-release: stage, deploy, verify and promote OpenEnv envs as Hugging Face Spaces."""

__version__ = "0.1.0"

"""The task layer of openenv-release: Invoke tasks over releaselib, and the console script."""

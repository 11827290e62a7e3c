"""Which envs an OpenEnv checkout has, and which of them can be deployed."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Iterable
from pathlib import Path

from releaselib.errors import UsageError
from releaselib.records import EnvSpec, check_env_name

CHECKOUT_REMEDY = "fix the checkout's pyproject.toml, or point --repo at an OpenEnv checkout"


def is_openenv_checkout(path: Path) -> bool:
    """True when ``path`` looks like an OpenEnv checkout: ``envs/`` and a root pyproject."""
    return (path / "envs").is_dir() and (path / "pyproject.toml").is_file()


def checkout_project(repo: Path) -> tuple[str, str]:
    """The root pyproject's ``(name, version)``; a UsageError names the file when it can't."""
    path = repo / "pyproject.toml"
    try:
        project = tomllib.loads(path.read_text(encoding="utf-8")).get("project", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: not readable TOML ({exc})", remedy=CHECKOUT_REMEDY) from exc
    if not isinstance(project, dict):
        project = {}
    name, version = project.get("name"), project.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise UsageError(f"{path}: no [project] name and version", remedy=CHECKOUT_REMEDY)
    return name, version


def env_dockerfile(env_dir: Path) -> Path | None:
    """``server/Dockerfile`` when present (it wins), else ``Dockerfile`` at the env root."""
    for candidate in (env_dir / "server" / "Dockerfile", env_dir / "Dockerfile"):
        if candidate.is_file():
            return candidate
    return None


def describe_env(env_dir: Path) -> EnvSpec:
    """An EnvSpec for one directory under ``envs/``, deployable or not and why. An env needs a
    Dockerfile and a valid name; without a README, staging generates the Space card."""
    dockerfile = env_dockerfile(env_dir)
    readme = env_dir / "README.md"
    has_readme = readme.is_file()
    deployable = dockerfile is not None
    if dockerfile is None:
        reason = "no server/Dockerfile or Dockerfile; add one, or move the folder out of envs/"
    elif has_readme:
        reason = f"{dockerfile.relative_to(env_dir)} and README.md"
    else:
        reason = f"{dockerfile.relative_to(env_dir)}; no README.md, so staging generates the card"
    try:
        check_env_name(env_dir.name)
    except ValueError as exc:  # never staged: its name would end up in Space ids and paths
        deployable = False
        reason = f"{exc}; rename the directory"
    return EnvSpec(
        name=env_dir.name,
        path=env_dir,
        dockerfile=dockerfile,
        readme=readme if has_readme else None,
        deployable=deployable,
        reason=reason,
    )


def discover_envs(repo: Path) -> list[EnvSpec]:
    """Every env directory under ``repo/envs`` (dot and dunder dirs skipped), sorted by name."""
    envs_dir = repo / "envs"
    if not envs_dir.is_dir():
        raise UsageError(f"{repo} has no envs/ directory", remedy="pass --repo <OpenEnv checkout>")
    return [
        describe_env(child)
        for child in sorted(envs_dir.iterdir())
        if child.is_dir() and not child.name.startswith((".", "__"))
    ]


def _valid_name(name: str) -> bool:
    try:
        check_env_name(name)
    except ValueError:
        return False
    return True


def check_env_flags(names: Iterable[str]) -> list[str]:
    """``--env`` names, deduplicated; one that is not a valid env name is a UsageError."""
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        try:
            check_env_name(name)
        except ValueError as exc:
            raise UsageError(f"--env {exc}", remedy="name a directory under envs/") from None
    return wanted


def select_envs(specs: Iterable[EnvSpec], names: Iterable[str]) -> list[EnvSpec]:
    """The specs named in ``names`` (every env dir when empty, at least one of them
    deployable), in checkout order. An env that is not deployable stays in, so staging names
    it as failed with the reason, never dropping it without a word; only a directory whose
    name can be no Space id is left to ``envs`` to name.

    A name that is not a valid env name, or an unknown one, is a UsageError naming ``--env``
    (an unknown one with the closest names).
    """
    specs = list(specs)
    wanted = check_env_flags(names)
    if not wanted:
        if not any(s.deployable for s in specs):
            raise UsageError(
                f"no deployable env under envs/ ({len(specs)} env dirs)",
                remedy="run `openenv-release envs` to see why each is not, or check --repo",
            )
        return [s for s in specs if s.deployable or _valid_name(s.name)]
    by_name = {s.name: s for s in specs}
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        name = unknown[0]
        close = difflib.get_close_matches(name, list(by_name), n=3, cutoff=0.8)
        hint = f"did you mean {', '.join(close)}?" if close else "run `envs` to list them"
        raise UsageError(f"--env {name!r}: no such env under envs/", remedy=hint)
    return [by_name[n] for n in sorted(wanted, key=list(by_name).index)]

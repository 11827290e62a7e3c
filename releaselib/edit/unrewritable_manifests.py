"""OpenEnv requirements staging checks but does not rewrite: conda envs, setup.py, setup.cfg."""

from __future__ import annotations

import configparser
import re

from releaselib.edit.requirement import REMEDY, names_openenv, pinned_requirement, rewrite_at
from releaselib.errors import StageError


def conda_specs(text: str, path: str) -> list[str]:
    """The OpenEnv requirements in the ``pip:`` sections of a conda ``environment.yml``."""
    import yaml  # lazily: only envs with a conda environment need it

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise StageError(f"{path}: not valid YAML ({exc})", remedy=REMEDY) from exc
    entries = data.get("dependencies", []) if isinstance(data, dict) else []
    pips = [e["pip"] for e in entries if isinstance(e, dict) and isinstance(e.get("pip"), list)]
    return [str(s) for pip in pips for s in pip if isinstance(s, str) and names_openenv(s)]


def check_conda_environment(text: str, *, path: str, dist: str, ref: str) -> None:
    """StageError naming the file and the spec when a conda environment's ``pip:`` section
    names OpenEnv other than pinned to ``ref``: no comment-keeping YAML editor is installed
    (ruamel.yaml), so staging cannot rewrite it safely."""
    for spec in conda_specs(text, path):
        if rewrite_at(spec, path, None, dist=dist, ref=ref) is not None:
            raise StageError(
                f"{path}: its pip section names {spec!r}, which staging cannot rewrite "
                "(no comment-keeping YAML editor)",
                remedy=f"write {pinned_requirement(dist, ref)!r} there, or move it to "
                "requirements.txt",
            )


def setup_requirement(path: str, text: str) -> str | None:
    """The OpenEnv requirement a ``setup.py``/``setup.cfg`` names, if any: staging does not edit
    Python code, so such an env cannot be pinned and fails."""
    if path.endswith("setup.cfg"):
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(text)
        except configparser.Error:
            return None
        lines = parser.get("options", "install_requires", fallback="").splitlines()
    else:
        listed = re.split(r"[\])]", text.partition("install_requires")[2], maxsplit=1)[0]
        lines = re.findall(r"""["']([^"'\n]+)["']""", listed)
    return next((line.strip() for line in lines if names_openenv(line.strip())), None)

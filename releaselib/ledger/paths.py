"""Where a release's ledger lives: the default path beside the staged trees, and ``--ledger``
fenced as ``--staging-dir`` is."""

from __future__ import annotations

from pathlib import Path

from releaselib.config import ReleaseConfig, space_suffix


def default_path(config: ReleaseConfig) -> Path:
    """Where a release's ledger lives unless ``--ledger`` says otherwise."""
    return config.staging_dir / ledger_name(config.namespace, config.version, config.suffix)


def ledger_name(namespace: str, version: str, suffix: str) -> str:
    """The default ledger's file name for the release ``(namespace, version, suffix)``."""
    tail = version if suffix == space_suffix(version) else f"{version}{suffix}"
    return f"ledger-{namespace}-{tail}.json"


def ledger_path(config: ReleaseConfig, given: str | None) -> Path:
    """``--ledger PATH``, else :func:`default_path`. A given ledger is fenced as
    ``--staging-dir`` is: the ledger and its lock never go into the checkout's root, ``envs/``,
    ``src/`` or an env dir (resolved, so a symlink does not hide it); a folder of its own in
    the checkout (``hf-staging/``) or anywhere outside it is fine."""
    from releaselib.errors import UsageError
    from releaselib.space_ids import refuse_token
    from releaselib.stage.discover import is_openenv_checkout

    if not given:
        return default_path(config)
    refuse_token("--ledger", given)
    path = Path(given).expanduser()
    folder = path.parent.resolve()
    # the release's checkout, and any checkout the ledger's folder lies in (verify needs none)
    checkouts = {config.repo.resolve(), *(up for up in (folder, *folder.parents))}
    repo = next(
        (
            c
            for c in sorted(checkouts, key=lambda c: len(c.parts))
            if is_openenv_checkout(c)
            and (folder == c or any(folder.is_relative_to(c / part) for part in ("envs", "src")))
        ),
        None,
    )
    if repo is not None:
        raise UsageError(
            f"--ledger {path}: inside the checkout {repo} (a release never writes its ledger "
            "or lock there; only pin changes the checkout)",
            remedy="pass a path outside envs/ and src/, e.g. --ledger ./hf-staging/ledger.json",
        )
    return path


def briefing_stem(ledger: Path) -> str:
    """The briefing's file name (without suffix) beside ``ledger``: ``ledger-X`` gives
    ``briefing-X``; any other name gets a ``briefing-`` prefix, so the briefing can never be
    written over the ledger it was made from."""
    stem = ledger.stem
    return "briefing-" + (stem.removeprefix("ledger-") if stem.startswith("ledger-") else stem)


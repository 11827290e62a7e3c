"""The release briefing: a JSON report built from the ledger, and its Markdown rendering."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from releaselib.config import ReleaseConfig
from releaselib.files import write_atomic
from releaselib.ledger import EnvEntry, Ledger
from releaselib.render import render


def data(entry: EnvEntry, step: str) -> Mapping[str, Any]:
    record = entry.get(step)
    return record.data if record is not None else {}


def outcome(entry: EnvEntry) -> str:
    """PASS, FAIL or INCONCLUSIVE; an env that never got verified is INCONCLUSIVE."""
    verify = entry.get("verify")
    if verify is not None and verify.data.get("outcome") in {"PASS", "FAIL", "INCONCLUSIVE"}:
        return str(verify.data["outcome"])
    stage, deploy = entry.get("stage"), entry.get("deploy")
    if (stage and stage.status == "failed") or (deploy and deploy.status == "failed"):
        return "FAIL"
    return "INCONCLUSIVE"


def decision(entry: EnvEntry) -> str:
    """promoted, pinned or held."""
    if data(entry, "promote").get("decision") == "promoted":
        return "promoted"
    if data(entry, "pin").get("decision") == "pinned":
        return "pinned"
    return "held"


def env_report(entry: EnvEntry) -> dict[str, Any]:
    verify, deploy, stage = data(entry, "verify"), data(entry, "deploy"), data(entry, "stage")
    promote, pin = data(entry, "promote"), data(entry, "pin")
    return {
        "env": entry.name,
        "space_id": deploy.get("space_id") or stage.get("space_id"),
        "commit": deploy.get("head"),
        "outcome": outcome(entry),
        "decision": decision(entry),
        "canonical_targets": list(promote.get("targets", [])),
        "reason": verify.get("reason")
        or promote.get("reason")
        or deploy.get("error")
        or stage.get("error")
        or "",
        "stage": verify.get("stage"),
        "hardware": verify.get("hardware"),
        "domains": list(verify.get("domain_attempts", [])),
        "pin_diff": pin.get("diff", ""),
        "collected": bool(
            data(entry, "collection").get("added") or data(entry, "collection").get("present")
        ),
        "cleanup": data(entry, "cleanup").get("action"),
        "allowed_secrets": list(stage.get("allowed_secrets", [])),
    }


def build_report(
    config: ReleaseConfig, ledger: Ledger, *, ref_reason: str | None = None
) -> dict[str, Any]:
    """The briefing as data: release tuple, per-env facts, counts, evidence, how to reproduce."""
    envs = [env_report(ledger.env(name)) for name in ledger.envs()]
    evidence = [
        {
            "env": e["env"],
            "space_id": e["space_id"],
            "commit": e["commit"],
            "stage": e["stage"],
            "hardware": e["hardware"],
            "domains": e["domains"],
        }
        for e in envs
        if e["outcome"] == "PASS"
    ]
    return {
        "release": {
            "namespace": config.namespace,
            "version": config.version,
            "ref": config.ref,
            "ref_reason": ref_reason or config.ref_reason,
            "dist": config.dist,
            "suffix": config.suffix,
            "base_image": config.base_image,
            "private": config.private,
        },
        "envs": envs,
        "counts": {
            "outcome": dict(Counter(e["outcome"] for e in envs)),
            "decision": dict(Counter(e["decision"] for e in envs)),
            "envs": len(envs),
        },
        "evidence": evidence,
        "reproduce": reproduce(config, [e["env"] for e in envs]),
    }


def reproduce(config: ReleaseConfig, envs: Sequence[str]) -> list[str]:
    flags = f"--repo {config.repo} --version {config.version} --namespace {config.namespace}"
    only = " ".join(f"--env {e}" for e in envs)
    return [
        f"openenv-release release {flags} {only}".strip(),
        f"openenv-release status --repo {config.repo} --version {config.version}",
    ]


def render_briefing(report: Mapping[str, Any]) -> str:
    return render("briefing.md.j2", **report)


def write_briefing(report: Mapping[str, Any], directory: Path, stem: str) -> tuple[Path, Path]:
    """Write ``<stem>.md`` and ``<stem>.json`` atomically; return both paths."""
    markdown, as_json = directory / f"{stem}.md", directory / f"{stem}.json"
    write_atomic(markdown, render_briefing(report).encode("utf-8"))
    write_atomic(as_json, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return markdown, as_json

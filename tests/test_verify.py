"""verify against the embedded Hub, with the example envs running as real openenv-core servers."""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import ssl
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import certifi
import httpx
import pytest

from releaselib.config import ReleaseConfig
from releaselib.hookspecs import hookimpl
from releaselib.hub.client import Hub
from releaselib.hub.deploy import deploy_all
from releaselib.hub.retry import RetryPolicy
from releaselib.hub.runtime import Domain, SpaceState, settle
from releaselib.ledger.ledger import Ledger
from releaselib.localhub import Fault, LocalHub, Scenario, SpaceBehaviour
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.publish.pin_step import pin_envs
from releaselib.records import EnvProfile, Probe, StagedSpace
from releaselib.space_ids import Canonicals
from releaselib.stage.staged_tree import build_manifest, manifest_hash
from releaselib.verify.candidates import (
    VerifyResult,
    candidates,
    check_space,
    env_of,
    plan_for,
    probe_jobs,
    verify_spaces,
)
from releaselib.verify.outcome import Stop
from releaselib.verify.probe import HEALTH_TRIES, Outcome, probe_base_url
from tests import helpers
from tests.helpers import builtin_registry, cli, offline, wait_flag, waits

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "envs"
FAST = RetryPolicy(attempts=4, base=0.01, cap=0.05)
SUFFIX = "-0.2.2"
STEP_RAISES = (
    "from models import EchoAction, EchoObservation\n"
    "from openenv.core.env_server.interfaces import Environment\n"
    "from openenv.core.env_server.types import State\n\n\n"
    "class EchoEnvironment(Environment):\n"
    "    def reset(self, seed=None, episode_id=None, **kwargs):\n"
    "        return EchoObservation(echoed='', reward=0.0, done=False)\n\n"
    "    def step(self, action, timeout_s=None, **kwargs):\n"
    "        raise RuntimeError('step is broken')\n\n"
    "    @property\n"
    "    def state(self):\n"
    "        return State(episode_id='x', step_count=0)\n"
)
#: env name in the checkout -> the example it copies
ENVS = {
    "echo_env": "echo_env",
    "broken_env": "broken_env",
    "stepfail_env": "echo_env",
    "mirror_env": "echo_env",
    "slow_env": "slow_env",
    "legacy_env": "legacy_env",
}
TWO_DOMAINS = SpaceBehaviour(repo="openenv/mirror_env-*", domains=2, first_domain_404=True)


def space_tree(dest: Path, example: str) -> Path:
    """A Space tree of an example env: its files, with the env's Dockerfile at the root."""
    shutil.copytree(EXAMPLES / example, dest, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copyfile(EXAMPLES / "echo_env" / "server" / "Dockerfile", dest / "Dockerfile")
    return dest


def staged_space(config: ReleaseConfig, env: str, tree: Path) -> StagedSpace:
    manifest = build_manifest(tree)
    return StagedSpace(env, config.space_id(env), tree, True, manifest, manifest_hash(manifest))


def release_config(root: Path) -> ReleaseConfig:
    return helpers.release_config(root, root / "staging", ref="main", dist="openenv", suffix=SUFFIX, jobs=8)


def deploy_examples(hub: LocalHub, root: Path, envs: dict[str, str]) -> list[StagedSpace]:
    """Deploy a Space tree per env (private candidates) the way a release does."""
    config = release_config(root)
    staged = [staged_space(config, env, space_tree(root / "staging" / env, example)) for env, example in envs.items()]
    step = root / "staging" / "stepfail_env" / "server" / "echo_environment.py"
    if step.exists():
        step.write_text(STEP_RAISES)
        staged = [staged_space(config, s.env, s.staged_dir) for s in staged]
    fence = Canonicals.of(envs, ())
    deployed = deploy_all(connect(hub), config, staged, fence=fence)
    assert all(d.ok for d in deployed), [d.error for d in deployed]
    return staged


def registry() -> PluginRegistry:
    return builtin_registry()


def connect(hub: LocalHub) -> Hub:
    return Hub.connect(hub.endpoint, token=hub.token, policy=FAST)


def tls(hub: LocalHub) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(hub.ca_bundle))


def verify(hub: LocalHub, *envs: str, plugins: PluginRegistry | None = None, **options: Any) -> dict[str, VerifyResult]:
    settings: dict[str, Any] = {"timeout": waits(30.0), "wait": waits(120.0), "interval": 0.2, "jobs": 8, "tls": tls(hub)} | options
    results = verify_spaces(
        connect(hub), [f"openenv/{e}{SUFFIX}" for e in envs], suffix=SUFFIX,
        registry=plugins or registry(), **settings,
    )
    return {r.env: r for r in results}


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    """One Hub for the module, with every example env deployed and started once."""
    root = tmp_path_factory.mktemp("verify")
    with LocalHub(root / "hub", scenario=Scenario(spaces=(TWO_DOMAINS,))) as running:
        deploy_examples(running, root, ENVS)
        yield running


def test_a_healthy_env_passes_with_reset_and_a_schema_derived_step(hub: LocalHub) -> None:
    result = verify(hub, "echo_env")["echo_env"]
    assert result.outcome is Outcome.PASS and result.success, result.reason
    attempt = result.attempts[0]
    requests = [(e.method, e.path, e.status) for e in attempt.result.transcript]
    assert requests == [("GET", "/health", 200), ("POST", "/reset", 200), ("GET", "/schema", 200), ("POST", "/step", 200)]
    assert result.verdict.outcome == "PASS" and result.verdict.commit == result.state.sha
    assert result.verdict.commit and len(result.verdict.commit) == 40


def test_health_200_with_reset_500_fails_and_is_pinned(hub: LocalHub, tmp_path: Path) -> None:
    result = verify(hub, "broken_env")["broken_env"]
    transcript = result.attempts[0].result.transcript
    assert transcript[0].status == 200  # /health was fine
    assert result.outcome is Outcome.FAIL and "POST /reset answered 500" in result.reason
    assert not result.our_error
    [decision] = pin_envs(connect(hub), checkout(tmp_path, "broken_env"), {"broken_env": result.verdict}, embedded_ok=True)
    assert decision.decision == "pin" and decision.changed


def checkout(root: Path, env: str) -> ReleaseConfig:
    """A release config over a checkout holding ``env`` (a copy of the echo example)."""
    shutil.copytree(EXAMPLES / "echo_env", root / "envs" / env, ignore=shutil.ignore_patterns("__pycache__"))
    return release_config(root)


def test_a_client_that_does_not_trust_the_domains_ca_is_ours_and_never_pinned(hub: LocalHub, tmp_path: Path) -> None:
    untrusting = ssl.create_default_context(cafile=certifi.where())  # no embedded-Hub CA in it
    result = verify(hub, "echo_env", tls=untrusting)["echo_env"]
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error, result.reason
    assert "does not trust the domain's certificate" in result.reason and "SSL_CERT_FILE" in result.reason
    config = checkout(tmp_path, "echo_env")
    pyproject = (config.repo / "envs" / "echo_env" / "pyproject.toml").read_text()
    [decision] = pin_envs(connect(hub), config, {"echo_env": result.verdict})
    assert decision.decision == "leave" and not decision.changed
    assert (config.repo / "envs" / "echo_env" / "pyproject.toml").read_text() == pyproject


def running_state(hub: LocalHub, env: str) -> SpaceState:
    return settle(connect(hub), f"openenv/{env}{SUFFIX}", wait=waits(60), interval=0.2)


def test_a_refused_connection_is_ours_not_the_spaces(hub: LocalHub) -> None:
    state = running_state(hub, "echo_env")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        gone = f"127.0.0.1:{sock.getsockname()[1]}"  # a domain nothing listens on once closed
    state = dataclasses.replace(state, domains=(Domain(gone, "READY"),))
    result = check_space(state, plan_for(registry(), "echo_env", 5.0), headers={}, tls=tls(hub))
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "refused before any HTTP answer" in result.reason


def test_health_errors_fail_only_on_every_ready_domain_of_a_running_space(hub: LocalHub) -> None:
    """Without the token a private Space's domains answer 404 for /health."""
    state = running_state(hub, "echo_env")
    plan = plan_for(registry(), "echo_env", 10.0)
    result = check_space(state, plan, headers={}, tls=tls(hub))
    assert result.outcome is Outcome.FAIL and "GET /health answered 404" in result.reason
    waking = dataclasses.replace(state, stage="SLEEPING")
    unsure = check_space(waking, plan, headers={}, tls=tls(hub))
    assert unsure.outcome is Outcome.INCONCLUSIVE and "once it is RUNNING" in unsure.reason


def test_every_candidate_is_probed_at_once_up_to_the_ceiling_a_flag_can_lower() -> None:
    assert (probe_jobs(None, 60), probe_jobs(None, 5), probe_jobs(None, 100)) == (60, 5, 64)
    assert (probe_jobs(16, 60), probe_jobs(100, 60), probe_jobs(None, 0)) == (16, 60, 1)


def test_reset_fine_but_step_500_fails(hub: LocalHub) -> None:
    result = verify(hub, "stepfail_env")["stepfail_env"]
    assert result.outcome is Outcome.FAIL and "POST /step answered 500" in result.reason
    assert result.as_json()["checks"]["POST /reset"] == 200


def test_first_domain_404_and_second_fine_passes_with_both_attempts(hub: LocalHub) -> None:
    result = verify(hub, "mirror_env")["mirror_env"]
    assert result.outcome is Outcome.PASS
    first, second = result.attempts
    assert first.result.outcome is Outcome.FAIL and "404" in first.result.reason
    assert second.result.outcome is Outcome.PASS
    data = result.as_json()
    assert data["domain"] == second.domain and len(data["domain_attempts"]) == 2


def test_a_private_space_passes_because_the_token_is_sent(hub: LocalHub) -> None:
    result = verify(hub, "echo_env")["echo_env"]
    assert result.outcome is Outcome.PASS
    url = f"https://{result.attempts[0].domain}"
    assert httpx.get(f"{url}/health", verify=tls(hub)).status_code == 404
    anonymous = probe_base_url(url, timeout=waits(10), verify=tls(hub))
    assert anonymous.outcome is Outcome.FAIL and "404" in anonymous.reason


def test_a_reset_slower_than_the_timeout_is_inconclusive_and_ours(hub: LocalHub) -> None:
    result = verify(hub, "slow_env", timeout=1.0)["slow_env"]
    assert result.outcome is Outcome.INCONCLUSIVE and "timed out" in result.reason
    assert result.our_error and "--timeout" in result.reason
    assert result.attempts[0].result.transcript[-1].status is None


def test_schema_derived_steps_are_accepted_for_three_action_shapes(hub: LocalHub) -> None:
    """echo's action is a plain required string; legacy's an enum and a nested model."""
    results = verify(hub, "legacy_env", "echo_env")
    answers = {}
    for env, result in results.items():
        assert result.outcome is Outcome.PASS, (env, result.reason)
        step = result.attempts[0].result.transcript[-1]
        assert (step.path, step.status) == ("/step", 200)
        answers[env] = step.body
    assert '"position":-1' in answers["legacy_env"]  # move "left" (first enum value), target.x 0
    assert '"echoed":""' in answers["echo_env"]  # the minimal string


def test_a_plugin_step_body_replaces_the_derived_one(hub: LocalHub) -> None:
    module = types.ModuleType("echo_probe_plugin")
    body = {"action": {"message": "from the plugin"}}
    module.openenv_release_envs = hookimpl(lambda: (EnvProfile("echo_env"),))  # type: ignore[attr-defined]
    module.openenv_release_probes = hookimpl(  # type: ignore[attr-defined]
        lambda env: (Probe("echo-step", "POST", "/step", body),) if env == "echo_env" else ()
    )
    sys.modules[module.__name__] = module
    try:
        plugins = PluginRegistry(get_plugin_manager([module.__name__], entry_points=False, disabled=()))
        result = verify(hub, "echo_env", plugins=plugins)["echo_env"]
    finally:
        sys.modules.pop(module.__name__)
    paths = [e.path for e in result.attempts[0].result.transcript]
    assert result.outcome is Outcome.PASS and "/schema" not in paths
    assert "from the plugin" in result.attempts[0].result.transcript[-1].body


def test_concurrent_probes_take_about_the_slowest_space(hub: LocalHub) -> None:
    envs = ("echo_env", "broken_env", "stepfail_env", "mirror_env", "legacy_env")
    verify(hub, *envs)  # every Space is up
    hub.reset_counters()
    start = time.monotonic()
    results = verify(hub, *envs)
    wall = time.monotonic() - start
    assert wall < sum(r.probe_seconds for r in results.values())
    assert max(r.probe_seconds for r in results.values()) > wall * 0.3
    assert hub.counters().by_endpoint.get("list_repos") == 1  # one listing for five Spaces
    assert [r.env for r in results.values()] == list(envs)


def test_json_holds_the_upstream_fields_outcome_and_timings(hub: LocalHub) -> None:
    data = verify(hub, "broken_env")["broken_env"].as_json()
    upstream = {"space", "stage", "domain", "runtime_error", "checks", "success", "domain_attempts"}
    assert upstream | {"outcome", "timings"} <= set(data)
    assert data["space"] == "openenv/broken_env-0.2.2" and data["success"] is False
    assert data["stage"] == "RUNNING" and data["outcome"] == "FAIL"
    attempt = data["domain_attempts"][0]
    assert attempt["transcript"][1] == {**attempt["transcript"][1], "request": "POST /reset", "status": 500}
    assert set(data["timings"]) == {"wait_s", "probe_s"}


def test_candidates_are_the_suffixed_spaces_of_the_namespace(hub: LocalHub) -> None:
    found = candidates(connect(hub), namespace="openenv", suffix=SUFFIX)
    assert found == sorted(f"openenv/{e}{SUFFIX}" for e in ENVS)
    chosen = candidates(connect(hub), namespace="openenv", suffix=SUFFIX, envs=["echo_env"], space_ids=["acme/x"])
    assert chosen == ["acme/x", "openenv/echo_env-0.2.2"]


def test_a_missing_space_is_inconclusive_without_waiting(hub: LocalHub) -> None:
    start = time.monotonic()
    result = verify(hub, "nope_env")["nope_env"]
    assert result.outcome is Outcome.INCONCLUSIVE and "not found" in result.reason
    assert result.our_error and "deploy it" in result.reason
    assert time.monotonic() - start < waits(5)


def test_env_names_and_slow_env_timeouts() -> None:
    assert env_of("openenv/echo_env-0.2.2", SUFFIX) == "echo_env"
    assert env_of("acme/other", SUFFIX) == "other"
    assert plan_for(registry(), "git_env", 20.0).timeout == 120.0
    assert plan_for(registry(), "echo_env", 20.0).timeout == 20.0


def test_the_verify_task_prints_json_records_the_ledger_and_exits_1_on_a_fail_5_on_nothing_decisive(hub: LocalHub, tmp_path: Path) -> None:
    checkout = tmp_path / "OpenEnv"
    (checkout / "envs").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "openenv"\nversion = "0.2.2"\n')
    ledger = tmp_path / "ledger.json"
    env = {**hub.client_env(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path), **offline(tmp_path)}
    args = ["verify", "--repo", str(checkout), "--env", "echo_env", "--env", "broken_env", "--wait", wait_flag(60), "--ledger", str(ledger), "--json"]
    done = cli(*args, env=env)
    assert done.returncode == 1, done.stderr
    outcomes = {entry["space"]: entry["outcome"] for entry in json.loads(done.stdout)}
    assert outcomes == {"openenv/echo_env-0.2.2": "PASS", "openenv/broken_env-0.2.2": "FAIL"}
    # deploy's board, as plain lines on stderr: stdout carries the JSON
    assert {"verify openenv/echo_env-0.2.2: probing", "verify openenv/broken_env-0.2.2: FAIL"} <= set(done.stderr.splitlines())
    recorded = json.loads(ledger.read_text())["envs"]
    assert recorded["echo_env"]["verify"]["outcome"] == "PASS" and recorded["echo_env"]["verify"]["status"] == "done"
    assert hub.token not in done.stdout + done.stderr + ledger.read_text()
    # nothing decisive: exit 5, and the INCONCLUSIVE attempt leaves the recorded PASS standing
    unsure = cli(*args[:5], "--timeout", "0.001", *args[7:], env=env)
    assert unsure.returncode == 5, unsure.stderr
    assert "nothing decisive for 1 env: see the remedies; rerun" in unsure.stderr
    assert "echo_env: INCONCLUSIVE is no evidence; the recorded PASS stands" in unsure.stderr
    assert json.loads(ledger.read_text())["envs"]["echo_env"]["verify"]["outcome"] == "PASS"


def test_verify_needs_no_checkout_and_never_runs_git(hub: LocalHub, tmp_path: Path) -> None:
    """No --repo: the tuple comes from the one ledger under the staging dir, or from --suffix."""
    fake_bin, marker = tmp_path / "bin", tmp_path / "git-was-called"
    fake_bin.mkdir()
    (fake_bin / "git").write_text(f"#!/bin/sh\necho \"$@\" >> {marker}\nexit 1\n")
    (fake_bin / "git").chmod(0o755)
    here = tmp_path / "not-a-checkout"
    ledger = here / "hf-staging" / "ledger-openenv-0.2.2.json"
    release = {"namespace": "openenv", "version": "0.2.2", "suffix": SUFFIX, "ref": "v0.2.2", "dist": "openenv-core"}
    Ledger.load(ledger, release)
    env = {
        **hub.client_env(), "PATH": f"{fake_bin}:/usr/bin:/bin", "HOME": str(tmp_path),
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return cli("verify", "--env", "echo_env", "--json", *args, cwd=here, env=env)

    from_ledger = run()
    assert from_ledger.returncode == 0, from_ledger.stderr
    assert json.loads(from_ledger.stdout)[0]["outcome"] == "PASS"
    assert json.loads(ledger.read_text())["envs"]["echo_env"]["verify"]["outcome"] == "PASS"
    from_suffix = run("--suffix", SUFFIX, "--staging-dir", str(tmp_path / "elsewhere"))
    assert from_suffix.returncode == 0, from_suffix.stderr
    assert json.loads(from_suffix.stdout)[0]["space"] == f"openenv/echo_env{SUFFIX}"
    # every step records itself: verify starts the release's ledger where there is none yet
    started = json.loads((tmp_path / "elsewhere" / "ledger-openenv-0.2.2.json").read_text())
    assert started["envs"]["echo_env"]["verify"]["outcome"] == "PASS" and not marker.exists()
    Ledger.load(ledger.with_name("ledger-openenv-0.3.0.json"), {**release, "version": "0.3.0", "suffix": "-0.3.0"})
    two = run()
    assert two.returncode == 2 and "2 release ledgers" in two.stderr and "--version" in two.stderr


FRONT_DOORS = {
    "reset 429, retried once then given up": {"path": "/reset", "status": 429, "retry_after": 0.1},
    "health 401": {"path": "/health", "status": 401},
    "schema 403": {"path": "/schema", "status": 403},
    "reset 302": {"path": "/reset", "status": 302, "body": "", "content_type": "text/plain"},
}


def domain_faults(*faults: dict[str, Any]) -> tuple[Fault, ...]:
    return Scenario.from_dict({"faults": [{"endpoint": "space_domain", **f} for f in faults]}).faults


@pytest.mark.parametrize("fault", FRONT_DOORS.values(), ids=list(FRONT_DOORS))
def test_answers_that_are_not_the_envs_are_inconclusive_never_fail(hub: LocalHub, fault: dict[str, Any]) -> None:
    """401/403 (our token), 429 (rate limit) and a redirect on any path: our error, no pin."""
    with hub.faults(*domain_faults(fault)):
        result = verify(hub, "echo_env")["echo_env"]
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error, result.reason
    statuses = [e.status for e in result.attempts[0].result.transcript]
    assert statuses[-1] == fault["status"] and statuses.count(429) in (0, 2)  # 429: one retry
    assert "HF_TOKEN can read the Space" in result.reason or "rerun later" in result.reason
    assert verify(hub, "echo_env")["echo_env"].outcome is Outcome.PASS  # the fault is gone after


def test_a_first_health_that_meets_our_time_out_is_asked_again_before_it_is_a_verdict(hub: LocalHub) -> None:
    """A server whose port is open while its workers still start (dipg_safety: gunicorn, 4
    workers) answers its first /health late: asked again, it passes; never answering, it is
    INCONCLUSIVE after HEALTH_TRIES asks, our time-out, never a FAIL."""
    timeout = waits(2.0)
    with hub.faults(*domain_faults({"path": "/health", "delay": timeout + 1, "count": 1})):
        result = verify(hub, "echo_env", timeout=timeout)["echo_env"]
    assert result.outcome is Outcome.PASS, result.reason
    asked = [(e.path, e.status) for a in result.attempts for e in a.result.transcript if e.path == "/health"]
    assert asked == [("/health", None), ("/health", 200)]
    with hub.faults(*domain_faults({"path": "/health", "delay": 3.0})):
        result = verify(hub, "echo_env", timeout=0.5)["echo_env"]
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error, result.reason
    assert f"timed out at our limit of 0.5 s per request, {HEALTH_TRIES} times" in result.reason
    assert [e.path for e in result.attempts[0].result.transcript] == ["/health"] * HEALTH_TRIES


def test_a_health_that_timed_out_then_was_refused_says_so() -> None:
    """The reason names what the last ask met and how many time-outs came before it: a server
    that takes the first connection without answering, then stops listening."""
    import socket
    import threading

    import httpx

    from releaselib.verify.http_session import Session

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []

    def take_one_then_stop() -> None:
        held.append(listener.accept()[0])  # never answered
        listener.close()  # the next ask is refused

    threading.Thread(target=take_one_then_stop, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    with httpx.Client(base_url=url, timeout=waits(1.0), trust_env=False) as client:
        session = Session(client, None)
        with pytest.raises(Stop) as stopped:
            session.send("GET", "/health", tries=HEALTH_TRIES)
    reason = stopped.value.reason
    assert reason.startswith("GET /health: the connection was refused") and "after 1 time-out(s)" in reason, reason
    assert [e.status for e in session.transcript] == [None, None]
    for conn in held:
        conn.close()


def test_a_429_whose_retry_after_is_short_is_retried_once(hub: LocalHub) -> None:
    with hub.faults(*domain_faults({"path": "/reset", "status": 429, "retry_after": 0, "count": 1})):
        result = verify(hub, "echo_env")["echo_env"]
    assert result.outcome is Outcome.PASS, result.reason
    assert [e.status for e in result.attempts[0].result.transcript][1:3] == [429, 200]
    assert verify(hub, "echo_env")["echo_env"].outcome is Outcome.PASS  # the fault is gone after


def test_inconclusive_never_replaces_a_standing_verdict_and_flips_keep_their_evidence(hub: LocalHub, tmp_path: Path) -> None:
    """PASS -> promoted -> a standalone verify at --timeout 0.001 (INCONCLUSIVE: kept as a later
    attempt) -> a FAIL with Space evidence (replaces the PASS; the flip keeps the PASS it acted on)."""
    from releaselib.ledger.report import build_report, render_briefing
    from releaselib.verify.candidates import record_result

    config = release_config(tmp_path)
    ledger = Ledger.load(tmp_path / "ledger.json", config.as_json())
    ledger.start_run(flags=[], envs=["echo_env"])
    ledger.record("echo_env", "deploy", space_id=f"openenv/echo_env{SUFFIX}", head="c1")
    passed = verify(hub, "echo_env")["echo_env"]
    assert record_result(ledger, passed)
    at = ledger.env("echo_env").get("verify").at
    ledger.record("echo_env", "promote", decision="promoted", targets=["openenv/echo_env"], verified_at=at)
    ledger = Ledger.load(ledger.path, config.as_json())  # standalone verify: outside any run

    unsure = verify(hub, "echo_env", timeout=0.001)["echo_env"]
    assert unsure.outcome is Outcome.INCONCLUSIVE and unsure.state.sha == passed.state.sha
    assert not record_result(ledger, unsure, by="verify")
    report = build_report(config, ledger)
    (entry,) = report["envs"]
    assert (entry["outcome"], entry["decision"], entry["evidence"]["at"]) == ("PASS", "promoted", at)
    assert report["inconclusive"] == [] and [e["env"] for e in report["evidence"]] == ["echo_env"]
    (later,) = entry["later_attempts"]
    assert later["outcome"] == "INCONCLUSIVE" and later["by"] == "standalone verify"
    text = render_briefing(report)
    assert "later attempt by standalone verify at " in text and "not evidence, the verdict above stands" in text

    state = running_state(hub, "echo_env")
    failed = check_space(state, plan_for(registry(), "echo_env", 10.0), headers={}, tls=tls(hub))
    assert failed.outcome is Outcome.FAIL and failed.state.sha == passed.state.sha
    assert record_result(ledger, failed, by="verify")
    report = build_report(config, ledger)
    (entry,) = report["envs"]
    (flip,) = report["evidence"]
    assert entry["outcome"] == "FAIL" and entry["evidence"]["by"] == "standalone verify"
    assert (flip["at"], flip["by"], flip["targets"]) == (at, "run 1", ["openenv/echo_env"])
    assert "the candidate now fails" in flip["warning"]
    assert "warning, echo_env: the candidate now fails" in render_briefing(report)


@pytest.fixture(scope="module")
def deployed_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hub state dir holding echo_env's candidate, for a Hub restarted on it."""
    root = tmp_path_factory.mktemp("front-doors")
    with LocalHub(root / "hub") as running:
        deploy_examples(running, root, {"echo_env": "echo_env"})
    return root / "hub"


def test_verify_of_a_paused_candidate_says_so_plainly(deployed_once: Path) -> None:
    from huggingface_hub import HfApi

    with LocalHub(deployed_once) as hub:
        api = HfApi(endpoint=hub.endpoint, token=hub.token)
        api.pause_space(f"openenv/echo_env{SUFFIX}")
        try:
            result = verify(hub, "echo_env")["echo_env"]
        finally:
            api.restart_space(f"openenv/echo_env{SUFFIX}")
    assert result.outcome is Outcome.INCONCLUSIVE and result.our_error
    assert "candidate is paused (cleanup --archive" in result.reason


def test_exit_status_is_1_for_a_fail_else_5_for_an_inconclusive_else_0() -> None:
    from releaselib.verify.verdicts import exit_status

    assert exit_status(["PASS", "INCONCLUSIVE", "FAIL"]) == (1, "")
    assert exit_status(["PASS", "INCONCLUSIVE", "INCONCLUSIVE"]) == (5, "nothing decisive for 2 envs: see the remedies; rerun")
    assert exit_status(["PASS"]) == exit_status([]) == (0, "")

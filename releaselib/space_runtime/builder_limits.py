"""What the embedded Hub's venv builder cannot do that a real Space build does: reach hosts
beyond the package registries, and run the RUN steps that are not Python installs (a ``git
clone``, ``apt-get``, ``npm``, a download). A build that fails for either is the builder's
doing (``BUILDER_MADE``), which verify calls INCONCLUSIVE: never the Space's evidence, never
a pin."""

from __future__ import annotations

import re
from collections.abc import Sequence

from releaselib.space_runtime.plan import RunStep
from releaselib.space_runtime.process import Layout

#: A host the build could not reach (this machine reaches only the package registries).
UNREACHABLE = re.compile(
    r"Could not resolve host[^\n]*|Temporary failure in name resolution|Name or service not known"
    r"|Network is unreachable|failed to lookup address[^\n]*|dns error[^\n]*"
    r"|Failed to connect to (?!127\.0\.0\.1|localhost)[^\n]*",
    re.IGNORECASE,
)
#: RUN commands the venv builder does not run: they fetch, build or install outside Python.
NOT_RUN = re.compile(
    r"(?<![\w./-])(?:git\s+clone|curl|wget|apt-get|apt|apk|yum|dnf|microdnf|npm|npx|yarn|pnpm"
    r"|playwright|make|cmake|cargo|go\s+build|conda|mamba|micromamba|huggingface-cli"
    r"|hf\s+download)(?![\w-])"
)


def skipped_steps(layout: Layout) -> list[RunStep]:
    """The RUN steps of the stages the final one needs that do what the builder does not run."""
    return [
        run
        for index in sorted(layout.roots)
        for run in layout.plan.stages[index].runs
        if NOT_RUN.search(run.text)
    ]


def builders_doing(message: str, skipped: Sequence[RunStep], line: int) -> str | None:
    """Why the install at Dockerfile ``line`` that failed with ``message`` (its log's last
    lines) is the builder's doing, or None when it is the Space's own failure."""
    if (unreachable := UNREACHABLE.search(message)) is not None:
        return (
            f"line {line} needs a host beyond the package registries ({unreachable.group(0)}), "
            "which the embedded Hub cannot reach; a real Space build can"
        )
    before = [run for run in skipped if run.line <= line]
    if not before:
        return None
    first = " ".join(before[0].text.split())
    shown = first if len(first) <= 80 else first[:79] + "…"
    lines = ", ".join(str(run.line) for run in before[:3])
    return (
        f"line {line} failed after RUN line(s) {lines} that the venv builder does not run "
        f"({shown}); a real Space build runs them"
    )

"""The command lines the board and the briefing print for a release: each runs as printed.

A line carries every flag that finds the release's checkout, staging dir, ledger and Hub, and
for ``release`` the options of its last run. Against a Hub on a loopback address (the embedded
Hub is one, the real Hub never), ``release`` and ``pin`` also carry the flag without which pin
refuses to write the checkout on the embedded Hub's verdicts (elsewhere the flag changes
nothing, so the line runs either way). When the tuple was
built from the ledger alone (no checkout known), a task that needs a checkout is printed to be
run from inside it, where it finds the checkout as the current directory.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from releaselib.config import NO_CHECKOUT, ReleaseConfig
from releaselib.hub.embedded import is_loopback
from releaselib.ledger.ledger import Ledger
from releaselib.ledger.paths import default_path

#: pin writes the checkout on the embedded Hub's verdicts only with this flag
EMBEDDED_FLAG = "--allow-embedded-hub"
#: the tasks that refuse the embedded Hub's verdicts without :data:`EMBEDDED_FLAG`
EMBEDDED_TASKS = frozenset({"release", "pin"})
#: the tasks that need no checkout: verify's tuple, and the ledger's readers
CHECKOUTLESS_TASKS = frozenset({"verify", "status", "report"})
#: where a command that needs the checkout runs when no checkout is known
FROM_CHECKOUT = "from inside the OpenEnv checkout"


class Commands:
    """Command lines for this release that run as printed."""

    def __init__(self, config: ReleaseConfig, ledger: Ledger) -> None:
        self.config, self.ledger_path = config, ledger.path
        self.embedded = bool(config.hub_endpoint) and is_loopback(str(config.hub_endpoint))
        runs = ledger.runs()
        self.run_flags: list[str] = list(runs[-1].get("flags", [])) if runs else []

    @property
    def checkout_known(self) -> bool:
        return self.config.repo != NO_CHECKOUT

    def needs_checkout(self, task: str) -> bool:
        """True when ``task``'s line runs only from inside the checkout (none is known)."""
        return not self.checkout_known and task not in CHECKOUTLESS_TASKS

    def line(self, task: str, *extra: str, envs: Sequence[str] = ()) -> str:
        """The command alone (see :meth:`needs_checkout` for where it runs)."""
        c = self.config
        args = ["openenv-release", task]
        if self.checkout_known:
            args += ["--repo", str(c.repo)]
        args += ["--version", c.version, "--namespace", c.namespace]
        args += ["--staging-dir", str(c.staging_dir)]
        if self.ledger_path.resolve() != default_path(c).resolve():
            args += ["--ledger", str(self.ledger_path)]
        if c.hub_endpoint:
            args += ["--hub-endpoint", c.hub_endpoint]
        given = list(extra)
        if task == "release":
            given = [f for f in self.run_flags if f not in extra] + given
        if self.embedded and task in EMBEDDED_TASKS and EMBEDDED_FLAG not in given:
            given.append(EMBEDDED_FLAG)
        args += [*given, *(a for env in envs for a in ("--env", env))]
        return shlex.join(args)

    def action(self, task: str, *extra: str, envs: Sequence[str] = ()) -> str:
        """The command as a next action: said to run from the checkout when it must."""
        command = self.line(task, *extra, envs=envs)
        return f"{FROM_CHECKOUT}, {command}" if self.needs_checkout(task) else command

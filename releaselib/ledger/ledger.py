"""The release ledger: one JSON file per release tuple that every step reads and records into.

Layout (schema 1)::

    {"schema": 1, "release": {...}, "created": "<UTC ISO>", "updated": "<UTC ISO>",
     "envs": {"<env>": {"<step>": {"status": "done", "at": "<UTC ISO>", "attempt": 1,
                                   "manifest_hash": "...", "run": 2, ...step data...}}},
     "history": {"<env>": [{"step": "<step>", ...a replaced or invalidated record...}]},
     "runs": [{"run": 1, "at": "<UTC ISO>", "flags": {...}}]}

``envs`` holds each step's standing record; ``history`` every record a later one replaced or
``invalidate_from`` dropped, and every ``attempt`` that left the standing one in place, oldest
first, so reports can be rebuilt from the whole release. ``runs`` lists the ``release`` runs;
records made during one carry its number.

Each record is persisted at once, under the ledger's lock (``releaselib.locks``): the file is
read again and the record applied to what it holds now, so records other runs made meanwhile
are kept; then written atomically (temp file in the same directory, fsync, ``os.replace``,
fsync of the directory), so a crash leaves the old file or the new one, never half of one. A
record carries the manifest hash of the content it was done for (the stage step's, unless
given), so a resumed run skips a step done for the same content, retries one that failed and
redoes an env whose staged content changed. Hub tokens are refused.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from releaselib.errors import LedgerError
from releaselib.files import write_atomic
from releaselib.ledger.token_refusal import refuse_tokens
from releaselib.locks import ledger_lock
from releaselib.records import check_env_name

SCHEMA = 1
#: ``baseline``: the canonicals as promote found them before writing; ``canonical``: their
#: verdicts after promotion (and any automatic rollback); ``rollback``: the rollback task.
STEPS = (
    "stage",
    "deploy",
    "verify",
    "baseline",
    "promote",
    "canonical",
    "collection",
    "pin",
    "cleanup",
    "rollback",
)
STATUSES = ("done", "failed")
RELEASE_KEYS = ("namespace", "version", "suffix")
#: The OpenEnv pin the release resolved once (``releaselib.stage.recorded_pin``).
PIN_KEYS = ("ref", "sha", "ref_reason", "dist")
_STAMPED = frozenset({"status", "at", "attempt", "run"})

Status = Literal["done", "failed"]


@dataclass(frozen=True)
class StepRecord:
    """What one step recorded for one env (``run``: the release run it came from, if any)."""

    step: str
    status: str
    at: str
    attempt: int
    manifest_hash: str | None
    data: Mapping[str, Any] = field(default_factory=dict)
    run: int | None = None


@dataclass(frozen=True)
class EnvEntry:
    """A snapshot of one env's records, in step order; later records don't change it."""

    name: str
    steps: Mapping[str, StepRecord]

    def get(self, step: str) -> StepRecord | None:
        return self.steps.get(step)

    @property
    def manifest_hash(self) -> str | None:
        """The hash of the env's staged content, from its stage record."""
        stage = self.steps.get("stage")
        return stage.manifest_hash if stage else None


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def _stamp_after(data: Mapping[str, Any]) -> str:
    """Now, or just after the file's last change if the clock has not moved past it (same
    tick, or set back): records are ordered by ``at``, so each must be later than the last."""
    now = datetime.now(UTC)
    last = data.get("updated")
    if isinstance(last, str):
        now = max(now, datetime.fromisoformat(last) + timedelta(microseconds=1))
    return now.isoformat(timespec="microseconds")


class Ledger:
    """One release's ledger file. Safe to record into from several threads."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self._data = data
        self._lock = threading.Lock()
        self._run: int | None = None

    @classmethod
    def load(cls, path: Path, release: Mapping[str, Any]) -> Ledger:
        """Open the ledger at ``path`` for ``release``, creating an empty one if it is missing.

        LedgerError for a corrupt file, a newer schema or another release tuple.
        """
        missing = [key for key in RELEASE_KEYS if key not in release]
        if missing:
            raise ValueError(f"release lacks {', '.join(missing)}")
        refuse_tokens(release, where="release")
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            with ledger_lock(path):
                if not path.exists():
                    now = utc_now()
                    fresh = {"schema": SCHEMA, "release": dict(release), "created": now}
                    _write(path, {**fresh, "updated": now, "envs": {}})
        data = _read(path)
        _check_release(path, data["release"], release)
        ledger = cls(path, data)
        if release.get("sha") and not data["release"].get("sha"):
            ledger._record_pin(release)
        return ledger

    def _record_pin(self, release: Mapping[str, Any]) -> None:
        """Record the OpenEnv pin (ref, sha, why, dist) in a ledger made without one (by
        ``verify``, or before pins were shas); a pin recorded already is never replaced."""
        pin = {key: release[key] for key in PIN_KEYS if key in release}

        def change(current: dict[str, Any]) -> dict[str, Any]:
            if current["release"].get("sha"):
                return current
            return {**current, "release": {**current["release"], **pin}}

        self._commit(change)

    def env(self, name: str) -> EnvEntry:
        """A snapshot of ``name``'s records (empty if it has none)."""
        with self._lock:
            raw = copy.deepcopy(self._data["envs"].get(name, {}))
        ordered = {step: _step_record(step, raw[step]) for step in STEPS if step in raw}
        return EnvEntry(name, ordered)

    def envs(self) -> list[str]:
        """Names of the envs with records, sorted."""
        with self._lock:
            return sorted(self._data["envs"])

    def history(self, env: str, step: str | None = None) -> list[StepRecord]:
        """Every record of ``env`` (of ``step`` only, if given), oldest first: the replaced
        and invalidated ones, then the current ones."""
        with self._lock:
            old = copy.deepcopy(self._data.get("history", {}).get(env, []))
            now = copy.deepcopy(self._data["envs"].get(env, {}))
        records = [_step_record(r.pop("step"), r) for r in old]
        records += [_step_record(s, r) for s, r in now.items()]
        chosen = [r for r in records if step is None or r.step == step]
        return sorted(chosen, key=lambda r: r.at or "")

    def runs(self) -> list[dict[str, Any]]:
        """The ``release`` runs recorded so far, oldest first."""
        with self._lock:
            return copy.deepcopy(list(self._data.get("runs", [])))

    def start_run(self, **info: Any) -> int:
        """Begin a ``release`` run: persist it with ``info`` and stamp its number on every
        record made from now on; return the number."""
        refuse_tokens(info, where="run")
        detached = json.loads(json.dumps(info))
        numbers: list[int] = []

        def change(data: dict[str, Any]) -> dict[str, Any]:
            runs = list(data.get("runs", []))
            numbers[:] = [len(runs) + 1]
            at = _stamp_after(data)
            runs.append({"run": numbers[0], "at": at, **detached})
            return {**data, "runs": runs, "updated": at}

        with self._lock:
            self._commit(change)
            self._run = numbers[0]
        return numbers[0]

    def record(self, env: str, step: str, *, status: Status = "done", **data: Any) -> StepRecord:
        """Record what ``step`` did for ``env`` and persist the ledger before returning.

        ``data`` must be JSON-serialisable and hold no Hub token. Stamped: ``status``, ``at``
        (UTC), ``attempt`` (1 + the previous attempt) and ``manifest_hash`` (the stage record's
        unless given).
        """
        return self._add(env, step, status, data, standing=True)

    def attempt(self, env: str, step: str, *, status: Status = "failed", **data: Any) -> StepRecord:
        """Record an attempt of ``step`` that leaves its current record standing: it goes to
        ``env``'s history only (e.g. an INCONCLUSIVE verify after a PASS for the same head)."""
        return self._add(env, step, status, data, standing=False)

    def _add(
        self, env: str, step: str, status: str, data: Mapping[str, Any], *, standing: bool
    ) -> StepRecord:
        _check_step(check_env_name(env), step)
        if status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
        if _STAMPED & data.keys():
            raise ValueError(f"{sorted(_STAMPED & data.keys())} are stamped by the ledger")
        refuse_tokens(data, where=f"{env}/{step}")
        detached = json.loads(json.dumps(data))
        made: dict[str, Any] = {}

        def change(current: dict[str, Any]) -> dict[str, Any]:
            steps = current["envs"].get(env, {})
            at = _stamp_after(current)
            stamped = {
                "status": status,
                "at": at,
                "attempt": steps.get(step, {}).get("attempt", 0) + 1,
                "manifest_hash": steps.get("stage", {}).get("manifest_hash"),
                **({"run": self._run} if self._run is not None else {}),
            }
            entry = {**stamped, **detached}
            made.update(entry)
            if standing:
                changed = _with_env(current, env, {**steps, step: entry})
            else:
                changed = _with_history(current, env, steps, [{"step": step, **entry}])
            return {**changed, "updated": at}

        with self._lock:
            self._commit(change)
        return _step_record(step, copy.deepcopy(made))

    def done(self, env: str, step: str, manifest_hash: str) -> bool:
        """True if ``step`` succeeded for ``env`` with this same staged content."""
        record = self.env(env).get(_check_step(env, step))
        if record is None:
            return False
        return record.status == "done" and record.manifest_hash == manifest_hash

    def invalidate_from(self, env: str, step: str) -> tuple[str, ...]:
        """Forget ``step`` and every later step of ``env`` so they are redone; return them."""
        later = STEPS[STEPS.index(_check_step(env, step)) :]
        dropped: list[str] = []

        def change(current: dict[str, Any]) -> dict[str, Any]:
            steps = current["envs"].get(env, {})
            dropped[:] = [s for s in later if s in steps]
            if not dropped:
                return current
            return _with_env(current, env, {s: r for s, r in steps.items() if s not in dropped})

        with self._lock:
            self._commit(change)
        return tuple(dropped)

    def to_json(self) -> dict[str, Any]:
        """A deep copy of the whole ledger, as written to the file."""
        with self._lock:
            return copy.deepcopy(self._data)

    def _commit(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Under the ledger's file lock, apply ``change`` to the file as it is now (other runs
        may have recorded since this one read it), persist the result and adopt it; hold
        ``self._lock``. If the write fails, the ledger in memory stays as it was."""
        with ledger_lock(self.path):
            try:
                current = _read(self.path)
            except LedgerError:  # gone or spoilt since it was loaded: keep what this run knows
                current = self._data
            candidate = change(current)
            if candidate is not current:
                _write(self.path, candidate)
            self._data = candidate


def _with_env(data: dict[str, Any], env: str, steps: dict[str, Any]) -> dict[str, Any]:
    """``data`` with ``env``'s records replaced; the replaced ones go to its history."""
    old = data["envs"].get(env, {})
    gone = [{"step": s, **r} for s, r in old.items() if steps.get(s) is not r]
    return _with_history(data, env, steps, gone)


def _with_history(
    data: dict[str, Any], env: str, steps: dict[str, Any], gone: list[dict[str, Any]]
) -> dict[str, Any]:
    """``data`` with ``env``'s records ``steps`` and ``gone`` added to its history."""
    history = dict(data.get("history", {}))
    if gone:
        history[env] = [*history.get(env, []), *gone]
    envs = {**data["envs"], env: steps}
    return {**data, "envs": envs, "history": history, "updated": _stamp_after(data)}


def _write(path: Path, data: dict[str, Any]) -> None:
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    try:
        write_atomic(path, text.encode("utf-8"))
    except OSError as exc:  # a full disk, a quota, a read-only mount: the old file stands
        raise LedgerError(
            f"{path}: cannot write the ledger ({exc.strerror or exc}); it holds what it held "
            "before this record",
            remedy=f"free space on the disk of {path.parent} (or pass --ledger elsewhere), "
            "then rerun: the run resumes from the ledger",
        ) from None


def recorded_release(path: Path) -> dict[str, Any]:
    """The release tuple the ledger at ``path`` records, read without opening it for a run;
    LedgerError if it is corrupt or from a newer tool."""
    return dict(_read(path)["release"])


def _check_step(env: str, step: str) -> str:
    if step not in STEPS:
        raise ValueError(f"{env}: unknown step {step!r}; steps are {', '.join(STEPS)}")
    return step


def _step_record(step: str, raw: dict[str, Any]) -> StepRecord:
    stamped = {key: raw.pop(key, None) for key in (*_STAMPED, "manifest_hash")}
    return StepRecord(
        step,
        stamped["status"],
        stamped["at"],
        stamped["attempt"],
        stamped["manifest_hash"],
        raw,
        stamped["run"],
    )


def _read(path: Path) -> dict[str, Any]:
    """The parsed ledger at ``path``; LedgerError if it is corrupt or from a newer tool."""
    recover = (
        f"move it aside (mv {path} {path}.bad) to start this release's ledger afresh, "
        "or restore it from a backup"
    )
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LedgerError(f"{path}: not a readable release ledger ({exc})", remedy=recover) from exc
    schema = data.get("schema") if isinstance(data, dict) else None
    if isinstance(schema, int) and schema > SCHEMA:
        raise LedgerError(
            f"{path}: ledger schema {schema} is newer than this tool's ({SCHEMA})",
            remedy="upgrade openenv-release, or pass --ledger PATH to keep a separate ledger",
        )
    if schema != SCHEMA or not _well_formed(data):
        raise LedgerError(f"{path}: not a release ledger (schema {schema!r})", remedy=recover)
    return dict(data)


def _well_formed(data: dict[str, Any]) -> bool:
    """True if ``data`` has a release and envs mapping env -> step -> record."""
    envs = data.get("envs")
    return (
        isinstance(data.get("release"), dict)
        and isinstance(envs, dict)
        and all(isinstance(steps, dict) for steps in envs.values())
        and all(isinstance(r, dict) for steps in envs.values() for r in steps.values())
    )


def _check_release(path: Path, recorded: Mapping[str, Any], release: Mapping[str, Any]) -> None:
    """LedgerError if the ledger belongs to another (namespace, version, suffix)."""
    theirs = tuple(recorded.get(key) for key in RELEASE_KEYS)
    ours = tuple(release[key] for key in RELEASE_KEYS)
    if theirs != ours:
        raise LedgerError(
            f"{path} records release {_show(theirs)}, not this run's {_show(ours)}",
            remedy="pass --ledger PATH for this release, or rerun with the recorded tuple",
        )
    pinned, sha = recorded.get("sha"), release.get("sha")
    if pinned and sha and pinned != sha:
        raise LedgerError(
            f"{path} records the OpenEnv pin {pinned}, not this run's {sha} (one per release)",
            remedy="rerun without --ref (the ledger's pin is used), or pass --ledger PATH for "
            "another release",
        )


def _show(values: tuple[Any, ...]) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in zip(RELEASE_KEYS, values, strict=True)) + ")"

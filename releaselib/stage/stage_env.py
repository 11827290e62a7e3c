"""Build one env's staged Space tree, as Spaces builds need it (its manifest, claim and swap are
``releaselib.stage.staged_tree``).

Layout: ``src/``, ``envs/<env>/``, the env's files at the root (its pyproject.toml wins over the
checkout's root one), a rewritten ``Dockerfile`` and ``README.md`` at the root, and legacy
``src/core/`` only for Dockerfiles that copy it. The checkout is only read.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from releaselib.config import ReleaseConfig
from releaselib.edit import (
    pyproject_deps,
    readme,
    requirements_txt,
    unrewritable_manifests,
)
from releaselib.edit.dockerfile_model import Dockerfile
from releaselib.edit.legacy_core import synthesize_legacy_core
from releaselib.errors import ReleaseError, StageError, UsageError, short
from releaselib.options import check_staging_dir
from releaselib.plugins import Owned, PluginRegistry
from releaselib.records import (
    AllowedSecret,
    Change,
    Check,
    EnvSpec,
    Finding,
    Fix,
    SecretFinding,
    StagedSpace,
)
from releaselib.shell import Runner
from releaselib.shell import run as default_run
from releaselib.stage import env_facts, git_needs
from releaselib.stage.gitfiles import GitFiles, list_files, on_disk
from releaselib.stage.staged_dockerfile import rewrite_for_space
from releaselib.stage.staged_tree import (
    build_manifest,
    claim,
    install,
    manifest_hash,
    prepare_staging_dir,
    remove_leftovers,
    temp_prefix,
    walk_files,
)

if TYPE_CHECKING:
    from releaselib.stage.secretscan import Scanner

SKIP_DIRS = frozenset(
    {
        ".venv",
        "venv",
        ".git",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        ".mypy_cache",
        "node_modules",
        ".tox",
        ".nox",
    }
)
SKIP_FILES = frozenset({".DS_Store", "uv.lock"})
SKIP_SUFFIXES = (".pyc", ".pyo")
#: Files that look like credentials (fnmatch on the lower-cased name, or on the last folders and
#: the name when the pattern has a '/'): never staged, and each one left out is recorded.
CREDENTIALS = (
    ".env*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    "credentials*.json",
    ".aws/credentials",
    ".ssh/*",
    ".huggingface/*token*",
    ".cache/huggingface/*token*",
)
CREDENTIALS_WHY = "credentials are never staged"
#: The checkout's parts staging reads, as git pathspecs.
STAGED_PATHS = ("envs", "src", "pyproject.toml")
#: The largest file a staged tree may hold. The Hub takes larger files only through LFS/Xet, and
#: Spaces build and restart slowly with big repos; data and checkpoints belong in a Hub dataset
#: or model repo that the env downloads at startup.
MAX_FILE_BYTES = 50_000_000


def junk(name: str, is_dir: bool) -> bool:
    """True for build junk and locks that never go into a Space."""
    if is_dir:
        return name in SKIP_DIRS
    return name in SKIP_FILES or name.endswith(SKIP_SUFFIXES)


def credentials(rel: Path) -> bool:
    """True if the file at ``rel`` (relative to the folder being copied) looks like credentials."""
    parts = [part.lower() for part in rel.parts]
    for pattern in CREDENTIALS:
        depth = pattern.count("/") + 1
        if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
            return True
    return False


@dataclass
class StageRun:
    """What the envs of one staging run share: the checkout's git listing, the secret
    scanner's memory, and the secrets allowed by ``--allow-secret``."""

    allowed: tuple[AllowedSecret, ...] = ()
    runner: Runner = default_run
    _listings: dict[Path, GitFiles | None] = field(default_factory=dict)
    _scanner: Scanner | None = None

    def listing(self, repo: Path) -> GitFiles | None:
        """What git tracks under envs/, src/ and the root pyproject; None outside git."""
        if repo not in self._listings:
            self._listings[repo] = list_files(repo, STAGED_PATHS, self.runner)
        return self._listings[repo]

    def scanner(self) -> Scanner:
        if self._scanner is None:
            from releaselib.stage.secretscan import Scanner  # detect-secrets is slow to import

            self._scanner = Scanner()
        return self._scanner


def allow_flags(values: Iterable[str], repo: Path) -> tuple[AllowedSecret, ...]:
    """``--allow-secret PATH`` values as records: each an exact checkout file (never a
    pattern), recorded with the path as given; a path outside the checkout is a UsageError."""
    allowed = []
    for value in values:
        path = Path(value)
        if path.is_absolute() and path.resolve().is_relative_to(repo):
            path = path.resolve().relative_to(repo)
        remedy = "give the path the finding named, e.g. envs/my_env/settings.ini"
        if any(c in value for c in "*?[") and not (repo / path).exists():
            raise UsageError(
                f"--allow-secret {value!r}: an exact path, not a pattern", remedy=remedy
            )
        try:
            allowed.append(AllowedSecret(path.as_posix(), why=f"--allow-secret {value}"))
        except ValueError as exc:
            raise UsageError(
                f"--allow-secret {value!r}: not a file of the checkout {repo}", remedy=remedy
            ) from exc
    return tuple(allowed)


def resolved(link: Path, root: Path, listing: GitFiles | None) -> tuple[Path, str]:
    """The target of ``link`` and its checkout-relative path; StageError for a loop, a target
    outside ``root`` or inside ``.git/``, or (in git) a file git does not track."""
    name = short(str(link.relative_to(root)))
    try:
        target = link.resolve(strict=True)
    except (RuntimeError, OSError) as exc:
        raise StageError(
            f"{name}: symlink loop or dangling symlink",
            remedy="replace it with a real file or a link to one in the checkout",
        ) from exc
    if not target.is_relative_to(root.resolve()):
        raise StageError(
            f"{name}: symlink points outside the checkout ({short(str(target))})",
            remedy="replace it with a real file or a link inside the checkout",
        )
    inner = target.relative_to(root.resolve()).as_posix()
    if ".git" in inner.split("/"):
        why = "inside .git/"
    elif listing is None:
        return target, inner
    elif target.is_dir():
        prefix = inner.rstrip("/") + "/"
        if any(p.startswith(prefix) for p in listing.everywhere) or inner == ".":
            return target, inner
        why = "a folder git tracks nothing in"
    elif inner in listing.everywhere:
        return target, inner
    else:
        why = "a file git does not track"
    raise StageError(
        f"{name}: a symlink to {short(inner)}, {why}",
        remedy="staging takes only files git tracks; link to a tracked file or remove the link",
    )


def walked(base: Path) -> list[str]:
    """Every file and symlink under ``base`` (posix, relative), junk folders pruned."""
    found = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not junk(d, True))
        links = [d for d in dirnames if (here / d).is_symlink()]
        found += [(here / n).relative_to(base).as_posix() for n in (*filenames, *links)]
    return sorted(found)


def files_under(
    repo: Path, folder: str, listing: GitFiles | None, seen: tuple[Path, ...] = ()
) -> Iterator[tuple[str, Path, str]]:
    """(path relative to ``folder``, file to read, its checkout-relative path) for what staging
    takes from ``folder`` (checkout-relative): what git tracks there (everything, outside git),
    without junk; symlinks to what git tracks in the checkout followed, loops refused."""
    base = repo / folder
    seen = seen or (base.resolve(),)
    if listing is None:
        names = walked(base) if base.is_dir() else []
    else:
        prefix = folder + "/"
        submodule = next((p for p in sorted(listing.submodules) if p.startswith(prefix)), None)
        if submodule is not None:
            raise StageError(
                f"{short(submodule)}: a git submodule; staging takes files git tracks in this "
                "repository",
                remedy="vendor its files into the env, or install it as a dependency",
            )
        names = sorted(p.removeprefix(prefix) for p in listing.tracked if p.startswith(prefix))
        if not names:  # a folder a symlink points at, outside the listed parts of the checkout
            names = [
                p.removeprefix(prefix)
                for p in sorted(listing.everywhere)
                if p.startswith(prefix) and on_disk(repo, p)
            ]
    for rel in names:
        if junk_path(rel):
            continue
        path = base / rel
        if any(not c.isprintable() for c in rel):
            raise StageError(
                f"{short(f'{folder}/{rel}')}: a file name with a control character",
                remedy="rename it in the checkout",
            )
        if not path.is_symlink():
            yield rel, path, f"{folder}/{rel}"
            continue
        target, inner = resolved(path, repo, listing)
        if not target.is_dir():
            yield rel, path, inner
            continue
        if any(target == s or s.is_relative_to(target) for s in seen):
            raise StageError(
                f"{short(f'{folder}/{rel}')}: symlink loop (to {short(str(target))})",
                remedy="remove the link or point it at a folder outside its own",
            )
        for sub, source, origin in files_under(repo, inner, listing, (*seen, target)):
            yield f"{rel}/{sub}", source, origin


@dataclass(frozen=True)
class Sources:
    """The checkout files one env's staged tree is made of, and what was left out."""

    files: dict[str, Path]  # staged path -> checkout file
    scanned: dict[str, Path]  # checkout-relative path -> checkout file, each once
    credentials: tuple[str, ...]  # staged paths of credential files left out
    modified: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()


def sources(spec: EnvSpec, repo: Path, listing: GitFiles | None, scanner: Scanner) -> Sources:
    """Map each file of ``src/``, ``envs/<env>/`` (again at the root) and the root
    pyproject.toml to its staged path; credential files are left out and named. A file name
    holding a token fails the env; names listed in the output have their tokens redacted."""
    env_dir = spec.path.relative_to(repo).as_posix()
    files: dict[str, Path] = {}
    scanned: dict[str, Path] = {}
    left_out: list[str] = []
    parts = [("src", ("src",)), (env_dir, (f"envs/{spec.name}", ""))]
    for folder, destinations in parts:
        for rel, source, origin in files_under(repo, folder, listing):
            if credentials(Path(rel)) or credentials(Path(origin)):
                left_out.append(scanner.redact(f"{destinations[0]}/{rel}")[0])
                continue
            shown, kinds = scanner.redact(f"{folder}/{rel}")
            if kinds:
                raise StageError(
                    f"{short(shown, 160)}: a file name holding a {kinds[0]}",
                    remedy="rename the file in the checkout (and revoke the token)",
                )
            scanned[f"{folder}/{rel}"] = source
            for dest in destinations:
                files[f"{dest}/{rel}".lstrip("/")] = source
    root_pyproject = repo / "pyproject.toml"
    tracked = listing is None or "pyproject.toml" in listing.tracked
    if "pyproject.toml" not in files and tracked and root_pyproject.is_file():
        files["pyproject.toml"] = scanned["pyproject.toml"] = root_pyproject
    if listing is None:
        return Sources(files, scanned, tuple(left_out))
    mine = listing.under(env_dir)
    untracked = sorted(scanner.redact(p)[0] for p in mine.untracked if not junk_path(p))
    if not mine.tracked and untracked:
        raise StageError(
            f"{env_dir}: git tracks none of its files ({len(untracked)} untracked)",
            remedy="commit the env to release it",
        )
    modified = sorted(scanner.redact(p)[0] for p in mine.modified)
    return Sources(files, scanned, tuple(left_out), tuple(modified), tuple(untracked))


def junk_path(rel: str) -> bool:
    parts = rel.split("/")
    return any(junk(d, True) for d in parts[:-1]) or junk(parts[-1], False)


def lay_out(found: Sources, stage_dir: Path) -> list[Change]:
    """Copy ``found``'s files into an empty ``stage_dir``; a Change per credential file left
    out, named by its staged path."""
    for dest, source in found.files.items():
        target = stage_dir / dest
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return [
        Change(path, None, path.rsplit("/", 1)[-1], "", CREDENTIALS_WHY)
        for path in found.credentials
    ]


def scan_secrets(
    found: Sources, scanner: Scanner, allowed: Sequence[Owned[AllowedSecret]]
) -> tuple[SecretFinding, ...]:
    """The findings ``allowed`` lets through (each recorded with who allowed it); StageError
    naming the first other finding."""
    passed, refused = [], []
    for finding in scanner.scan(sorted(found.scanned.items())):
        allow = next(
            (
                a
                for a in allowed
                if (
                    finding.path == a.record.path
                    if a.plugin == "--allow-secret"
                    else fnmatch.fnmatchcase(finding.path, a.record.path)
                )
                and a.record.kind in (None, finding.kind)
                and a.record.sha256 in (None, finding.sha256)
            ),
            None,
        )
        if allow is None:
            refused.append(finding)
        else:
            by = a_source(allow)
            passed.append(replace(finding, allowed_by=by))
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise StageError(
            f"{short(str(refused[0]), 160)}{more}",
            remedy="take the secret out of the file (and revoke it if it was ever pushed); "
            f"for a false positive, --allow-secret {short(refused[0].path, 160)}",
        )
    return tuple(passed)


def a_source(allow: Owned[AllowedSecret]) -> str:
    if allow.plugin == "--allow-secret":
        return allow.record.why
    return f"plugin {allow.plugin}: {allow.record.why}"


def read_text(path: Path, stage_dir: Path) -> str:
    """A staged text file's content; a non-UTF-8 file is a StageError naming it."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        rel = path.relative_to(stage_dir)
        raise StageError(
            f"{rel}: not UTF-8 (byte {exc.start})", remedy="save the file as UTF-8 in the checkout"
        ) from exc


def rewrite_file(
    path: Path, stage_dir: Path, rewrite: Callable[[str, str], tuple[str, Sequence[Change]]]
) -> list[Change]:
    """Apply ``rewrite(text, relpath)`` to one staged file, writing it back only if it changed."""
    rel = path.relative_to(stage_dir).as_posix()
    text = read_text(path, stage_dir)
    new, changes = rewrite(text, rel)
    if new != text:
        path.write_bytes(new.encode("utf-8"))
    return list(changes)


def copies_legacy_core(dockerfile: Dockerfile) -> bool:
    return any(
        source.rstrip("/") in {"src/core", "./src/core"}
        for stage in dockerfile.stages
        for c in dockerfile.copies(stage)
        if c.from_ is None
        for source in c.sources
    )


def check_sizes(stage_dir: Path) -> None:
    """StageError naming the first staged file over MAX_FILE_BYTES, if any."""
    sizes = ((p, p.stat().st_size) for p in walk_files(stage_dir))
    big = [(p, size) for p, size in sizes if size > MAX_FILE_BYTES]
    if big:
        path, size = big[0]
        more = f" (and {len(big) - 1} more)" if len(big) > 1 else ""
        raise StageError(
            f"{path.relative_to(stage_dir).as_posix()} is {size / 1e6:,.1f} MB{more}, over the "
            f"{MAX_FILE_BYTES / 1e6:g} MB limit for a staged file",
            remedy="drop it with a plugin fix (openenv-release plugin.new), or host it in a Hub "
            "dataset and download it at startup",
        )


@contextmanager
def plugin_failures(owned: Owned[Fix] | Owned[Check]) -> Iterator[None]:
    """Turn what a plugin's fix or check raises into a StageError naming it."""
    try:
        yield
    except ReleaseError:
        raise
    except Exception as exc:
        kind = "fix" if isinstance(owned.record, Fix) else "check"
        raise StageError(
            f"{kind} {owned.record.name} of plugin {owned.plugin} failed: "
            f"{type(exc).__name__}: {exc}",
            remedy="fix the plugin or disable it with OPENENV_RELEASE_DISABLE_PLUGINS",
        ) from exc


@functools.lru_cache(maxsize=64)
def pinned_pyproject(text: str, path: str, dist: str, ref: str) -> tuple[str, tuple[Change, ...]]:
    """``rewrite_pyproject``, memoised: the env's pyproject is staged twice and tomlkit is slow."""
    new, changes = pyproject_deps.rewrite_pyproject(text, path=path, dist=dist, ref=ref)
    return new, tuple(changes)


def rewrite_staged(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The release's rewrites of pyprojects, requirements, Dockerfile and README.

    Pinned: the root and env pyprojects, every ``requirements*.txt`` outside ``src/``, and every
    requirements file or pyproject the Dockerfile installs from (``-r``/``-c`` followed). The
    Dockerfile is rewritten last, with the tree as its context, so git goes into every stage
    that installs a git+ requirement.
    """
    changes: list[Change] = []
    pin = {"dist": config.dist, "ref": config.ref}
    assert spec.dockerfile is not None
    source_rel = spec.dockerfile.relative_to(spec.path).as_posix()
    text = read_text(stage_dir / source_rel, stage_dir)
    original = Dockerfile.parse(text, f"envs/{spec.name}/{source_rel}")  # errors name the file
    for name in ("setup.py", "setup.cfg"):  # Python code staging does not edit
        setup = stage_dir / name
        named = (
            unrewritable_manifests.setup_requirement(name, read_text(setup, stage_dir))
            if setup.is_file()
            else None
        )
        if named:
            raise StageError(
                f"envs/{spec.name}/{name}: install_requires names {named!r}, which staging "
                "cannot pin to the release",
                remedy="move the OpenEnv requirement to pyproject.toml or requirements.txt",
            )
    # no comment-keeping YAML editor: refuse
    for env_file in git_needs.conda_environments(stage_dir):
        rel = env_file.relative_to(stage_dir).as_posix()
        unrewritable_manifests.check_conda_environment(
            read_text(env_file, stage_dir), path=rel, **pin
        )
    files = staged_requirement_files(original, spec, stage_dir)
    constraints = git_needs.constraint_only(original, stage_dir, files)
    for file in files:
        if file.suffix == ".toml":
            changes += rewrite_file(file, stage_dir, lambda t, p: pinned_pyproject(t, p, **pin))
        else:
            only_c = file in constraints
            changes += rewrite_file(
                file,
                stage_dir,
                lambda t, p, c=only_c: requirements_txt.rewrite_requirements_txt(  # type: ignore[misc]
                    t, path=p, constraints=c, dist=config.dist, ref=config.ref
                ),
            )
    new, dockerfile_changes = rewrite_for_space(  # change lines are lines of the staged file
        text, path="Dockerfile", base_image=config.base_image, context=stage_dir, **pin
    )
    (stage_dir / "Dockerfile").write_bytes(new.encode("utf-8"))
    changes += dockerfile_changes
    if copies_legacy_core(Dockerfile.parse(new, "Dockerfile")):
        synthesize_legacy_core(stage_dir)
    changes += stage_readme(config, spec, stage_dir)
    return changes


def staged_requirement_files(df: Dockerfile, spec: EnvSpec, stage_dir: Path) -> list[Path]:
    """The staged files whose OpenEnv requirements are pinned, each once, in a stable order."""
    pyprojects = [stage_dir / "pyproject.toml", stage_dir / "envs" / spec.name / "pyproject.toml"]
    named = [
        p
        for p in sorted(stage_dir.rglob("requirements*.txt"))
        if p.relative_to(stage_dir).parts[0] != "src"
    ]
    files = [
        *pyprojects,
        *(f for n in named for f in git_needs.with_includes(n)),
        *git_needs.installed_files(df, stage_dir),
    ]
    return [
        f
        for f in dict.fromkeys(files)
        if f.is_file() and f.resolve().is_relative_to(stage_dir.resolve())
    ]


def stage_readme(config: ReleaseConfig, spec: EnvSpec, stage_dir: Path) -> list[Change]:
    """The Space card, with the port and client class read from the staged copy of the env
    (what git tracks), never from the checkout."""
    staged_env = stage_dir / "envs" / spec.name
    readme_path = stage_dir / "README.md"
    source = read_text(readme_path, stage_dir) if readme_path.is_file() else None
    text, changes = readme.build_space_readme(
        source,
        path="README.md",
        env=spec.name,
        space_id=config.space_id(spec.name),
        version=config.version,
        ref=config.ref,
        hub_tag=config.hub_tag,
        app_port=env_facts.read_app_port(staged_env, f"envs/{spec.name}"),
        client_class=env_facts.find_client_class(staged_env),
    )
    readme_path.write_bytes(text.encode("utf-8"))
    return changes


def stage_env(
    config: ReleaseConfig, spec: EnvSpec, registry: PluginRegistry, run: StageRun | None = None
) -> StagedSpace:
    """Stage one env. Its failures are returned as a record (``ok=False``), never raised; a
    staging dir that cannot be written is a UsageError."""
    run = run or StageRun()
    space_id = config.space_id(spec.name)
    final_dir = config.staging_dir / config.namespace / f"{spec.name}{config.suffix}"
    base = StagedSpace(env=spec.name, space_id=space_id, staged_dir=final_dir, ok=False)
    if not spec.deployable:
        return replace(base, error=f"{spec.name}: not deployable ({spec.reason})")
    prepare_staging_dir(config.staging_dir, config.namespace)
    listing = None
    work = None
    fixes: list[str] = []
    findings: list[Finding] = []
    checks: list[str] = []
    try:
        listing = run.listing(config.repo)
        base = replace(base, git=listing is not None)
        found = sources(spec, config.repo, listing, run.scanner())
        base = replace(base, modified=found.modified, untracked=found.untracked)
        allowed = [Owned("--allow-secret", a) for a in run.allowed]
        allowed += registry.allowed_secrets(spec.name)
        passed = scan_secrets(found, run.scanner(), allowed)
        base = replace(base, allowed_secrets=passed)
        claim(final_dir)
        remove_leftovers(final_dir)
        work = Path(tempfile.mkdtemp(prefix=temp_prefix(final_dir, "new"), dir=final_dir.parent))
        changes = lay_out(found, work)
        changes += rewrite_staged(config, spec, work)
        for fix in registry.fixes(spec.name):
            with plugin_failures(fix):
                done = fix.record.apply(work)
            if done:
                fixes.append(fix.record.name)
        check_sizes(work)
        for check in registry.checks():
            with plugin_failures(check):
                found_now = list(check.record.run(work))
            checks.append(f"{check.record.name}:{'fail' if found_now else 'ok'}")
            findings += found_now
        manifest = build_manifest(work)
        digest = manifest_hash(manifest)
        install(work, final_dir, manifest, digest)
    except ReleaseError as exc:
        return replace(base, error=f"{spec.name}: {exc.one_line()}")
    except OSError as exc:
        return replace(base, error=f"{spec.name}: {os_error(exc, config.repo, work)}")
    finally:
        if work is not None and work.exists():
            shutil.rmtree(work, ignore_errors=True)
    error = "; ".join(str(f) for f in findings) or None
    return replace(
        base,
        ok=not findings,
        manifest=manifest,
        manifest_hash=digest,
        fixes=tuple(fixes),
        checks=tuple(checks),
        findings=tuple(findings),
        changes=tuple(changes),
        error=f"{spec.name}: {error}" if error else None,
    )


def os_error(exc: OSError, repo: Path, work: Path | None) -> str:
    """One line for what the OS refused: the path (in the checkout or the staged tree,
    shortened) and why."""
    name = str(exc.filename or "")
    for root in (work, repo):
        if root is not None and name.startswith(f"{root}/"):
            name = name[len(str(root)) + 1 :]
            break
    return f"{short(name)}: {exc.strerror or exc}" if name else short(str(exc), 160)


def stage_envs(
    config: ReleaseConfig,
    specs: Iterable[EnvSpec],
    registry: PluginRegistry,
    run: StageRun | None = None,
) -> list[StagedSpace]:
    """Stage every env in ``specs``; one failing env never stops the others. Two plugins
    claiming one env is a PluginError, and a staging dir that cannot be written, or that is
    inside what staging reads, a UsageError, before anything is staged."""
    registry.profiles()
    check_staging_dir(config.staging_dir, config.repo)
    prepare_staging_dir(config.staging_dir, config.namespace)
    run = run or StageRun()
    return [stage_env(config, spec, registry, run) for spec in specs]

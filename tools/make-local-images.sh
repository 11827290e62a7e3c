#!/usr/bin/env bash
# Build the two images a staged Space's Dockerfile names, for hosts that cannot reach a container
# registry (docs/local-containers.md, "Offline"):
#
#   ghcr.io/huggingface/openenv-base:latest  a debootstrapped Debian bookworm with Python 3.11,
#                                            pip/venv, curl, the host's CA bundle, uv, and
#                                            ENV PYTHONPATH=/app/src (a stand-in for the real base)
#   ghcr.io/astral-sh/uv:<UV_VERSION>        just /uv and /uvx, taken from the uv wheel on PyPI
#
# No git, on purpose: the real openenv-base (src/openenv/core/containers/images/Dockerfile in
# OpenEnv) installs only curl and ca-certificates on python:3.11-slim. A staged Dockerfile that
# installs a git+ requirement without installing git first must fail here as it fails on Spaces
# (the staged `apt-get install git` then needs a reachable Debian mirror). A root filesystem
# tarball made before this change still holds git: rebuild it with REBUILD=1.
#
# Needs root, debootstrap, pip (to download the uv wheel) and the engine (podman or docker).
# The root filesystem is kept as a tarball in $WORK, so a second run only re-imports (seconds).
#
# Settings (environment):
#   CONTAINER_ENGINE  podman (default) or docker
#   WORK              scratch folder (default /var/tmp/openenv-local-images)
#   BASE_TAG          default ghcr.io/huggingface/openenv-base:latest (use :<sha> with --base-sha)
#   UV_VERSION        default: the pin in releaselib/edit/dockerfile_rewrite.py
#   DEBIAN_URL        default http://deb.debian.org/debian
#   CA_BUNDLE         default /etc/ssl/certs/ca-certificates.crt (baked in: an intercepting
#                     proxy's CA, so pip and uv inside builds reach PyPI)
#   REBUILD=1         debootstrap again even when the tarball exists
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
engine="${CONTAINER_ENGINE:-podman}"
work="${WORK:-/var/tmp/openenv-local-images}"
base_tag="${BASE_TAG:-ghcr.io/huggingface/openenv-base:latest}"
uv_version="${UV_VERSION:-$(sed -n 's/^UV_VERSION = "\(.*\)"$/\1/p' "$here/releaselib/edit/dockerfile_rewrite.py")}"
debian_url="${DEBIAN_URL:-http://deb.debian.org/debian}"
ca_bundle="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
ca_in_image=/etc/ssl/certs/ca-certificates.crt

[ -n "$uv_version" ] || { echo "no UV_VERSION (set it)" >&2; exit 2; }
command -v "$engine" >/dev/null || { echo "$engine is not installed" >&2; exit 2; }
mkdir -p "$work"
log() { printf '== %s %s\n' "$(date +%T)" "$*"; }

# import_as TAG ARGS...: "$engine import ARGS... TAG", then drop the image the tag named before
# (a re-import gets a new id and would leave the old one behind untagged).
import_as() {
    local tag="$1" old new
    shift
    old="$("$engine" image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
    "$engine" import "$@" "$tag" >/dev/null
    new="$("$engine" image inspect --format '{{.Id}}' "$tag")"
    echo "$tag: ${new:0:12}"
    if [ -n "$old" ] && [ "$old" != "$new" ]; then
        "$engine" rmi "$old" >/dev/null 2>&1 || echo "kept the previous $tag (${old:0:12}): in use"
    fi
}

# -- uv: the binaries from the PyPI wheel -------------------------------------------------------
uvdir="$work/uv-$uv_version"
if [ ! -x "$uvdir/uv" ]; then
    log "downloading the uv $uv_version wheel"
    rm -rf "$work/uvwheel" "$uvdir"
    python3 -m pip download --quiet --no-deps --only-binary=:all: \
        --platform manylinux2014_x86_64 -d "$work/uvwheel" "uv==$uv_version"
    mkdir -p "$uvdir"
    python3 - "$work/uvwheel" "$uvdir" "$uv_version" <<'PY'
import sys, zipfile
from pathlib import Path
wheel = next(Path(sys.argv[1]).glob("uv-*.whl"))
dest = Path(sys.argv[2])
with zipfile.ZipFile(wheel) as z:
    for name in ("uv", "uvx"):
        target = dest / name
        target.write_bytes(z.read(f"uv-{sys.argv[3]}.data/scripts/{name}"))
        target.chmod(0o755)
PY
fi
"$uvdir/uv" --version

log "importing ghcr.io/astral-sh/uv:$uv_version"
tar -C "$uvdir" --numeric-owner --owner=0 --group=0 -cf "$work/uv-image.tar" uv uvx
import_as "ghcr.io/astral-sh/uv:$uv_version" "$work/uv-image.tar"

# -- the base: a debootstrapped bookworm --------------------------------------------------------
tarball="$work/openenv-base-rootfs.tar"
if [ ! -s "$tarball" ] || [ "${REBUILD:-0}" = 1 ]; then
    rootfs="$work/basefs"
    rm -rf "$rootfs"
    log "debootstrap bookworm into $rootfs (about 1 minute)"
    debootstrap --variant=minbase \
        --include=python3,python3-venv,python3-pip,curl,ca-certificates \
        bookworm "$rootfs" "$debian_url" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    rm -f "$rootfs"/usr/lib/python3*/EXTERNALLY-MANAGED   # the official image lets pip install
    ln -sf /usr/bin/python3 "$rootfs/usr/local/bin/python"
    ln -sf /usr/bin/pip3 "$rootfs/usr/local/bin/pip"
    install -m 0755 "$uvdir/uv" "$uvdir/uvx" "$rootfs/usr/local/bin/"
    cp "$ca_bundle" "$rootfs$ca_in_image"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" --numeric-owner -cf "$tarball.part" .
    mv "$tarball.part" "$tarball"
    rm -rf "$rootfs"
fi

log "importing $base_tag"
import_as "$base_tag" \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PYTHONPATH=/app/src' \
    --change "ENV SSL_CERT_FILE=$ca_in_image" \
    --change "ENV PIP_CERT=$ca_in_image" \
    --change "ENV REQUESTS_CA_BUNDLE=$ca_in_image" \
    --change 'CMD ["python3"]' \
    "$tarball"

log "checking"
"$engine" run --rm "$base_tag" sh -c \
    'python --version && uv --version && curl --version | head -1 && echo "PYTHONPATH=$PYTHONPATH" \
     && ! command -v git >/dev/null && echo "no git, like the real base"'
"$engine" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "openenv-base|astral-sh/uv"

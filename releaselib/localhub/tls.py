"""A throwaway certificate authority so Space domains can be served over https on loopback."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import certifi
import trustme


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the server's chain and key, and a CA bundle clients should trust."""

    cert_chain: Path
    key: Path
    ca_bundle: Path


def make_tls_files(directory: Path) -> TlsFiles:
    """Make a CA and a 127.0.0.1/localhost certificate under ``directory``.

    The bundle is the machine's own (``$SSL_CERT_FILE``, else certifi's) followed by the new CA, so
    a process given ``SSL_CERT_FILE=<bundle>`` still reaches real package indexes.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="releaselib localhub")
    server = ca.issue_cert("127.0.0.1", "localhost")
    files = TlsFiles(
        directory / "server.pem", directory / "server.key", directory / "ca-bundle.pem"
    )
    server.private_key_pem.write_to_path(str(files.key))
    os.chmod(files.key, 0o600)
    files.cert_chain.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    system_bundle = Path(os.environ.get("SSL_CERT_FILE") or certifi.where())
    existing = system_bundle.read_bytes() if system_bundle.is_file() else b""
    files.ca_bundle.write_bytes(existing.rstrip(b"\n") + b"\n" + ca.cert_pem.bytes())
    return files

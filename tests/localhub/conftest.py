"""One embedded Hub per test module, and a client for it, for the tests that share one."""

from collections.abc import Iterator

import pytest
from huggingface_hub import HfApi

from releaselib.localhub import LocalHub


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    with LocalHub(tmp_path_factory.mktemp("hub")) as running:
        yield running


@pytest.fixture(scope="module")
def api(hub: LocalHub) -> HfApi:
    return HfApi(endpoint=hub.endpoint, token=hub.token)

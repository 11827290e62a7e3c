from collections.abc import Iterator

import pytest
from huggingface_hub import close_session, set_client_factory
from huggingface_hub.utils._http import default_client_factory

pytest_plugins = ["releaselib.localhub.fixtures"]


@pytest.fixture(autouse=True)
def default_hub_client() -> Iterator[None]:
    """``Hub.connect`` installs a retrying client process-wide (as the CLI wants); put the
    plain one back after each test so tests of the bare client see its own behaviour."""
    yield
    set_client_factory(default_client_factory)
    close_session()

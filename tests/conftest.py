pytest_plugins = ["releaselib.localhub.fixtures"]

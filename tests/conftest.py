"""Fixtures shared by the CPU backend tests."""
import pytest

from forge.backends import get_backend


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One build cache per test session: every CPU test's compiles are shared by source hash."""
    return tmp_path_factory.getbasetemp() / "forge-cpu-cache"


@pytest.fixture(scope="module")
def backend():
    return get_backend("cpu")

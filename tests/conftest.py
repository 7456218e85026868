import pytest

from mpcdp.config import MpcConfig


@pytest.fixture
def config_for():
    """MpcConfig with the dealer (the default provider) and a test-sized timeout."""
    def make(parties: int, **kwargs) -> MpcConfig:
        kwargs.setdefault("timeout_s", 90.0)
        return MpcConfig(parties=parties, **kwargs)
    return make

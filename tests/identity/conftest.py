"""The identity tests' providers: one real OpenID provider per module, a second one sharing its key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from oidc_peer import Idp, running_idp


@pytest.fixture(scope="module")
def idp_keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("idp-keys") / "keys.json"


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory, idp_keys: Path) -> Iterator[Idp]:
    with running_idp(tmp_path_factory.mktemp("idp"), keys_file=idp_keys) as provider:
        yield provider


@pytest.fixture(scope="module")
def other_issuer(tmp_path_factory: pytest.TempPathFactory, idp: Idp, idp_keys: Path) -> Iterator[Idp]:
    """Another issuer signing with the same key: only the `iss` claim tells its tokens apart."""
    with running_idp(tmp_path_factory.mktemp("idp2"), keys_file=idp_keys) as provider:
        yield provider

"""The profile tests' identity provider: the identity tests' real oidc-provider, one per module."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from support.processes import TESTS

sys.path.insert(0, str(TESTS / "identity"))  # oidc_peer lives beside the identity tests

from oidc_peer import Idp, running_idp


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Idp]:
    with running_idp(tmp_path_factory.mktemp("idp")) as provider:
        yield provider

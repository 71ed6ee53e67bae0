"""Fixtures of the OAuth tests: the real OpenID provider whose users call per-user servers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from identity.oidc_peer import Idp, running_idp


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Idp]:
    """One provider per module (the callers' tokens; the token exchange of per-user servers)."""
    with running_idp(tmp_path_factory.mktemp("idp")) as provider:
        yield provider

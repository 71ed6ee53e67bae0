"""The suite's client mode through Nexus at both spec versions, 2025-03-26 and the extensions (tests/oauth/client_mode.py).

One test runs the versions one after the other: run side by side (two test workers) they start
about 28 gateways at once, and on two cores the harness's checks then failed for want of CPU
(8 of 283 at 2025-11-25 in one such run); each version alone passes in about a minute.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oauth.client_mode import CORE, OTHER_LEGS, check_other_leg, check_version


@pytest.mark.timeout(600)  # 5 min 45 s measured at load 14 before the other legs (+50 s quiet)
def test_the_suites_client_mode_passes_through_nexus(tmp_path: Path) -> None:
    for version in CORE:
        check_version(tmp_path, version)
    for leg in OTHER_LEGS:  # in this test too: beside it, its gateways would starve the versions' checks
        check_other_leg(tmp_path, leg)

"""Shared fixtures: the tests import helpers from tests/support (on sys.path via pytest's pythonpath)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _sigint_delivered_to_children() -> Iterator[None]:
    """Processes the tests start get SIGINT's default action, however pytest itself was started.

    A job started in the background by a non-interactive shell (`make test &`, nohup, some CI
    runners) inherits SIGINT as *ignored*, and an ignored disposition survives exec: every
    `nexus` a test starts would then ignore the Ctrl-C the test sends it, and the Ctrl-C and
    orphan tests would fail for a reason that is not Nexus's. A handler (unlike SIG_IGN) is reset
    to the default in a child at exec, so installing Python's own puts the children back.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield


# A data folder chosen by whoever ran pytest (kept as is); read before any fixture sets one.
_GIVEN_DATA_DIR = os.environ.get("NEXUS_DATA_DIR")


@pytest.fixture(autouse=True, scope="session")
def _data_dir_in_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Everything a test's gateway writes (tool index, offloaded results) lands in a temporary folder,
    never in the user's ~/.local; a test that wants its own folder sets NEXUS_DATA_DIR itself."""
    if os.environ.get("NEXUS_DATA_DIR"):
        yield
        return
    os.environ["NEXUS_DATA_DIR"] = str(tmp_path_factory.mktemp("nexus-data"))
    try:
        yield
    finally:
        os.environ.pop("NEXUS_DATA_DIR", None)


@pytest.fixture(autouse=True)
def _data_dir_per_test(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's gateways get a data folder of their own (fixtures of a wider scope keep the
    session's): pinned tool definitions, the index and offloaded files of one test never meet
    another's. Shared, a server name reused by two tests with other tools was quarantined as a
    rewritten tool, depending on which test ran first."""
    if _GIVEN_DATA_DIR:
        return
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path_factory.mktemp("nexus-data")))


# The longest files first (measured: junit times of a whole run, 2026-11-27). `--dist loadfile` hands
# files out in collection order as workers free up: a long file handed out last ran alone while the
# other worker idled (~50 s of a ~1,075 s run). Stable: the rest keep their order, each file its own.
LONGEST_FIRST = (
    "tests/matrix/test_first_contact.py",  # 196 s
    "tests/lifecycle/test_no_orphans.py",  # 145 s
    "tests/oauth/test_oauth_conformance_client.py",  # 142 s
    "tests/robustness/test_admin_api_schemathesis.py",  # 52 s
    "tests/frontends/test_stdio_ends.py",  # 44 s
    "tests/docs/test_docs_examples.py",  # 43 s
    "tests/oauth/test_oauth_per_user.py",  # 42 s
    "tests/robustness/test_http_sessions.py",  # 41 s
    "tests/conformance/test_through_gateway.py",  # 39 s
    "tests/oauth/test_oauth_cli.py",  # 39 s
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    root = config.rootpath
    items.sort(key=lambda item: rank.get(item.path.relative_to(root).as_posix(), len(rank)))

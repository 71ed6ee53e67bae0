"""Shared fixtures: the tests import helpers from tests/support (on sys.path via pytest's pythonpath)."""

"""Suite-wide hooks."""

import os

#: the analyst service's ledger key for tests that do not name a key file (blowfish_nb.service.chain reads it;
#: subprocesses such as ``blowfish-nb serve`` inherit it). Tests of key files and of a missing key unset it.
os.environ.setdefault("BLOWFISH_LEDGER_KEY", "test-ledger-key-" + "0123456789abcdef" * 3)
#: no fitted strategy read from or written to the user's cache folder (tests that count fits expect them run;
#: tests/analysis/test_strategy_cache.py points it at a temporary folder)
os.environ.setdefault("BLOWFISH_NB_CACHE", "off")


def pytest_collection_modifyitems(items):
    """Slow audits and notebook runs first (stable sort), so no xdist worker is left alone with one at the end."""
    items.sort(key=lambda item: not (item.get_closest_marker("slow") or item.get_closest_marker("notebook")))

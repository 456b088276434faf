"""Suite-wide hooks."""


def pytest_collection_modifyitems(items):
    """Slow audits and notebook runs first (stable sort), so no xdist worker is left alone with one at the end."""
    items.sort(key=lambda item: not (item.get_closest_marker("slow") or item.get_closest_marker("notebook")))

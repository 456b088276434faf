"""No public name of the package shadows one of its modules (``import blowfish_nb.kmeans as m`` gave the function).

The k-means module is :mod:`blowfish_nb.clustering`; the package still exports the function as
``blowfish_nb.kmeans``.
"""

import importlib
import pkgutil
import types

import pytest

import blowfish_nb as bf


def test_kmeans_is_the_function_and_its_module_is_clustering():
    import blowfish_nb.clustering as clustering

    assert isinstance(clustering, types.ModuleType)
    assert bf.kmeans is clustering.kmeans and callable(bf.kmeans)
    assert "kmeans" in bf.__all__
    # the module's other public names are reachable through it
    for name in ("KMeansResult", "sulq_sensitivity", "kmeanspp", "best_of_kmeanspp"):
        assert hasattr(clustering, name), name
    with pytest.raises(ModuleNotFoundError):  # no module the function could shadow
        importlib.import_module("blowfish_nb.kmeans")


def test_no_package_attribute_shadows_a_submodule():
    """Every module or subpackage of ``blowfish_nb`` is, where the package has an attribute of its name, that
    module (checked on the names alone: nothing is imported that the package does not import already)."""
    shadowed = []
    for info in pkgutil.iter_modules(bf.__path__):
        value = getattr(bf, info.name, None)
        if value is None:
            continue
        if not (isinstance(value, types.ModuleType) and value.__name__ == f"blowfish_nb.{info.name}"):
            shadowed.append(f"blowfish_nb.{info.name} is {value!r}")
    assert not shadowed, shadowed

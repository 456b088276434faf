"""Settings for every pytest run from this checkout, including ``pytest blowfish_nb`` (the doctests alone).

``tests/conftest.py`` holds the suite's own hooks; this file only keeps the doctests of
:func:`blowfish_nb.analysis.selection.optimized_for` and friends off the user's cache folder when
``tests/`` is not collected (a doctest run once wrote to ``~/.cache/blowfish_nb``).
"""

import os

os.environ.setdefault("BLOWFISH_NB_CACHE", "off")

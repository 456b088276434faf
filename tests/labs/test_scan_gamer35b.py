"""blowfish_nb.labs.scan against the student-gamer gamer35b's notebooks (branch gamer35b, issue 26).

The fixtures (tests/labs/fixtures/gamer35b/, outputs stripped) are cand35's built student notebooks of labs 3 and 5
with only their answer cells edited; ``python -m blowfish_nb.labs.scan --build build/labs`` flagged none. Their
tricks: a pandas module rewritten through ``pd.DataFrame([[src]]).agg("to_string", 0, path, …)`` (pandas calls the
writer by its name, so no writer appeared in the source), its ``.py`` spelled ``np.__name__[3:]`` and site-packages
found with ``np.get_include()``; a code answer's noise multiplied by ``display.__name__ == "<lambda>"`` (zero noise in
a kernel, Laplace in the grader's child, whose ``display`` is a lambda). The ``exec(bytes.fromhex(…).decode())`` of
the pandas notebooks is text the cell writes into the module, not code the cell runs: the scan does not flag a string
for the code it holds; the writer and the path are what is flagged. No otter run here: the scan reads files.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from blowfish_nb.labs.scan import compare_notebook, scan_notebook, scan_source

from . import built_labs_fixture, built_versions, lab_number

built_labs = pytest.fixture(scope="session")(built_labs_fixture)
FIXTURES = Path(__file__).parent / "fixtures" / "gamer35b"
SLUGS = {"03": "03-ranges", "05": "05-break-it"}
AGG = ["passes the string 'to_string' to a call", "cuts np.__name__[3:]", "uses get_include",
       "names a file or the tests folder ('*pandas/io/formats/string.py')"]

#: each gamer35b notebook and the flags (substrings of their reasons) that name its trick
EXPECTED = {
    "lab03_display_lambda": ["the answer cell of q3 (a function the handout asks for) reads display"],
    "lab05_display_lambda": ["the answer cell of q2 (a function the handout asks for) reads display"],
    "lab05_pandas_agg_persistent": AGG,
    "lab05_pandas_agg_unflagged": AGG,
}


def _flags(path, built_labs):
    student, solution = built_versions(built_labs, SLUGS[lab_number(Path(path), SLUGS)])
    return scan_notebook(path) + compare_notebook(path, student, solution)


def test_the_fixtures_are_the_four_notebooks():
    assert sorted(p.stem for p in FIXTURES.glob("*.ipynb")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_gamer35b_notebook_is_flagged_for_its_trick(name, built_labs):
    whys = [f.why for f in _flags(FIXTURES / f"{name}.ipynb", built_labs)]
    for expected in EXPECTED[name]:
        assert any(expected in why for why in whys), (expected, whys)


#: one-line forms flagged in any cell: method names passed as strings, folded module names, cuts of names
FORMS = {
    "agg of a writer": "pd.DataFrame([[1]]).agg('to_string', 0, p)",
    "agg of a folded writer": "df.agg('to_' + 'csv', 0, p)",
    "apply of a writer in a list": "df.apply(['to_typst'])",
    "pipe of a reader": "df.pipe('read_' 'pickle')",
    "methodcaller of a file call": "f = caller('tofile', p)",
    "transform of the kernel": "df.transform(name='run_cell')",
    "to_typst": "df.agg('to_typst', 0, p)",
    "a cut of np.__name__": "x = np.__name__[3:]",
    "a cut of __file__": "x = __file__[:-3]",
    "np.__name__ folded into a path": "x = 'string.' + np.__name__[3:] + ''",
    "site-packages from NumPy": "s = np.get_include()",
}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_each_form_is_flagged_in_any_cell(name):
    assert scan_source(FORMS[name]) != [], name


def test_column_names_and_ordinary_strings_pass():
    for fine in ("t = ana.ledger[['analyst', 'query', 'epsilon']]", "df.agg('mean')", "df.apply(np.sum, axis=0)",
                 "s = type(e).__name__", "print(f'{type(e).__name__}: {e}')"):
        assert scan_source(fine) == [], fine

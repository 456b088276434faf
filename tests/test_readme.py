"""Every ```python block of README.md runs, in order, as one script (one namespace for the whole file).

One namespace because the README reads as one session: ``df`` from "What Blowfish
buys" is used by every later section, ``s`` from the session by the widgets. A
block followed by a ```text block shows output, so it must print something; a
```text exact block is output that does not depend on the noise (analytic
errors, units), and the printed text must equal it line for line. The blocks
run in an empty temporary folder, which must still be empty afterwards: a
reader runs them wherever they are (often notebooks/), and the session snippet
saves its file in a folder it removes.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```\s*$", re.MULTILINE | re.DOTALL)


def readme_blocks(text: str) -> list[tuple[str, str, str | None, bool]]:
    """(heading, code, shown output or None, whether that output is exact) per ```python block, in order."""
    fences = [(m.start(), m.group(1).split(), m.group(2)) for m in FENCE.finditer(text)]
    blocks = []
    for i, (start, info, body) in enumerate(fences):
        if not info or info[0] != "python":
            continue
        headings = re.findall(r"^#+ (.+)$", text[:start], re.MULTILINE)
        shown, exact = None, False
        if i + 1 < len(fences) and fences[i + 1][1][:1] == ["text"]:
            between = text[start:fences[i + 1][0]]
            if between.count("```") == 2:  # the output block comes right after this one
                shown, exact = fences[i + 1][2], "exact" in fences[i + 1][1][1:]
        blocks.append((headings[-1] if headings else "", body, shown, exact))
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_snippets_and_shows_output():
    assert len(BLOCKS) >= 5
    assert any(exact for *_, exact in BLOCKS) and sum(shown is not None for _, _, shown, _ in BLOCKS) >= 3


def test_the_reader_finds_two_set_up_commands_and_no_link_outside_the_repository():
    text = README.read_text(encoding="utf-8")
    bash = [body.strip() for info, body in ((m.group(1).split(), m.group(2)) for m in FENCE.finditer(text))
            if info[:1] == ["bash"] and body.strip().startswith("make")]
    assert bash == ["make lab", "make test"]
    assert "../" not in text and "shared/" not in text
    for target in re.findall(r"\]\(([^)#]+)\)", text):  # every relative link and image exists in the checkout
        assert (README.parent / target).exists(), target
    assert "rng=" not in "".join(body for _, body, _, _ in BLOCKS)  # examples draw noise from OS entropy


def test_every_snippet_runs_in_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for n, (heading, code, shown, exact) in enumerate(BLOCKS):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md block {n} ({heading})", "exec"), namespace)
        printed = out.getvalue()
        if shown is not None:
            assert printed.strip(), f"block {n} ({heading}) shows output in the README but printed nothing"
        if exact:
            assert printed.strip().splitlines() == shown.strip().splitlines(), (heading, printed)
    assert list(tmp_path.iterdir()) == []  # the snippets clean up after themselves (issue 28, 7: no session.json)

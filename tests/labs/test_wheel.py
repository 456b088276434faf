"""`make labs` puts a wheel of this package in each autograder zip, required with its exact version and the extras the
lab needs (lab 9: ``[widgets,service]``). Checked on the real labs 1 and 9, built with the wheel: each zip's own
requirement installs into one empty virtual environment with no package index (``--no-index``); the installed package
carries the hint tables but no answer key.

What the zip does not carry: the package's dependencies (NumPy, SciPy, pandas, JupyterLab, and lab 9's FastAPI,
uvicorn, httpx). ``otter run`` grades in the environment it runs in (it installs nothing), so the test checks that
every dependency the pin names, extras included, is installed in the environment these tests (and ``otter run``)
run in; Gradescope and ``otter grade`` fetch them from a package index while building their image, as for any
requirement. Bundling them would put ~100 MB of wheels in every zip.
"""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from importlib.metadata import PackageNotFoundError, version as installed_version

import pytest
from packaging.requirements import Requirement

from blowfish_nb.labs.build import AUTOGRADER_FILES, build
from tests.labs import ROOT

LABS = {"01-neighbours-and-policies": "widgets", "09-a-class-under-one-budget": "widgets,service"}


@pytest.mark.slow
def test_the_zips_carry_the_wheel_and_their_pins_install_without_an_index(tmp_path):
    wheels = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=600)
    (wheel,) = wheels.glob("blowfish_nb-*.whl")
    version = wheel.name.split("-")[1]
    built = build(tmp_path / "out", names=list(LABS), run_tests=False, wheel=wheel)

    target = tmp_path / "venv"
    venv.create(target, with_pip=True)  # one empty environment for both labs
    py = target / "bin" / "python"
    for lab, extras in zip(built, LABS.values()):
        (zpath,) = (lab / "autograder").glob("*.zip")
        z = zipfile.ZipFile(zpath)
        assert f"files/{wheel.name}" in z.namelist(), lab.name
        env = z.read("environment.yml").decode()
        assert f"--find-links {AUTOGRADER_FILES}" in env and f"blowfish_nb[{extras}]=={version}" in env, env
        assert "blowfish_nb[widgets,labs]" not in env  # the old unpinned requirement that no index could satisfy
        unpacked = tmp_path / "zip" / lab.name
        z.extractall(unpacked)
        done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--no-index", "--no-deps", "--force-reinstall", "--find-links", str(unpacked / "files"),
                               f"blowfish_nb[{extras}]=={version}"], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{lab.name}: {done.stderr}"
        listed = subprocess.run([str(py), "-m", "pip", "show", "-f", "blowfish_nb"], capture_output=True, text=True,
                                check=True).stdout
        assert f"Version: {version}" in listed and "blowfish_nb/labs/hints/lab09.json" in listed
        assert "key/lab01.py" not in listed and "key/lab09.py" not in listed and "_grade.py" in listed
        # the grading plugin the zip names is in the wheel: the grading environment imports it from there
        assert "blowfish_nb/labs/_plugin.py" in listed and "blowfish_nb/labs/_answers.py" in listed
        assert "blowfish_nb.labs._plugin.LabGrader" in z.read("otter_config.json").decode()

        # every dependency of the pin, with its extras, is installed where otter run grades (no index needed there)
        missing = [str(r) for r in _requires(py, extras) if not _installed(r)]
        assert not missing, f"{lab.name}: the grading environment lacks {missing}"


def _requires(py, extras: str) -> list[Requirement]:
    """The installed wheel's requirements that apply with ``extras`` (read in the new environment)."""
    out = subprocess.run([str(py), "-c", "from importlib.metadata import requires; "
                                         "print('\\n'.join(requires('blowfish_nb') or []))"],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in filter(None, out.splitlines()):
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in ["", *extras.split(",")]):
            found.append(req)
    assert any(r.name == "fastapi" for r in found) == ("service" in extras)
    return found


def _installed(req: Requirement) -> bool:
    try:
        return req.specifier.contains(installed_version(req.name), prereleases=True)
    except PackageNotFoundError:
        return False

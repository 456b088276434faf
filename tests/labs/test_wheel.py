"""`make labs` puts a wheel of this package in each autograder zip, required with its exact version: the zip's own
requirement installs into an empty virtual environment with no package index (``--no-index``; the package's
dependencies are left to the grading image, ``--no-deps``), and the installed package carries the hint tables but
no answer key."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile

import pytest

from blowfish_nb.labs.build import AUTOGRADER_FILES, build
from tests.labs import ROOT
from tests.labs.test_build import _lab


@pytest.mark.slow
def test_the_zip_carries_the_wheel_and_its_pin_installs_without_an_index(tmp_path):
    wheels = tmp_path / "wheel"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "-w", str(wheels), str(ROOT)], check=True, timeout=600)
    (wheel,) = wheels.glob("blowfish_nb-*.whl")
    version = wheel.name.split("-")[1]
    src = tmp_path / "source"
    _lab(src / "99-tiny.ipynb")
    (lab,) = build(tmp_path / "out", run_tests=False, source=src, keys=src, wheel=wheel)
    (zpath,) = (lab / "autograder").glob("*.zip")
    z = zipfile.ZipFile(zpath)
    assert f"files/{wheel.name}" in z.namelist()
    env = z.read("environment.yml").decode()
    assert f"--find-links {AUTOGRADER_FILES}" in env and f"blowfish_nb[widgets]=={version}" in env
    assert "blowfish_nb[widgets,labs]" not in env  # the old unpinned requirement that no index could satisfy

    unpacked = tmp_path / "zip"
    z.extractall(unpacked)
    target = tmp_path / "venv"
    venv.create(target, with_pip=True)
    py = target / "bin" / "python"
    done = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index",
                           "--no-deps", "--find-links", str(unpacked / "files"), f"blowfish_nb[widgets]=={version}"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    listed = subprocess.run([str(py), "-m", "pip", "show", "-f", "blowfish_nb"], capture_output=True, text=True,
                            check=True).stdout
    assert f"Version: {version}" in listed and "blowfish_nb/labs/hints/lab01.json" in listed
    assert "key/lab01.py" not in listed and "_grade.py" in listed

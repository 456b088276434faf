"""The curator's configuration file and command line: every key checked, every mistake named."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from blowfish_nb.exceptions import InvalidParameterError
from blowfish_nb.service.cli import main
from blowfish_nb.service.config import load_config
from blowfish_nb.service.ledger import Ledger

TOML = """
[data]
path = "embedded:salaries"
[columns.age]
bins = 62
policy = "line"
[columns.salary]
bins = 50
bounds = [0, 250000]
policy = { name = "threshold", theta = 3 }
[ledger]
path = "ledger.db"
[accounts]
course = 2.0
solo = 0.5
[analysts]
ana = "course"
ben = "course"
[server]
port = 0
rate = 5
"""

YAML = """
data: {path: "embedded:salaries"}
columns:
  age: {bins: 62, policy: line}
  salary: {bins: 50, bounds: [0, 250000], policy: {name: threshold, theta: 3}}
ledger: {path: ledger.db}
accounts: {course: 2.0, solo: 0.5}
analysts: {ana: course, ben: course}
server: {port: 0, rate: 5}
"""


@pytest.mark.parametrize("suffix,text", [(".toml", TOML), (".yaml", YAML)])
def test_toml_and_yaml_say_the_same(tmp_path, suffix, text):
    path = tmp_path / f"service{suffix}"
    path.write_text(text)
    c = load_config(path)
    assert c.bins == {"age": 62, "salary": 50} and c.bounds == {"salary": (0, 250000)}
    assert c.policy == {"age": "line", "salary": ("threshold", {"theta": 3})}
    assert c.accounts == {"course": 2.0, "solo": 0.5} and c.analysts == {"ana": "course", "ben": "course"}
    assert c.ledger == str(tmp_path / "ledger.db")  # relative to the file, not to the working directory
    assert (c.port, c.rate, c.burst) == (0, 5, 100)
    assert len(c.load_data()) == 5000


BAD = [
    ({"columns": {"a": {"bins": 3}}, "ledger": {"path": "l"}}, "data.path"),
    ({"data": {"path": "embedded:salaries"}, "ledger": {"path": "l"}}, "[columns"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"policy": "dp"}}, "ledger": {"path": "l"}}, "bins"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3, "seed": 1}}, "ledger": {"path": "l"}},
     "'seed'"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3}}}, "ledger.path"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3, "bounds": [1]}}, "ledger": {"path": "l"}},
     "bounds"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3, "policy": 7}}, "ledger": {"path": "l"}},
     "policy"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3}}, "ledger": {"path": "l"},
      "accounts": {"a": "lots"}}, "accounts.a"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3}}, "ledger": {"path": "l"},
      "accounts": {"a": 1.0}, "analysts": {"ana": "b"}}, "analysts.ana"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3}}, "ledger": {"path": "l"},
      "server": {"workers": 4}}, "'workers'"),
    ({"data": {"path": "embedded:salaries"}, "columns": {"age": {"bins": 3}}, "ledger": {"path": "l"},
      "extra": {}}, "'extra'"),
]


@pytest.mark.parametrize("raw,named", BAD, ids=[b[1] for b in BAD])
def test_a_bad_configuration_is_refused_naming_the_key(raw, named):
    with pytest.raises(InvalidParameterError) as info:
        load_config(raw)
    assert named in str(info.value)


def test_unreadable_files_are_refused(tmp_path):
    (tmp_path / "s.toml").write_text("[data\npath=")
    (tmp_path / "s.json").write_text("{}")
    for path, named in ((tmp_path / "s.toml", "not valid TOML"), (tmp_path / "s.json", ".toml or .yaml"),
                        (tmp_path / "none.toml", "no file")):
        with pytest.raises(InvalidParameterError, match=named):
            load_config(path)


def test_the_command_line_adds_revokes_and_verifies(tmp_path, capsys):
    cfg = tmp_path / "service.toml"
    cfg.write_text(TOML)
    assert main(["init", "--config", str(cfg)]) == 0 and "new ledger" in capsys.readouterr().out
    with Ledger(tmp_path / "ledger.db") as ledger:
        ledger.add_account("course", 2.0)
    assert main(["analyst", "add", "cleo", "course", "--config", str(cfg)]) == 0
    token = capsys.readouterr().out.strip()
    assert len(token) >= 40
    with Ledger(tmp_path / "ledger.db") as ledger:
        assert ledger.authenticate(token) == "cleo"
    assert main(["analyst", "revoke", "cleo", "--config", str(cfg)]) == 0
    assert main(["status", "--config", str(cfg)]) == 0
    status = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    assert status["analysts"][0] == {**status["analysts"][0], "analyst": "cleo", "revoked": True}
    assert token not in json.dumps(status)
    assert main(["verify", "--config", str(cfg)]) == 0 and "chain and heads verify" in capsys.readouterr().out
    assert main(["analyst", "add", "dora", "nowhere", "--config", str(cfg)]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_serve_refuses_data_outside_the_bins_before_listening(tmp_path):
    cfg = tmp_path / "service.toml"
    cfg.write_text(TOML.replace("bounds = [0, 250000]", "bounds = [0, 1000]"))
    out = subprocess.run([sys.executable, "-m", "blowfish_nb.service.cli", "serve", str(cfg)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 2
    assert "'salary'" in out.stderr and "fix the bins" in out.stderr and "serving" not in out.stdout
    assert not any(ch.isdigit() for ch in out.stderr.split("DomainError:", 1)[1])  # no count, no value


def test_init_makes_the_ledger_and_its_key_once_and_serve_never_does(tmp_path, capsys):
    """Issue 27: a deleted ledger no longer starts a fresh one; only ``blowfish-nb init`` makes a ledger."""
    (tmp_path / "service").mkdir()
    cfg = tmp_path / "service" / "service.toml"
    cfg.write_text(TOML)
    ledger = tmp_path / "service" / "ledger.db"
    key = tmp_path / "keys" / "ledger.key"
    key.parent.mkdir(mode=0o700)
    assert main(["serve", str(cfg), "--key", str(key)]) == 2
    assert "blowfish-nb init" in capsys.readouterr().err and not ledger.exists() and not key.exists()
    assert main(["init", "--config", str(cfg), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert f"new ledger key written to {key}" in out and "new ledger at" in out
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    assert main(["init", "--config", str(cfg), "--key", str(key)]) == 2
    assert "init never replaces one" in capsys.readouterr().err
    assert main(["verify", "--config", str(cfg), "--key", str(key)]) == 0
    assert main(["verify", "--config", str(cfg)]) == 2  # the tests' $BLOWFISH_LEDGER_KEY is not this ledger's key
    assert "not made with this key" in capsys.readouterr().err
    with Ledger(ledger, key_file=key) as opened:
        opened.add_account("course", 2.0)
    for suffix in ("", ".head", "-wal", "-shm"):
        ledger.with_name(ledger.name + suffix).unlink(missing_ok=True)
    assert main(["init", "--config", str(cfg), "--key", str(key)]) == 2  # the witness remembers the ledger
    assert "witness head in the key's folder records 1 events" in capsys.readouterr().err
    assert not ledger.exists()


def test_a_key_file_in_the_ledgers_folder_is_refused_by_the_command_line(tmp_path, capsys):
    cfg = tmp_path / "service.toml"
    cfg.write_text(TOML)
    assert main(["init", "--config", str(cfg), "--key", str(tmp_path / "ledger.key")]) == 2
    assert "inside the ledger's folder" in capsys.readouterr().err
    assert not (tmp_path / "ledger.db").exists() and not (tmp_path / "ledger.key").exists()


def test_the_configuration_names_the_key_file_relative_to_itself(tmp_path, capsys):
    (tmp_path / "service").mkdir()
    (tmp_path / "keys").mkdir(mode=0o700)
    cfg = tmp_path / "service" / "service.toml"
    cfg.write_text(TOML.replace('[ledger]\n', '[ledger]\nkey = "../keys/ledger.key"\n', 1))
    config = load_config(cfg)
    assert config.key_file == str(tmp_path / "service" / ".." / "keys" / "ledger.key")
    assert main(["init", "--config", str(cfg)]) == 0  # no --key: the configuration's key file is made and used
    assert (tmp_path / "keys" / "ledger.key").exists()
    assert main(["verify", "--config", str(cfg)]) == 0  # and read back (the tests' $BLOWFISH_LEDGER_KEY is another)
    capsys.readouterr()


@pytest.mark.parametrize("ledger, named", [('key = 5', "ledger.key"), ('key = ""', "ledger.key"),
                                           ('keyfile = "k"', "'keyfile'")])
def test_a_bad_ledger_key_entry_is_refused_naming_it(tmp_path, ledger, named):
    cfg = tmp_path / "service.toml"
    cfg.write_text(TOML.replace('[ledger]\n', f'[ledger]\n{ledger}\n', 1))
    with pytest.raises(InvalidParameterError, match=named):
        load_config(cfg)

"""A ledger of format 1 (unkeyed, before issue 27): refused as it is, converted only by ``blowfish-nb upgrade``.

``tests/fixtures/legacy_ledger`` was written by the format-1 code: account course (1.0), alice and bob on it,
alice charged 0.25 and bob 0.125, bob revoked (6 events); ``alice.token`` is alice's token.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from blowfish_nb.exceptions import SessionError
from blowfish_nb.service.cli import main
from blowfish_nb.service.ledger import AuthError, Ledger, LedgerIntegrityError
from blowfish_nb.service.migrate import upgrade

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_ledger"
TOML = '''[data]
path = "embedded:salaries"
[columns.age]
bins = 31
bounds = [18, 80]
[ledger]
path = "ledger.db"
'''


@pytest.fixture
def legacy(tmp_path):
    """(ledger path, config path, key path): a copy of the format-1 ledger, a config naming it, a key file to be."""
    folder = tmp_path / "service"
    folder.mkdir()
    for name in ("ledger.db", "ledger.db.head"):
        shutil.copy(FIXTURE / name, folder / name)
    (folder / "service.toml").write_text(TOML)
    (tmp_path / "keys").mkdir(mode=0o700)
    return folder / "ledger.db", folder / "service.toml", tmp_path / "keys" / "ledger.key"


def _snapshot(path: Path) -> bytes:
    return path.read_bytes() + Path(str(path) + ".head").read_bytes()


def test_a_format_1_ledger_is_refused_with_what_to_do(legacy, capsys):
    path, config, _ = legacy
    before = _snapshot(path)
    with pytest.raises(SessionError, match="format 1 .*blowfish-nb upgrade"):
        Ledger(path)
    assert main(["verify", "--config", str(config)]) == 2
    assert "blowfish-nb upgrade" in capsys.readouterr().err
    assert main(["serve", str(config), "--port", "0"]) == 2  # before it binds or serves anything
    assert "blowfish-nb upgrade" in capsys.readouterr().err
    assert _snapshot(path) == before


def test_upgrade_checks_then_rechains_under_the_key(legacy, capsys):
    path, config, key = legacy
    old_head = Path(str(path) + ".head").read_text().split()[-1]
    assert main(["upgrade", "--config", str(config), "--key", str(key)]) == 0
    out = capsys.readouterr().out
    assert "6 events" in out and old_head in out
    with Ledger(path, key_file=key) as ledger:
        assert ledger.head()[0] == 6 and ledger.spent("alice") == 0.375
        assert ledger.authenticate((FIXTURE / "alice.token").read_text().strip()) == "alice"
        assert [a["revoked"] for a in ledger.analysts()] == [False, True]
        assert [e["epsilon"] for e in ledger.entries("alice")] == [0.25, 0.125]
        ledger.charge("alice", "after", 0.5, {}, "{}")
    assert main(["verify", "--config", str(config), "--key", str(key)]) == 0
    with sqlite3.connect(path) as conn:  # every hash is now keyed: none is the unkeyed one
        hashes = [h for (h,) in conn.execute("SELECT hash FROM events")]
    assert old_head not in hashes and len(set(hashes)) == 7
    assert main(["upgrade", "--config", str(config), "--key", str(key)]) == 2
    assert "nothing to upgrade" in capsys.readouterr().err


def test_a_tampered_format_1_ledger_is_not_upgraded(legacy):
    path, _, key = legacy
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET epsilon = 0.001 WHERE kind = 'charge' AND analyst = 'alice'")
    conn.execute("CREATE TRIGGER events_no_update BEFORE UPDATE ON events "
                 "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: UPDATE refused'); END")
    conn.close()
    before = _snapshot(path)
    with pytest.raises(LedgerIntegrityError, match=r"format 1.*event 4 \(charge by alice\) was altered"):
        upgrade(path, key_file=key)
    assert _snapshot(path) == before
    with pytest.raises(SessionError, match="format 1"):
        Ledger(path, key_file=key)


def test_a_format_1_ledger_without_its_head_file_is_not_upgraded(legacy):
    path, _, key = legacy
    Path(str(path) + ".head").unlink()
    with pytest.raises(LedgerIntegrityError, match="head file .* is missing"):
        upgrade(path, key_file=key)


def test_a_format_1_ledger_cut_at_its_tail_is_not_upgraded(legacy):
    path, _, key = legacy
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE seq = 6")
    conn.execute("UPDATE analysts SET revoked = 0 WHERE name = 'bob'")
    conn.execute("UPDATE tokens SET revoked = 0 WHERE analyst = 'bob'")
    conn.execute("CREATE TRIGGER events_no_delete BEFORE DELETE ON events "
                 "BEGIN SELECT RAISE(ABORT, 'ledger events are append-only: DELETE refused'); END")
    conn.close()
    with pytest.raises(LedgerIntegrityError, match="does not extend its head file"):
        upgrade(path, key_file=key)


def test_the_fixture_is_format_1(legacy):
    """The fixture's chain is the unkeyed SHA-256 one (so the tests above test what they say)."""
    path, _, _ = legacy
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT seq, hash, prev FROM events ORDER BY seq").fetchall()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "meta" not in tables and rows[0][2] == "0" * 64 and len(rows) == 6
    assert all(len(h) == 64 and int(h, 16) >= 0 for _, h, _ in rows)
    assert hashlib.sha256(b"").hexdigest() not in {h for _, h, _ in rows}

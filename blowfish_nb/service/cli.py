"""``blowfish-nb``: the curator's command line for the analyst service.

::

    blowfish-nb init --config service.toml --key ~/keys/ledger.key   # make the ledger (and the key file, if new)
    blowfish-nb serve service.toml --key ~/keys/ledger.key  # serve until stopped; prints new analysts' tokens
    blowfish-nb analyst add NAME ACCOUNT --config service.toml
    blowfish-nb analyst revoke NAME --config service.toml
    blowfish-nb analyst rotate NAME --config service.toml
    blowfish-nb status --config service.toml  # accounts, budgets spent, analysts
    blowfish-nb verify --config service.toml  # check the ledger's keyed chain and signed heads
    blowfish-nb upgrade --config service.toml # convert an unkeyed ledger (format 1) once

Every command takes ``--key FILE`` (or reads ``key`` from the configuration's ``[ledger]``; the ledger's key file: mode 0600, outside
the ledger's folder; its folder keeps the witness head) or reads the key from
``$BLOWFISH_LEDGER_KEY``. ``serve`` never makes a ledger: ``init`` does, once.

The ledger is the only state: analysts added or revoked while a server runs
take effect on its next request (tokens are looked up in the ledger).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..exceptions import BlowfishError, InvalidParameterError

__all__ = ["main"]

_KEY_HELP = "the ledger's key file (default: the key in $BLOWFISH_LEDGER_KEY)"


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 on success, 2 on a refused input or a bad ledger)."""
    parser = argparse.ArgumentParser(prog="blowfish-nb", description="blowfish_nb analyst service (curator side)")
    sub = parser.add_subparsers(dest="command", required=True)
    p_serve = sub.add_parser("serve", help="serve a data set to analysts over HTTP")
    p_serve.add_argument("config", help="the service's .toml or .yaml file")
    p_serve.add_argument("--host")
    p_serve.add_argument("--port", type=int)
    p_serve.add_argument("--key", help=_KEY_HELP)
    p_an = sub.add_parser("analyst", help="add, revoke or rotate an analyst's token")
    p_an.add_argument("action", choices=["add", "revoke", "rotate"])
    p_an.add_argument("name")
    p_an.add_argument("account", nargs="?")
    p_an.add_argument("--config", required=True)
    p_an.add_argument("--key", help=_KEY_HELP)
    for name, text in (("init", "make a new, empty ledger (and its key file when --key names none)"),
                       ("status", "accounts, budgets and analysts"),
                       ("verify", "check the ledger's keyed chain, derived tables and signed heads"),
                       ("upgrade", "convert an unkeyed ledger of format 1 to the keyed format (once)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--config", required=True)
        p.add_argument("--key", help=_KEY_HELP)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except BlowfishError as exc:
        print(f"blowfish-nb: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2


def _run(args) -> int:
    from .config import load_config
    from .ledger import Ledger

    config = load_config(args.config)
    args.key = args.key or config.key_file  # --key wins over the configuration's ledger.key
    if args.command == "serve":
        return _serve(config, args)
    if args.command == "upgrade":
        from .migrate import upgrade

        count, old, new = upgrade(config.ledger, key_file=args.key)
        print(f"ledger {config.ledger}: {count} events checked under format 1 (old head {old}) and re-chained under "
              f"the key (new head {new})")
        return 0
    if args.command == "init":
        if os.path.exists(config.ledger):
            print(f"blowfish-nb: a ledger exists at {config.ledger}; init never replaces one", file=sys.stderr)
            return 2
        with Ledger(config.ledger, key_file=args.key, create=True) as ledger:
            if ledger.key_created:
                print(f"new ledger key written to {args.key} (mode 0600): keep it, and a copy, outside the ledger's "
                      "folder; without it the ledger cannot be opened")
        print(f"new ledger at {config.ledger}")
        return 0
    with Ledger(config.ledger, key_file=args.key) as ledger:
        if args.command == "analyst":
            if args.action == "add":
                if not args.account:
                    print("blowfish-nb: analyst add needs NAME ACCOUNT", file=sys.stderr)
                    return 2
                known = {a["account"] for a in ledger.accounts()}
                if args.account not in known and args.account in config.accounts:
                    raise InvalidParameterError(
                        f"account {args.account!r} is in the configuration but not yet in the ledger "
                        f"{config.ledger!r}: 'blowfish-nb serve {args.config}' records the configuration's accounts "
                        "when it starts; run it once, then add the analyst")
                print(ledger.add_analyst(args.name, args.account))
            elif args.action == "revoke":
                ledger.revoke(args.name)
                print(f"revoked {args.name}")
            else:
                print(ledger.rotate(args.name))
        elif args.command == "status":
            print(json.dumps({"accounts": ledger.accounts(), "analysts": ledger.analysts()}, indent=1))
        else:
            count, head = ledger.verify()
            print(f"ledger {config.ledger}: {count} events, keyed chain and heads verify, head {head}")
    return 0


def _serve(config, args) -> int:
    import uvicorn

    from .app import create_app
    from .core import Service
    from .launch import bind
    from .limits import uvicorn_config

    host = args.host or config.host
    port = config.port if args.port is None else args.port
    sock = bind(host, port)  # bound before the data are read: a busy port fails fast
    service = Service(config.load_data(), bins=config.bins, policy=config.policy, bounds=config.bounds,
                      ledger=config.ledger, accounts=config.accounts, analysts=config.analysts, key_file=args.key)
    for name, token in service.new_tokens.items():
        print(f"token for new analyst {name}: {token}", flush=True)
    url = f"http://{host}:{sock.getsockname()[1]}"
    print(f"blowfish_nb analyst service serving {service.catalog.columns} at {url}", flush=True)
    app = create_app(service, rate=config.rate, burst=config.burst, max_body=config.max_body, limits=config.limits)
    server = uvicorn.Server(uvicorn_config(app, config.limits))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the signal it caught after a graceful shutdown
        pass
    finally:
        service.close()
    print("blowfish_nb analyst service stopped", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

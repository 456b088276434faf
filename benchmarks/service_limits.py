"""Limits before authentication, measured on 127.0.0.1: a wrong-token flood and slow clients (issue 27 item 5).

Uses only ``bf.serve`` with its defaults and raw sockets, so the same script measures any version::

    cd /tmp && PYTHONPATH=/path/to/checkout python /path/to/checkout/benchmarks/service_limits.py

(run from outside the checkout, so that ``PYTHONPATH`` picks the ``blowfish_nb`` measured; the first line
printed says which). Another checkout's ``blowfish_nb`` on ``PYTHONPATH`` gives the before column.

Bounded: ``--flood`` requests (300), ``--slow`` sockets (50), ``--wait`` seconds (13).
"""

from __future__ import annotations

import argparse
import socket
import tempfile
import time
from collections import Counter
from pathlib import Path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flood", type=int, default=300)
    parser.add_argument("--slow", type=int, default=50)
    parser.add_argument("--wait", type=float, default=13.0)
    args = parser.parse_args(argv)

    import httpx

    import blowfish_nb as bf
    from blowfish_nb import datasets

    print(f"blowfish_nb from {Path(bf.__file__).parent}")
    folder = Path(tempfile.mkdtemp())
    srv = bf.serve(datasets.salaries(n=300, seed=1), bins={"age": 31}, bounds={"age": (18, 80)}, policy="line",
                   ledger=folder / "l.db", accounts={"a": 1.0}, analysts={"ana": "a"})
    try:
        start = time.monotonic()
        with httpx.Client(base_url=srv.url, headers={"Authorization": "Bearer guess"}) as c:
            statuses = Counter(c.get("/v1/budget").status_code for _ in range(args.flood))
        elapsed = time.monotonic() - start
        print(f"flood: {args.flood} wrong tokens in {elapsed:.1f} s -> "
              + ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items())))

        host, port = srv.url.removeprefix("http://").split(":")
        sockets = []
        for _ in range(args.slow):
            s = socket.create_connection((host, int(port)), timeout=5)
            s.sendall(b"GET /v1/budget HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
            sockets.append(s)
        time.sleep(args.wait)
        still_open = 0
        for s in sockets:
            s.setblocking(False)
            try:
                still_open += s.recv(1) != b""
            except BlockingIOError:
                still_open += 1
            except OSError:
                pass
            s.close()
        print(f"slow clients: {still_open} of {args.slow} sockets with a partial head still open after {args.wait:g} s")
    finally:
        srv.stop()


if __name__ == "__main__":
    main()

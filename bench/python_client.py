"""Contender (c): Google's official Python client, same workload as ttl-bench.

Writes ROWS rows of the `Event` workload (one-second expiration: every cell's
timestamp is the row's expiry; each column cleared, then set, as the library
does) with the client's MutationsBatcher, then scans them all with a
timestamp-range filter and decodes them. Prints one JSON line. Needs
BIGTABLE_EMULATOR_HOST.
"""

import argparse
import datetime as dt
import json
import struct
import time

from google.cloud import bigtable
from google.cloud.bigtable import row_filters


def peak_rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--project", required=True)
    p.add_argument("--instance", required=True)
    p.add_argument("--table", required=True)
    p.add_argument("--rows", type=int, default=100_000)
    a = p.parse_args()

    client = bigtable.Client(project=a.project, admin=True)
    table = client.instance(a.instance).table(a.table)
    now = dt.datetime.now(dt.timezone.utc)
    fam = "e"

    start = time.perf_counter()
    with table.mutations_batcher(flush_count=10_000) as batcher:
        for i in range(a.rows):
            expires = now + dt.timedelta(hours=1, seconds=i % 1000)
            row = table.direct_row(b"ev%08d" % i)
            row.delete_cell(fam, b"user")
            row.set_cell(fam, b"user", ("user-%d" % (i % 5000)).encode(), timestamp=expires)
            row.delete_cell(fam, b"url")
            row.set_cell(fam, b"url", ("https://example.com/page/%d/%d" % (i % 97, i)).encode(), timestamp=expires)
            row.delete_cell(fam, b"clicks")
            row.set_cell(fam, b"clicks", struct.pack(">q", i * 7), timestamp=expires)
            batcher.mutate(row)
    write_s = time.perf_counter() - start
    rss = peak_rss_kib()

    start = time.perf_counter()
    visible_from = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=1)
    flt = row_filters.RowFilterChain(
        filters=[
            row_filters.TimestampRangeFilter(row_filters.TimestampRange(start=visible_from)),
            row_filters.CellsColumnLimitFilter(1),
        ]
    )
    n = 0
    for row in table.read_rows(filter_=flt):
        cells = row.cells[fam]
        event = (
            row.row_key.decode(),
            cells[b"user"][0].value.decode(),
            cells[b"url"][0].value.decode(),
            struct.unpack(">q", cells[b"clicks"][0].value)[0],
            cells[b"user"][0].timestamp,
        )
        n += 1
    scan_s = time.perf_counter() - start
    if n != a.rows:
        raise SystemExit(f"read {n} rows, wrote {a.rows}")
    print(json.dumps({"write_s": write_s, "scan_s": scan_s, "rows_read": n, "peak_rss_kib": rss}))


if __name__ == "__main__":
    main()

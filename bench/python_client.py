"""Contender (c): Google's Python client, the ttl-bench workload, one JSON line out.

Writes ROWS rows of the `Event` workload with the MutationsBatcher, then
scans them with a timestamp-range filter and decodes them; `--phase point`
(`ttl-bench concurrency`): `--calls N` single-row calls of `--op` through
the asyncio data API, `--in-flight C` at a time, each timed (a put sets the
three cells, an insert is a `CheckAndMutateRow` on any visible cell: simpler
requests than the library's). Needs BIGTABLE_EMULATOR_HOST.
"""

import argparse
import asyncio
import datetime as dt
import json
import struct
import sys
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
    p.add_argument("--phase", default="e2e")
    p.add_argument("--op")
    p.add_argument("--calls", type=int)
    p.add_argument("--in-flight", type=int, default=1)
    p.add_argument("--stored", type=int, default=1)
    p.add_argument("--fresh", type=int, default=0)
    a = p.parse_args()
    if a.phase == "point":
        asyncio.run(point(a))
        return

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


async def point(a):
    from google.cloud.bigtable.data import BigtableDataClientAsync, SetCell
    from google.cloud.bigtable.data import row_filters as rf

    def cells(i):
        ts = (int(time.time()) + 3600 + i % 1000) * 1_000_000
        return [
            SetCell("e", b"user", ("user-%d" % (i % 5000)).encode(), ts),
            SetCell("e", b"url", ("https://example.com/page/%d/%d" % (i % 97, i)).encode(), ts),
            SetCell("e", b"clicks", struct.pack(">q", i * 7), ts),
        ]

    def live():
        now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
        return rf.TimestampRangeFilter(start=now + dt.timedelta(seconds=1))

    fresh = a.fresh

    async def one(table, what, i):
        nonlocal fresh
        if what == "get":
            newest = rf.RowFilterChain(filters=[live(), rf.CellsColumnLimitFilter(1)])
            row = await table.read_row(b"ev%08d" % (i % a.stored), row_filter=newest)
            user = row.get_cells("e", b"user")[0]
            struct.unpack(">q", row.get_cells("e", b"clicks")[0].value)
            (user.value.decode(), row.get_cells("e", b"url")[0].value.decode(), user.timestamp_micros)
        elif what == "put":
            await table.mutate_row(b"ev%08d" % (i % a.stored), cells(i % a.stored))
        else:
            k, fresh = fresh, fresh + 1
            if await table.check_and_mutate_row(b"ev%08d" % k, live(), false_case_mutations=cells(k)):
                raise RuntimeError("a fresh key was taken")

    async with BigtableDataClientAsync(project=a.project) as client:
        table = client.get_table(a.instance, a.table)
        await table.read_row(b"ev%08d" % 0)  # untimed: the connection
        micros, failed, nxt = [], 0, 0

        async def worker():
            nonlocal failed, nxt
            while nxt < a.calls:
                i, nxt = nxt, nxt + 1
                what = ("put" if i % 10 == 0 else "get") if a.op == "mixed" else a.op
                t = time.perf_counter()
                try:
                    await one(table, what, i)
                except Exception as e:  # counted; the first one said
                    if failed == 0:
                        print(repr(e), file=sys.stderr)
                    failed += 1
                micros.append((time.perf_counter() - t) * 1e6)

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(a.in_flight)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "micros": micros, "failed": failed}))


if __name__ == "__main__":
    main()

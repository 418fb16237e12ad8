// Contender: Google's Node.js client (@google-cloud/bigtable), one phase of
// the ttl-bench workload per process, against BIGTABLE_EMULATOR_HOST (the
// null server of `ttl-bench null`).
//
//   node node_client.js --phase write|read --table T --rows N
//
// write: the workload's rows (three cells each, the cell timestamp the row's
//   expiry) through `table.mutate`, 10,000 rows per call, 4 calls in flight
//   (the Rust contenders' batching);
// read: `table.createReadStream` with a timestamp-range filter and the
//   newest cell per column, every row decoded (two strings, a big-endian
//   i64, the expiry).
// Prints one JSON line: the phase's wall and CPU time and the peak RSS.
// Nothing here may leave the machine: client-side metrics are switched off
// (their exporter would reach for Cloud Monitoring), and so is the probe of
// the Compute Engine metadata server that Google's auth library makes
// (a DNS query and a connection to 169.254.169.254) unless told not to.

'use strict';

process.env.METADATA_SERVER_DETECTION = 'none';

const {Bigtable} = require('@google-cloud/bigtable');

const ROWS_PER_CALL = 10000;
const IN_FLIGHT = 4;

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

function row(i, nowMs) {
  // Expiry 1 h + (i mod 1000) s ahead, whole milliseconds, in microseconds.
  const ts = (nowMs + 3600 * 1000 + (i % 1000) * 1000) * 1000;
  const clicks = Buffer.alloc(8);
  clicks.writeBigInt64BE(BigInt(i) * 7n);
  return {
    key: 'ev' + String(i).padStart(8, '0'),
    method: 'insert',
    data: {
      e: {
        user: {value: 'user-' + (i % 5000), timestamp: ts},
        url: {value: `https://example.com/page/${i % 97}/${i}`, timestamp: ts},
        clicks: {value: clicks, timestamp: ts},
      },
    },
  };
}

async function write(table, rows) {
  const nowMs = Date.now();
  let next = 0;
  async function worker() {
    while (next < rows) {
      const first = next;
      next = Math.min(rows, next + ROWS_PER_CALL);
      const entries = [];
      for (let i = first; i < next; i++) entries.push(row(i, nowMs));
      await table.mutate(entries);
    }
  }
  await Promise.all(Array.from({length: IN_FLIGHT}, worker));
  return rows;
}

function read(table) {
  const visibleFrom = new Date(Math.floor(Date.now() / 1000) * 1000 + 1000);
  return new Promise((resolve, reject) => {
    let n = 0;
    let clicksSum = 0n;
    table
      .createReadStream({
        decode: false,
        filter: [{time: {start: visibleFrom}}, {column: {cellLimit: 1}}],
      })
      .on('error', reject)
      .on('data', r => {
        const f = r.data.e;
        const event = {
          id: r.id,
          user: f.user[0].value.toString(),
          url: f.url[0].value.toString(),
          // The client turns an 8-byte value into a number itself.
          clicks: BigInt(f.clicks[0].value),
          expiresMicros: f.user[0].timestamp,
        };
        clicksSum += event.clicks;
        n++;
      })
      .on('end', () => resolve([n, clicksSum]));
  });
}

// The process's peak RSS (VmHWM): unlike getrusage's maxRSS, it counts
// nothing of the parent the process was spawned from.
function peakRssKib() {
  const status = require('fs').readFileSync('/proc/self/status', 'utf8');
  const line = status.split('\n').find(l => l.startsWith('VmHWM:'));
  return line ? Number(line.split(/\s+/)[1]) : null;
}

async function main() {
  const phase = arg('--phase');
  const rows = Number(arg('--rows', '100000'));
  const bigtable = new Bigtable({
    projectId: arg('--project', 'bench'),
    metricsEnabled: false,
  });
  const table = bigtable.instance(arg('--instance', 'null')).table(arg('--table'));
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  if (phase === 'write') {
    await write(table, rows);
  } else if (phase === 'read') {
    const [n, clicks] = await read(table);
    const expected = (7n * BigInt(rows) * BigInt(rows - 1)) / 2n;
    if (n !== rows || clicks !== expected) {
      throw new Error(`read ${n} rows (clicks ${clicks}), expected ${rows} (${expected})`);
    }
  } else {
    throw new Error('--phase write|read');
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      wall_s: wall,
      cpu_s: (cpu.user + cpu.system) / 1e6,
      peak_rss_kib: peakRssKib(),
    })
  );
  await bigtable.close();
}

main().catch(e => {
  console.error(e);
  process.exit(1);
});

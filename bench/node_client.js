// Contender: Google's Node.js client (@google-cloud/bigtable), one phase of
// the ttl-bench workload per process, against BIGTABLE_EMULATOR_HOST. Prints
// one JSON line: wall and CPU time, peak RSS (for `point`, each call's time).
//
//   node node_client.js --phase write|read|csv --table T --rows N --csv FILE [--batch N]
//   node node_client.js --phase point --table T --op OP --calls N [--in-flight C]
//
// A put is `insert` (no family cleared), an insert a `CheckAndMutateRow` on
// any visible cell: simpler requests than the library's. Nothing may leave
// the machine: client-side metrics are off, and so is the auth library's
// probe of the Compute Engine metadata server.

'use strict';

process.env.METADATA_SERVER_DETECTION = 'none';

const fs = require('fs');
const readline = require('readline');
const {Bigtable} = require('@google-cloud/bigtable');

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}

const ROWS_PER_CALL = Number(arg('--batch', '10000'));
const IN_FLIGHT = 4;

// The CSV file's lines, streamed so that the file is never held whole.
const csvLines = csv =>
  readline.createInterface({input: fs.createReadStream(csv), crlfDelay: Infinity});

// One line of the CSV as a row to `mutate`.
function row(line) {
  const fields = line.split(',');
  if (fields.length !== 4) throw new Error(`CSV: not a row: ${line}`);
  const cell = field => {
    const at = field.lastIndexOf('@');
    return [field.slice(0, at), Number(field.slice(at + 1))];
  };
  const [user, timestamp] = cell(fields[1]);
  const clicks = Buffer.alloc(8);
  clicks.writeBigInt64BE(BigInt(cell(fields[3])[0]));
  const e = {
    user: {value: user, timestamp},
    url: {value: cell(fields[2])[0], timestamp},
    clicks: {value: clicks, timestamp},
  };
  return {key: fields[0], method: 'insert', data: {e}};
}

async function write(table, csv) {
  const lines = csvLines(csv)[Symbol.asyncIterator]();
  let ended = false;
  async function readBatch() {
    const entries = [];
    while (!ended && entries.length < ROWS_PER_CALL) {
      const {value, done} = await lines.next();
      if (done) ended = true;
      else if (value) entries.push(row(value));
    }
    return entries;
  }
  // The family and qualifier rows.
  await lines.next();
  await lines.next();
  // One batch read at a time: the workers take turns at the file.
  let turn = Promise.resolve([]);
  function nextBatch() {
    const batch = turn.then(readBatch);
    turn = batch.catch(() => []);
    return batch;
  }
  let rows = 0;
  async function worker() {
    for (;;) {
      const entries = await nextBatch();
      if (entries.length === 0) return;
      rows += entries.length;
      await table.mutate(entries);
    }
  }
  await Promise.all(Array.from({length: IN_FLIGHT}, worker));
  return rows;
}

// The write phase's reading of the CSV file alone: every line made into
// the row `mutate` would take, nothing sent.
async function parseOnly(csv) {
  let n = -2;
  let keep = 0;
  for await (const line of csvLines(csv)) {
    if (n >= 0 && line) keep += row(line).key.length;
    n++;
  }
  if (keep === 0 && n > 0) throw new Error('no keys');
  return n;
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

// Row `i` of the workload (`ttl_bench::event`), as the client takes it.
function eventData(i) {
  const ts = (Math.floor(Date.now() / 1000) + 3600 + (i % 1000)) * 1e6;
  const clicks = Buffer.alloc(8);
  clicks.writeBigInt64BE(BigInt(i) * 7n);
  const cell = value => ({value, timestamp: ts});
  return {
    e: {
      user: cell(`user-${i % 5000}`),
      url: cell(`https://example.com/page/${i % 97}/${i}`),
      clicks: cell(clicks),
    },
  };
}

const key = i => `ev${String(i).padStart(8, '0')}`;

async function point(table) {
  const op = arg('--op');
  const calls = Number(arg('--calls'));
  const stored = Number(arg('--stored', '1'));
  let fresh = Number(arg('--fresh', '0'));
  const live = () => [{time: {start: new Date(Math.floor(Date.now() / 1000) * 1000 + 1000)}}];
  const one = async (what, i) => {
    if (what === 'get') {
      const [row] = await table
        .row(key(i % stored))
        .get({decode: false, filter: [...live(), {column: {cellLimit: 1}}]});
      const f = row.data.e;
      if (f.user[0].value.toString().length === 0 || BigInt(f.clicks[0].value) < 0n) {
        throw new Error('bad row');
      }
    } else if (what === 'put') {
      await table.mutate({key: key(i % stored), method: 'insert', data: eventData(i % stored)});
    } else {
      const k = fresh++;
      const [matched] = await table
        .row(key(k))
        .filter(live(), {onNoMatch: [{method: 'insert', data: eventData(k)}]});
      if (matched) throw new Error('a fresh key was taken');
    }
  };
  const micros = [];
  let next = 0;
  let failed = 0;
  async function worker() {
    for (let i = next++; i < calls; i = next++) {
      const what = op === 'mixed' ? (i % 10 === 0 ? 'put' : 'get') : op;
      const t = process.hrtime.bigint();
      try {
        await one(what, i);
      } catch (e) {
        if (failed++ === 0) console.error(e);
      }
      micros.push(Number(process.hrtime.bigint() - t) / 1e3);
    }
  }
  await Promise.all(Array.from({length: Number(arg('--in-flight', '1'))}, worker));
  return {micros, failed};
}

// The process's peak RSS (VmHWM): unlike getrusage's maxRSS, it counts
// nothing of the parent the process was spawned from.
function peakRssKib() {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
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
  // One untimed call first: the connection, the client's first-call work.
  if (phase === 'point') await table.row(key(0)).exists();
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let more = {};
  if (phase === 'point') {
    more = await point(table);
  } else if (phase === 'write') {
    const written = await write(table, arg('--csv'));
    if (written !== rows) throw new Error(`wrote ${written} rows, expected ${rows}`);
  } else if (phase === 'read') {
    const [n, clicks] = await read(table);
    const expected = (7n * BigInt(rows) * BigInt(rows - 1)) / 2n;
    if (n !== rows || clicks !== expected) {
      throw new Error(`read ${n} rows (clicks ${clicks}), expected ${rows} (${expected})`);
    }
  } else if (phase === 'csv') {
    const parsed = await parseOnly(arg('--csv'));
    if (parsed !== rows) throw new Error(`parsed ${parsed} rows, expected ${rows}`);
  } else {
    throw new Error('--phase write|read|csv|point');
  }
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  console.log(
    JSON.stringify({
      wall_s: wall,
      cpu_s: (cpu.user + cpu.system) / 1e6,
      peak_rss_kib: peakRssKib(),
      ...more,
    })
  );
  await bigtable.close();
}

main().catch(e => {
  console.error(e);
  process.exit(1);
});

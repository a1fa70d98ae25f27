// The Parquet baseline of bench/table_bench.py, through DuckDB (npm package
// @duckdb/node-api).
//
//   node duckdb_table.mjs write TABLE.jsonl FLAT.parquet MAP.parquet
//       FLAT: one column per feature (label, every dense id, every sparse id);
//       MAP: the dense and sparse maps as two MAP columns.
//   node duckdb_table.mjs write-csv TABLE.csv OUT.parquet
//       The CSV as DuckDB reads it (unquoted NA and empty cells missing).
//   node duckdb_table.mjs read FILE.parquet JOB.txt [flat|map] [THREADS]
//       Materialises the job's features (one per line in JOB.txt) from every
//       row on THREADS threads (default 1); prints {"rows", "seconds",
//       "bytes_selected", "rss_before_kib", "peak_rss_kib"} (the process's
//       resident set before the read, and its peak from then on).
//   node duckdb_table.mjs scan FILE.parquet COLUMN,COLUMN,... RUNS
//       On one thread, the median seconds of RUNS runs of a sum of each
//       column, and of materialising the columns into a temporary table;
//       prints {"sum_seconds", "materialise_seconds", "rows"}.
import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync, writeFileSync } from 'node:fs';

const quote = (name) => '"' + name.replaceAll('"', '""') + '"';
const literal = (s) => "'" + s.replaceAll("'", "''") + "'";

async function connect() {
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  await c.run('SET threads = 1');
  return c;
}

async function write(jsonl, flat, map) {
  const c = await connect();
  await c.run('SET threads = 2');
  const source = `read_json(${literal(jsonl)}, format = 'newline_delimited', ` +
      `columns = {label: 'BIGINT', dense: 'MAP(VARCHAR, FLOAT)', sparse: 'MAP(VARCHAR, BIGINT[])'})`;
  await c.run(`CREATE TABLE rows AS SELECT * FROM ${source}`);
  const keys = async (column) => (await c.runAndReadAll(
      `SELECT DISTINCT unnest(map_keys(${column})) AS k FROM rows ORDER BY 1`)).getRows().map((r) => r[0]);
  const columns = ['label'];
  for (const k of await keys('dense')) columns.push(`dense[${literal(k)}] AS ${quote(k)}`);
  for (const k of await keys('sparse')) columns.push(`sparse[${literal(k)}] AS ${quote(k)}`);
  await c.run(`COPY (SELECT ${columns.join(', ')} FROM rows) TO ${literal(flat)} (FORMAT parquet, COMPRESSION zstd)`);
  await c.run(`COPY rows TO ${literal(map)} (FORMAT parquet, COMPRESSION zstd)`);
}

async function writeCsv(csv, out) {
  const c = await connect();
  await c.run('SET threads = 2');
  await c.run(`COPY (SELECT * FROM read_csv(${literal(csv)}, header = true, nullstr = ['NA', ''])) ` +
              `TO ${literal(out)} (FORMAT parquet, COMPRESSION zstd)`);
}

async function read(file, jobFile, layout, threads) {
  const features = readFileSync(jobFile, 'utf8').split('\n').filter((l) => l.length > 0);
  const c = await connect();
  await c.run(`SET threads = ${Number(threads)}`);
  // The resident set, with its peak reset to it (Linux).
  writeFileSync('/proc/self/clear_refs', '5');
  const status = (field) => Number(readFileSync('/proc/self/status', 'utf8').match(new RegExp(`${field}:\\s*(\\d+)`))[1]);
  const rssBefore = status('VmRSS');
  let select, selected;
  if (layout === 'map') {
    select = 'dense, sparse';
    selected = `SELECT sum(total_compressed_size) FROM parquet_metadata(${literal(file)})`;
  } else {
    select = features.map(quote).join(', ');
    const names = features.map(literal).join(', ');
    selected = `SELECT sum(total_compressed_size) FROM parquet_metadata(${literal(file)}) ` +
        `WHERE path_in_schema IN (${names}) OR split_part(path_in_schema, ', ', 1) IN (${names})`;
  }
  const start = performance.now();
  await c.run(`CREATE TEMP TABLE projection AS SELECT ${select} FROM read_parquet(${literal(file)})`);
  const seconds = (performance.now() - start) / 1000;
  const rows = Number((await c.runAndReadAll('SELECT count(*) FROM projection')).getRows()[0][0]);
  const bytes = Number((await c.runAndReadAll(selected)).getRows()[0][0]);
  console.log(JSON.stringify({ rows, seconds, rows_per_s: rows / seconds, bytes_selected: bytes,
                               rss_before_kib: rssBefore, peak_rss_kib: status('VmHWM') }));
}

async function scan(file, columnList, runs) {
  const columns = columnList.split(',').map(quote);
  const c = await connect();
  const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const sums = [], materialised = [];
  let rows = 0;
  for (let i = 0; i < Number(runs); ++i) {
    let start = performance.now();
    await c.runAndReadAll(`SELECT ${columns.map((q) => `sum(${q})`).join(', ')} FROM read_parquet(${literal(file)})`);
    sums.push((performance.now() - start) / 1000);
    start = performance.now();
    await c.run(`CREATE OR REPLACE TEMP TABLE projection AS SELECT ${columns.join(', ')} FROM read_parquet(${literal(file)})`);
    materialised.push((performance.now() - start) / 1000);
    rows = Number((await c.runAndReadAll('SELECT count(*) FROM projection')).getRows()[0][0]);
    await c.run('DROP TABLE projection');
  }
  console.log(JSON.stringify({ sum_seconds: median(sums), materialise_seconds: median(materialised), rows }));
}

const [command, ...args] = process.argv.slice(2);
if (command === 'write' && args.length === 3) {
  await write(...args);
} else if (command === 'write-csv' && args.length === 2) {
  await writeCsv(...args);
} else if (command === 'scan' && args.length === 3) {
  await scan(...args);
} else if (command === 'read' && args.length >= 2) {
  await read(args[0], args[1], args[2] ?? 'flat', args[3] ?? 1);
} else {
  console.error('usage: node duckdb_table.mjs write TABLE.jsonl FLAT.parquet MAP.parquet\n' +
                '       node duckdb_table.mjs write-csv TABLE.csv OUT.parquet\n' +
                '       node duckdb_table.mjs read FILE.parquet JOB.txt [flat|map] [THREADS]\n' +
                '       node duckdb_table.mjs scan FILE.parquet COLUMN,... RUNS');
  process.exit(2);
}

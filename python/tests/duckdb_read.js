// Prints DuckDB's reading of a CSV as JSON: {column: [value or null, ...]}.
// usage: node duckdb_read.js CSV TYPES_JSON [SQL]   (TYPES_JSON: {"name": "DUCKDB TYPE"})
// With SQL, prints its result instead; the CSV is the view t.
// Doubles are printed as their 16 hex digit bit patterns ("nan" for any NaN,
// whose bits JavaScript may not keep), integers and timestamps (microseconds)
// as decimal text.
const { DuckDBInstance } = require('@duckdb/node-api');

(async () => {
  const [csv, typesJson, sql] = process.argv.slice(2);
  const types = JSON.parse(typesJson);
  const columns = Object.entries(types).map(([n, t]) => `'${n}': '${t}'`).join(', ');
  const db = await DuckDBInstance.create(':memory:');
  const connection = await db.connect();
  await connection.run(
    `CREATE VIEW t AS SELECT * FROM read_csv('${csv}', header = true, columns = {${columns}})`);
  const reader = await connection.runAndReadAll(sql || 'SELECT * FROM t');
  const out = {};
  const names = reader.columnNames();
  reader.getColumns().forEach((values, j) => {
    out[names[j]] = values.map((v) => {
      if (v === null) return null;
      if (typeof v === 'number') {
        if (Number.isNaN(v)) return 'nan';
        const b = Buffer.alloc(8);
        b.writeDoubleLE(v);
        return b.readBigUInt64LE().toString(16).padStart(16, '0');
      }
      if (typeof v === 'bigint' || typeof v === 'string' || typeof v === 'boolean') return v.toString();
      if (v.micros !== undefined) return v.micros.toString();
      throw new Error(`unexpected value ${v} in column ${names[j]}`);
    });
  });
  process.stdout.write(JSON.stringify(out));
})().catch((e) => {
  process.stderr.write(String(e) + '\n');
  process.exit(1);
});

// Runs SQL with DuckDB over an audit export, for audit_export_test.go:
// node query.mjs QUERIES.json prints {"<name>": [rows as JSON objects]}.
// QUERIES.json is {"<name>": "<sql>", ...}.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const queries = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const out = {};
for (const [name, sql] of Object.entries(queries)) {
  try {
    const reader = await conn.runAndReadAll(sql);
    out[name] = reader.getRowObjectsJson();
  } catch (e) {
    console.error(`${name}: ${e.message}\n${sql}`);
    process.exit(1);
  }
}
process.stdout.write(JSON.stringify(out));

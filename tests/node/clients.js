// node-postgres against a running Tabula. Usage: node clients.js PORT
const { Client } = require('pg');
const assert = require('assert');

(async () => {
  const client = new Client({ host: '127.0.0.1', port: Number(process.argv[2]), user: 'tabula', database: 'tabula' });
  await client.connect();
  await client.query('CREATE TABLE js (k bigint PRIMARY KEY, name text, n integer, ok boolean)');
  for (let i = 0; i < 5; i++) {
    await client.query('INSERT INTO js VALUES ($1, $2, $3, $4)', [i, `n${i}`, i * 10, i % 2 === 0]);
  }
  const r = await client.query({ text: 'SELECT k, name, n, ok FROM js WHERE k = $1', values: [2], name: 'get-one' });
  assert.deepStrictEqual(r.rows, [{ k: '2', name: 'n2', n: 20, ok: true }]);
  const again = await client.query({ text: 'SELECT k, name, n, ok FROM js WHERE k = $1', values: [3], name: 'get-one' });
  assert.strictEqual(again.rows[0].name, 'n3');
  const range = await client.query('SELECT k FROM js WHERE k >= $1 ORDER BY k DESC', [3]);
  assert.deepStrictEqual(range.rows.map((x) => x.k), ['4', '3']);
  assert.strictEqual((await client.query('UPDATE js SET n = n + 1 WHERE k = 1')).rowCount, 1);
  try {
    await client.query('INSERT INTO js VALUES (1, $1, 0, false)', ['dup']);
    assert.fail('duplicate accepted');
  } catch (e) {
    assert.strictEqual(e.code, '23505');
  }
  // A parameter in a FROM function's arguments (sent untyped, as node-postgres sends every parameter),
  // and INSERT ... SELECT with one in its query.
  const series = await client.query('SELECT count(*) AS n, sum(g) AS s FROM generate_series(1, $1) g', [10]);
  assert.deepStrictEqual(series.rows, [{ n: '10', s: '55' }]);
  const copied = await client.query('INSERT INTO js SELECT g, $2, 0, true FROM generate_series(100, $1) g', [104, 'gen']);
  assert.strictEqual(copied.rowCount, 5);
  await client.end();
  console.log('node clients ok');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});

// Knex with its defaults against Tabula: migrations run by `migrate.latest` (each in a transaction, under
// Knex's lock table), the query builder's CRUD, a failing migration that leaves nothing behind, and
// `migrate.rollback` down to nothing and `migrate.latest` again. Usage: node knex_e2e.js PORT
const assert = require('assert');
const port = Number(process.argv[2]);

const migrations = {
  '001_users': {
    up: (k) => k.schema.createTable('users', (t) => {
      t.increments('id');
      t.string('email').notNullable().unique();
      t.string('name');
      t.timestamps(true, true);
    }),
    down: (k) => k.schema.dropTable('users'),
  },
  '002_posts': {
    up: (k) => k.schema.createTable('posts', (t) => {
      t.increments();
      t.integer('user_id').unsigned().notNullable().references('id').inTable('users').onDelete('CASCADE');
      t.string('title').notNullable();
      t.text('body');
      t.boolean('published').defaultTo(false);
      t.index(['user_id', 'published']);
    }),
    down: (k) => k.schema.dropTable('posts'),
  },
  '003_alter_users': {
    up: (k) => k.schema.alterTable('users', (t) => {
      t.integer('age');
      t.renameColumn('name', 'full_name');
    }),
    down: (k) => k.schema.alterTable('users', (t) => {
      t.dropColumn('age');
      t.renameColumn('full_name', 'name');
    }),
  },
};

// A migration that fails half way: its table must not stay.
const failing = {
  '004_fails': {
    up: async (k) => {
      await k.schema.createTable('half_made', (t) => { t.increments(); t.string('x'); });
      await k.raw('SELECT * FROM no_such_table');
    },
    down: (k) => k.schema.dropTable('half_made'),
  },
};

function source(set) {
  return {
    getMigrations: async () => Object.keys(set),
    getMigrationName: (m) => m,
    getMigration: async (m) => set[m],
  };
}

function connect(set) {
  return require('knex')({
    client: 'pg',
    connection: { host: '127.0.0.1', port, user: 'tabula', database: 'tabula' },
    migrations: { migrationSource: source(set) },
  });
}

async function tables(k) {
  const rows = await k('information_schema.tables').where({ table_schema: 'public' }).select('table_name');
  return rows.map((r) => r.table_name).sort();
}

async function main() {
  const knex = connect(migrations);
  const [batch, log] = await knex.migrate.latest();
  assert.strictEqual(batch, 1);
  assert.deepStrictEqual(log, ['001_users', '002_posts', '003_alter_users']);
  assert.deepStrictEqual(await tables(knex), ['knex_migrations', 'knex_migrations_lock', 'posts', 'users']);
  const [, pending] = await knex.migrate.list();
  assert.strictEqual(pending.length, 0);

  // The query builder.
  const [ada] = await knex('users').insert({ email: 'ada@example.com', full_name: 'Ada', age: 36 }).returning(['id', 'created_at']);
  assert.ok(Number.isInteger(ada.id));
  assert.ok(ada.created_at instanceof Date);
  const [bob] = await knex('users').insert({ email: 'bob@example.com', full_name: 'Bob' }).returning('id');
  await knex('posts').insert([
    { user_id: ada.id, title: 'Engines', published: true },
    { user_id: ada.id, title: 'Notes' },
    { user_id: bob.id, title: 'Hello', body: 'first' },
  ]);
  const published = await knex('posts').join('users', 'users.id', 'posts.user_id')
    .where('posts.published', true).select('users.full_name', 'posts.title');
  assert.deepStrictEqual(published, [{ full_name: 'Ada', title: 'Engines' }]);
  const counts = await knex('posts').select('user_id').count('* as n').groupBy('user_id').orderBy('user_id');
  assert.deepStrictEqual(counts.map((r) => Number(r.n)), [2, 1]);
  assert.strictEqual(await knex('users').where({ id: bob.id }).update({ age: 40 }), 1);
  assert.strictEqual((await knex('users').where('age', '>', 37).first('full_name')).full_name, 'Bob');

  // Constraints answer with PostgreSQL's SQLSTATEs.
  await assert.rejects(knex('users').insert({ email: 'ada@example.com' }), (e) => e.code === '23505');
  await assert.rejects(knex('posts').insert({ user_id: 999999, title: 'orphan' }), (e) => e.code === '23503');
  await assert.rejects(knex('posts').insert({ user_id: ada.id }), (e) => e.code === '23502');

  // A transaction that fails is undone; ON DELETE CASCADE removes the children.
  await assert.rejects(knex.transaction(async (trx) => {
    await trx('users').insert({ email: 'carol@example.com' });
    throw new Error('changed my mind');
  }));
  assert.strictEqual(Number((await knex('users').count('* as n'))[0].n), 2);
  await knex('users').where({ id: ada.id }).del();
  assert.deepStrictEqual((await knex('posts').select('title')).map((r) => r.title), ['Hello']);
  await knex.destroy();

  // A failing migration rolls back whole: no table, no record of it, the lock released.
  const failingKnex = connect({ ...migrations, ...failing });
  await assert.rejects(failingKnex.migrate.latest(), /no_such_table/);
  assert.deepStrictEqual(await tables(failingKnex), ['knex_migrations', 'knex_migrations_lock', 'posts', 'users']);
  const [done] = await failingKnex.migrate.list();
  assert.strictEqual(done.length, 3);
  await failingKnex.destroy();

  // Down to nothing and up again.
  const again = connect(migrations);
  await again.migrate.rollback(undefined, true);
  assert.deepStrictEqual(await tables(again), ['knex_migrations', 'knex_migrations_lock']);
  const [batch2, log2] = await again.migrate.latest();
  assert.strictEqual(batch2, 1);
  assert.strictEqual(log2.length, 3);
  const columns = await again('information_schema.columns').where({ table_name: 'users' }).orderBy('ordinal_position').select('column_name');
  assert.deepStrictEqual(columns.map((c) => c.column_name), ['id', 'email', 'full_name', 'created_at', 'updated_at', 'age']);
  await again.destroy();
  console.log('knex: migrations, query builder, failing migration, rollback and latest again: ok');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

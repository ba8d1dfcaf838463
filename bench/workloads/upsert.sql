\set k random(1, :rows)
INSERT INTO kv (k, v, n) VALUES (:k, 'upserted', 1) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;

\set k random(1, :rows)
UPDATE kv SET n = n + 1 WHERE k = :k;

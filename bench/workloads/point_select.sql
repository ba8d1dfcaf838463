\set k random(1, :rows)
SELECT v FROM kv WHERE k = :k;

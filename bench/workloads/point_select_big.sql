\set k random(1, :big_rows)
SELECT v FROM kv_big WHERE k = :k;

\set k random(1000000000000, 4611686018427387903)
\set b :k % 1000
\set c :k % 77
INSERT INTO ix3 (k, a, b, c, v) VALUES (:k, :k, :b, :c, 'inserted');

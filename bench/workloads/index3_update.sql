\set k random(1, :irows)
\set a random(1, 1000000000)
\set b :a % 1000
\set c :a % 77
UPDATE ix3 SET a = :a, b = :b, c = :c WHERE k = :k;

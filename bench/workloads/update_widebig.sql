\set k random(1, 20)
UPDATE widebig SET n = n + 1 WHERE k = :k;

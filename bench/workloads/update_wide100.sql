\set k random(1, 1000)
UPDATE wide100 SET n = n + 1 WHERE k = :k;

\set k random(1000000000000, 4611686018427387903)
INSERT INTO ins (k, v, n) VALUES (:k, 'inserted', 1);

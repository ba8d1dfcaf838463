\set k random(1000000000000, 4611686018427387903)
INSERT INTO ix (k, card, v) VALUES (:k, :k, 'inserted');

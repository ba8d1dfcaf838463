\set k random(1, :irows)
\set c random(1, 1000000000)
UPDATE ix SET card = :c WHERE k = :k;

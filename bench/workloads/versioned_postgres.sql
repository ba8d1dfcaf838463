\set k random(1, :vrows)
SELECT v, ver FROM vt WHERE k = :k ORDER BY ver DESC LIMIT 3;

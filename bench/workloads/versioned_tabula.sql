\set k random(1, :vrows)
SELECT v, _version FROM vt(latest_n => 3) WHERE k = :k;

\set s random(1, :rows - 100)
\set e :s + 100
SELECT k, v FROM kv WHERE k >= :s AND k < :e;

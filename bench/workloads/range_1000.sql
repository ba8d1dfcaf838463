\set s random(1, :rows - 1000)
\set e :s + 1000
SELECT k, v FROM kv WHERE k >= :s AND k < :e;

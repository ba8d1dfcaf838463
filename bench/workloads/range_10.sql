\set s random(1, :rows - 10)
\set e :s + 10
SELECT k, v FROM kv WHERE k >= :s AND k < :e;

\set c random(1, :irows)
SELECT k, v FROM ix WHERE card = :c * 7;

\set c random(1, :irows - 10)
SELECT k, v FROM ix WHERE card >= :c * 7 AND card < (:c + 10) * 7;

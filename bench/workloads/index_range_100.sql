\set c random(1, :irows - 100)
SELECT k, v FROM ix WHERE card >= :c * 7 AND card < (:c + 100) * 7;

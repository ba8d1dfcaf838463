\set c random(1, :irows - 100)
SELECT k, v FROM ixa WHERE card >= :c AND card < :c + 100;

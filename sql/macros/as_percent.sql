-- as_percent(x): a fraction x (a share, or CPUs) as the percent MindData wrote, 100 x x rounded to 9
-- decimals: MindData's percents have few decimals, so this gives back the very double of the percent (or of
-- the mean of percents) that MindSpore's Python rounds, where a bare 100 * x could be off by one ulp
-- (100 * 0.29 = 28.999999999999996) and round a half the other way.
CREATE MACRO as_percent(x) AS round(100 * x, 9)

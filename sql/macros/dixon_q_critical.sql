-- dixon_q_critical(n): the one-sided 99.5 % critical value of Dixon's Q test of the minimum for a sample of n
-- (3 to 100; NULL otherwise), with the statistic msprof-analyze's slow_rank uses for each n: r10 for 3-7, r11 for
-- 8-10, r21 for 11-13, r22 for 14-100. n 3-25: the published table (Dixon 1951 as corrected by Rorabacher 1991,
-- alpha = 0.005; n = 10 is 0.638, the value msprof-analyze uses). n 26-100: profpipe's own Monte Carlo of r22 on
-- normal samples (1.6 million per n, the 0.995 quantile, rounded to 3 decimals and made non-increasing in n), as
-- the published values for those sizes (Verma and Quiroz-Ruiz 2006) were not at hand; it gives msprof-analyze's
-- n = 100 value, 0.341, and lies within 0.007 of the published values for n 14-25.
CREATE MACRO dixon_q_critical(n) AS CASE WHEN n BETWEEN 3 AND 100 THEN ([
    0.994, 0.926, 0.821, 0.740, 0.680, 0.725, 0.677, 0.638, 0.713, 0.675, 0.649, 0.674, 0.647, 0.624, 0.605, 0.589,
    0.575, 0.562, 0.551, 0.541, 0.532, 0.524, 0.516, 0.510, 0.503, 0.496, 0.489, 0.484, 0.478, 0.472, 0.467, 0.462,
    0.457, 0.454, 0.450, 0.446, 0.442, 0.439, 0.435, 0.432, 0.429, 0.426, 0.423, 0.420, 0.417, 0.414, 0.412, 0.410,
    0.407, 0.404, 0.402, 0.401, 0.398, 0.396, 0.394, 0.392, 0.391, 0.388, 0.387, 0.385, 0.384, 0.382, 0.380, 0.379,
    0.377, 0.375, 0.374, 0.372, 0.372, 0.370, 0.369, 0.367, 0.366, 0.364, 0.364, 0.363, 0.361, 0.360, 0.359, 0.358,
    0.356, 0.356, 0.355, 0.354, 0.352, 0.352, 0.350, 0.350, 0.349, 0.348, 0.347, 0.346, 0.346, 0.344, 0.343, 0.343,
    0.341, 0.341]::DOUBLE[])[n - 2] END

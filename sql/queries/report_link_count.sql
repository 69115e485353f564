-- Report, communication page (profpipe/report/pages.py): how many links (rank, link, transport) comm_link_stats
-- holds: the full length of the slow-links table, which keeps the slowest.
SELECT count(DISTINCT (rank, link, transport)) AS links
FROM comm_link_stats

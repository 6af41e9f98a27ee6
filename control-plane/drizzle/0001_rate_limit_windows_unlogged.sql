-- Rate-limit counters are rewritten on every request and worthless after a minute:
-- no WAL for them (a crash loses at most the current window's counts).
ALTER TABLE "rate_limit_windows" SET UNLOGGED;

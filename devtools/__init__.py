"""Harnesses for the tests, the benchmarks and the scripts: throwaway PostgreSQL, PgBouncer and HAProxy servers
on loopback, a live server of this service, Debian's headless Chromium, hostile bursts and synthetic rating
streams.  Imported by ``tests/``, ``bench/`` and ``scripts/``; the service itself never imports it."""

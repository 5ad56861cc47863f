"""Fault tests: hostile config files, signals, concurrency."""

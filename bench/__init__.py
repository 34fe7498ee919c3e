"""Benchmarks: ``make bench`` (``python -m bench``) runs them all and writes ``bench/results.json``.

Each benchmark measures its baseline in the same run, on the same machine, and reports medians.
"""

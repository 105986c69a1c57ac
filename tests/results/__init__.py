"""Tests of :mod:`pymc_evidence.results`."""

"""Tests of :mod:`pymc_evidence.api`."""

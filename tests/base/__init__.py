"""Tests of :mod:`pymc_evidence.base`."""

"""Tests of :mod:`pymc_evidence.transforms`."""

"""Tests of :mod:`pymc_evidence.steps`."""

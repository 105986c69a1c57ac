"""Tests of :mod:`pymc_evidence.methods`."""

"""Tests of :mod:`pymc_evidence.runtime`."""

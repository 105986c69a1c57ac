"""Tests of :mod:`pymc_evidence.engines`."""

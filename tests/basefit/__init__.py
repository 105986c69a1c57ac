"""Tests of :mod:`pymc_evidence.basefit`."""

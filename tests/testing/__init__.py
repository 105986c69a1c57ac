"""Tests of :mod:`pymc_evidence.testing`."""

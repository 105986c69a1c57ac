"""Tests of :mod:`pymc_evidence.plots`."""

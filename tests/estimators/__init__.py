"""Tests of :mod:`pymc_evidence.estimators`."""

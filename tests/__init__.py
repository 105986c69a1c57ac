"""The test suite, laid out like the package: ``tests/<subpackage>/test_<module>.py`` tests
``pymc_evidence/<subpackage>/<module>.py`` and ``tests/test_<module>.py`` a top-level module.

Each folder is a package, so that files of the same name in two folders do not collide and
the one accuracy rule imports alike from every folder (``from tests._accuracy import
assert_log_z``); pytest puts the repository root on ``sys.path``.
"""

"""The test suite, mirroring the packages: one folder per package folder, e2e/ by feature,
_harness/ for support code (on ``sys.path``, imported by bare name)."""

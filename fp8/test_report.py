"""fp8/test_report.py — what the Python tests beside the FP8 core (test_fp8_ml_dtypes.py, test_fp8_blocks.py) share:
their numpy/ml_dtypes import with a skip line when `make deps` has not run, a PASS/FAIL line per check, and the closing
"<suite>: N passed, M failed" line that .ci/run adds up."""
import sys


def import_or_skip(test, suite):
    """(ml_dtypes, numpy), or print the skip lines and exit 0 when either is missing."""
    try:
        import ml_dtypes
        import numpy
    except ImportError as e:
        print(f"SKIP {test} ({e}; run `make deps`)")
        print(f"{suite}: 0 passed, 0 failed")
        sys.exit(0)
    return ml_dtypes, numpy


class Report:
    def __init__(self, suite):
        self.suite, self.passed, self.failed = suite, 0, 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"PASS {name}")
        else:
            self.failed += 1
            print(f"FAIL {name} {detail}")

    def finish(self):
        print(f"{self.suite}: {self.passed} passed, {self.failed} failed")
        sys.exit(0 if self.failed == 0 else 1)

#!/usr/bin/env bash
# The Python property tests' long random profile, one test at a time so that each prints its Hypothesis statistics
# as it ends (a run of all at once prints them only at the very end). From the repository root, after a build:
#   scripts/properties-long.sh [EXAMPLES_PER_TEST] > long.log     (default 2000, the "long" profile's)
# Each test's line "== NAME exit CODE at SECONDS s" follows its statistics; exit 1 marks a failure with its
# reproducer above it.
set -uo pipefail
cd "$(dirname "$0")/.."
build=$PWD/build
examples=${1:-2000}
# Debian's interpreter, which has the packages quickstart.sh installs (another python3 may shadow it on the PATH).
python=${PYTHON:-$([ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)}
start=$(date +%s)
names=$(PYTHONPATH=$build/python "$python" -m pytest -q -p no:cacheprovider --collect-only python/tests/test_properties.py 2>/dev/null | grep "::")
failed=0
for name in $names; do
  GLRECON_HYPOTHESIS_PROFILE=long GLRECON_HYPOTHESIS_EXAMPLES=$examples PYTHONPATH=$build/python GLRECON_CLI=$build/glrecon \
    "$python" -m pytest -q -p no:cacheprovider --hypothesis-show-statistics "$name"
  code=$?
  [ $code -ne 0 ] && failed=1
  echo "== $name exit $code at $(( $(date +%s) - start )) s"
done
exit $failed

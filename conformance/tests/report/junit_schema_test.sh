#!/bin/sh
# The JUnit XML of sbx-conform validates against the common Jenkins/Ant JUnit
# schema (junit.xsd here), for a report with every verdict and hostile strings
# and for an empty run; and the schema is not a rubber stamp: it rejects a
# testsuite without its counts.
# Usage: junit_schema_test.sh RENDER_BIN TEST_DIR   (exit 77 = skipped)
set -eu
render=$1
dir=$2
if ! command -v xmllint >/dev/null 2>&1; then
	echo "SKIP: xmllint not found (Debian package libxml2-utils; ci/bootstrap installs it)"
	exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/sbx-junit-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

"$render" junit "$dir/fixture_report.json" "$work/fixture.xml"
xmllint --noout --schema "$dir/junit.xsd" "$work/fixture.xml"

printf '{"schema":1,"checks":[]}\n' > "$work/empty.json"
"$render" junit "$work/empty.json" "$work/empty.xml"
xmllint --noout --schema "$dir/junit.xsd" "$work/empty.xml"

# Every testcase of the fixture is present and the counts agree with it.
cases=$(grep -c '<testcase ' "$work/fixture.xml")
if [ "$cases" -ne 8 ]; then
	echo "FAIL: expected 8 testcases in the fixture's JUnit, found $cases" >&2
	exit 1
fi

sed 's/ tests="[0-9]*" failures="[0-9]*"//' "$work/fixture.xml" > "$work/broken.xml"
if xmllint --noout --schema "$dir/junit.xsd" "$work/broken.xml" 2>"$work/broken.err"; then
	echo "FAIL: the schema accepted a testsuite without tests/failures attributes" >&2
	exit 1
fi
echo "ok: JUnit XML validates against junit.xsd (fixture and empty run); broken file rejected"

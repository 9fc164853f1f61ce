#!/bin/sh
# Java from the one line (issue 46, mock-api/README.md "One line"): in a
# shell with nothing but PATH, HOME, XDG_RUNTIME_DIR and
#   eval "$(sbxctl mock env)"
# a single-file Java program (tests/java/TrustGet.java, the JVM's default
# SSLContext, no trust code of its own) GETs a sandbox's https preview URL
# and gets the guest's page: JAVA_TOOL_OPTIONS names the mock's PKCS#12
# truststore. Without that variable the same GET fails on the certificate
# (the line is what makes it pass), and the truststore holds the system's
# CAs beside the mock's (public names still verify online).
#
# Usage: java_trust_test.sh SBX_MOCK SBXCTL. Exit 0 pass, 1 fail, 77
# skipped (no java, or guests cannot be contained here).
set -u
mock=$1 ctl=$2
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "java_trust_test: FAIL: $*" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "java_trust_test: SKIP: no java on PATH"; exit 77; }
java=$(command -v java)

fresh_path=$(dirname "$java")
. "$here/fresh_shell.sh"
fresh_setup
# the host skeleton: what is tested is the host side's trust, not the guest
fresh_start_mock --listen 127.0.0.1:0 --no-images
grep -q '^guest mode: contained' "$scratch/out" ||
  { echo "java_trust_test: SKIP: guests are not contained here: $(cat "$scratch/err")"; exit 77; }

# a sandbox serving a page on 8080, its preview URL in $scratch/url
(fresh sh -c '
  eval "$(sbxctl mock env)" || exit 1
  api() { curl -sS -f -H "X-Api-Key: $CREATEOS_SANDBOX_API_KEY" -H "Content-Type: application/json" "$@"; }
  sb=$(api -d "{\"shape\":\"s-1vcpu-256mb\",\"ingress_enabled\":true}" "$CREATEOS_SANDBOX_BASE_URL/v1/sandboxes") || exit 1
  id=$(printf "%s" "$sb" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"data\"][\"id\"])") || exit 1
  tpl=$(printf "%s" "$sb" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"data\"][\"ingress_url_template\"])") || exit 1
  api -d "{\"cmd\":\"sh\",\"args\":[\"-c\",\"mkdir -p /tmp/srv && echo java-trust-ok > /tmp/srv/index.html && cd /tmp/srv && (setsid python3 -m http.server 8080 >/dev/null 2>&1 &)\"]}" \
    "$CREATEOS_SANDBOX_BASE_URL/v1/sandboxes/$id/exec" >/dev/null || exit 1
  echo "${tpl%<port>}8080/" >"$1"
' sh "$scratch/url") || fail "no sandbox with a preview URL (above)"
url=$(cat "$scratch/url")
case $url in https://*) ;; *) fail "the preview URL is not https: $url" ;; esac

# Java with the one line: the page (retried while the guest's server starts)
i=0
until (fresh sh -c 'eval "$(sbxctl mock env)" && exec java "$1/java/TrustGet.java" get "$2"' sh "$here" "$url" \
    >"$scratch/body" 2>"$scratch/java.err"); do
  i=$((i + 1))
  [ "$i" -lt 20 ] || fail "Java's GET of $url with the one line failed: $(cat "$scratch/java.err")"
  sleep 0.5
done
[ "$(cat "$scratch/body")" = java-trust-ok ] || fail "Java got \"$(cat "$scratch/body")\", expected java-trust-ok"

# the same without JAVA_TOOL_OPTIONS (the rest of the line kept): refused
if (fresh sh -c 'eval "$(sbxctl mock env)" && unset JAVA_TOOL_OPTIONS && exec java "$1/java/TrustGet.java" get "$2"' \
    sh "$here" "$url" >"$scratch/body" 2>"$scratch/java.err"); then
  fail "Java's GET succeeded without JAVA_TOOL_OPTIONS: the test would pass without the line"
fi
grep -q 'PKIX path building failed' "$scratch/java.err" ||
  fail "without JAVA_TOOL_OPTIONS, expected a certificate refusal (PKIX), got: $(cat "$scratch/java.err")"

# the user's own JVM options are kept, an earlier truststore replaced
opts=$( (fresh sh -c 'export JAVA_TOOL_OPTIONS="-Xmx64m -Djavax.net.ssl.trustStore=/old.p12 -Djavax.net.ssl.trustStorePassword=x"
  eval "$(sbxctl mock env)" && printf "%s" "$JAVA_TOOL_OPTIONS"') )
case $opts in
  "-Xmx64m -Djavax.net.ssl.trustStore=$scratch/run/sbx-harness/"*"/truststore.p12 -Djavax.net.ssl.trustStoreType=PKCS12") ;;
  *) fail "JAVA_TOOL_OPTIONS over the user's own: got \"$opts\"" ;;
esac

# the truststore replaces the JDK's cacerts: it must hold the system's CAs too
sys=$( (fresh sh -c 'eval "$(sbxctl mock env)" && exec java "$1/java/TrustGet.java" issuers' sh "$here" 2>/dev/null) )
bundle=$(openssl version -d | sed 's/^OPENSSLDIR: "\(.*\)"$/\1/')/cert.pem
want=$(($(grep -c 'BEGIN CERTIFICATE' "$bundle" 2>/dev/null || echo 0) + 1))
[ "$sys" = "$want" ] || fail "the truststore has $sys CAs, expected $want (the system's $bundle and the mock's)"

fresh_stop_mock
echo "java_trust_test: ok (Java verified $url; $want CAs in the truststore)"

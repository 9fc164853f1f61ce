#!/usr/bin/env python3
"""CAP-005 with real connections (issue 14): a backend that claims a domain
allowlist and sends the names as host rules passes CAP-005 against a mock
that enforces host rules (`--host-rules documented`: through its resolver's
answers), and fails it against one that does not (`observed`, the live
service's behaviour), where the guest's real connections to the allowed
names are dropped. Exit 0 pass, 1 fail, 77 skipped (the mock does not
enforce egress here; its reason is printed).

Usage: cap_egress_live.py SBX_MOCK SBX_CONFORM SBX_REF_BACKEND HOSTS_JSON
"""
import json
import subprocess
import sys
import tempfile


def run(mock_bin, conform, backend, hosts, mode):
    mock = subprocess.Popen([mock_bin, "--listen", "127.0.0.1:0", "--self-listen", "off",
                             "--host-rules", mode, "--admin-token", "cap-live",
                             "--internet-hosts", hosts],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = enforced = None
        for line in mock.stdout:
            if line.startswith("sbx-mock listening on "):
                url = line.split()[-1]
            if line.startswith("guest mode:"):
                break
        with tempfile.NamedTemporaryFile(suffix=".json") as rep:
            subprocess.run([conform, "--mock-url", url, "--admin-token", "cap-live",
                            "--backend-cmd", backend + " --quirk claim-allowlist",
                            "--filter", "CAP-005", "--json", rep.name],
                           capture_output=True, text=True, timeout=300)
            report = json.load(open(rep.name))
        return report["checks"][0]
    finally:
        mock.terminate()
        err = mock.communicate(timeout=30)[1]
        run.last_err = err


def main():
    mock_bin, conform, backend, hosts = sys.argv[1:5]
    documented = run(mock_bin, conform, backend, hosts, "documented")
    details = json.dumps(documented.get("evidence", {}))
    if "judged on the stored rules only" in details:
        print("SKIP: the mock does not enforce egress here:\n" + run.last_err)
        return 77
    failures = []
    if documented["verdict"] != "pass":
        failures.append("documented host rules: CAP-005 %s: %s" % (documented["verdict"],
                                                                  documented.get("reason")))
    observed = run(mock_bin, conform, backend, hosts, "observed")
    if observed["verdict"] != "fail" or "real connection to allowed pypi.org:443 did not complete" \
            not in (observed.get("reason") or ""):
        failures.append("observed host rules: CAP-005 should fail on the guest's real connections, "
                        "got %s: %s" % (observed["verdict"], observed.get("reason")))
    for f in failures:
        print("FAIL:", f)
    print("CAP-005 live: documented %s, observed %s" % (documented["verdict"], observed["verdict"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

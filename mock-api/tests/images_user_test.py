#!/usr/bin/env python3
"""Images for a user who is neither root nor 65534 (issue 46; mock-api/IMAGES.md,
"For a user who is not root"). As root, the test makes a throwaway user with
a fresh uid (40000-49999) and subordinate ids, follows the documented path
for that user, and removes the user, its ids and what it made, always.

  boot          the README's sudo line (build-image --owner UID devbox:1, as
                root, in a network namespace with no route: it must copy the
                store's build, never download one), then that user's sbx-mock
                (contained, unprivileged, copies of the programs in a 0755
                work dir, as ci/test's contain-unprivileged stage runs them)
                says at start it found owned-UID and boots a guest on devbox:1
                whose /etc/os-release is Debian 12's.
  failed-build  that user's unprivileged build-image (mmdebstrap's unshare
                mode) against a mirror on a loopback port that refuses:
                mmdebstrap's namespace has made the root's skeleton, owned by
                the user's subordinate ids, when apt fails. The build must
                fail, and leave nothing in the user's store or TMPDIR that
                is not the user's own (it left a half build its user could
                not remove).

Usage: images_user_test.py SBX_MOCK CHECKOUT boot|failed-build

Exit 0 pass, 1 fail, 2 usage, 77 skipped (not root; no devbox:1 built by
root in the store; no newuidmap for failed-build); under CI=true a skip
fails (CI installs uidmap and builds the image), as ci/test's image tests do.
"""
import json
import os
import pwd
import queue
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import egress_live_test as live  # noqa: E402  (Mock.call, Mock.stop)

SKIP = 77
KEY = "user-key"


class Skip(Exception):
    pass


class Fail(Exception):
    pass


def run(argv, **kw):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


class User:
    """A throwaway user with subordinate ids and a 0755 home of its own; close()
    removes the user, its ids, its home and every process it left."""

    def __init__(self):
        start = random.randrange(40000, 50000)
        for off in range(10000):
            uid = 40000 + (start - 40000 + off) % 10000
            try:
                pwd.getpwuid(uid)
            except KeyError:
                break
        self.uid, self.name = uid, "sbxu%d" % uid
        self.home = tempfile.mkdtemp(prefix="sbx-user-%d." % uid)
        os.chmod(self.home, 0o755)
        r = run(["useradd", "-u", str(uid), "-U", "-M", "-d", self.home, "-s", "/bin/sh", self.name])
        if r.returncode != 0:
            shutil.rmtree(self.home)
            raise Fail("useradd %s: %s" % (self.name, r.stdout))
        self.created = True
        os.chown(self.home, uid, uid)
        # useradd gives subordinate ids where login.defs says so; else a
        # range of this uid's own (2e9 + 65536 per uid above 40000)
        self.ranges = []
        if self.subids("/etc/subuid") is None or self.subids("/etc/subgid") is None:
            lo = 2000000000 + (uid - 40000) * 65536
            spec = "%d-%d" % (lo, lo + 65535)
            r = run(["usermod", "--add-subuids", spec, "--add-subgids", spec, self.name])
            if r.returncode != 0:
                raise Fail("usermod --add-subuids %s: %s" % (spec, r.stdout))

    def subids(self, path):
        try:
            with open(path) as f:
                for line in f:
                    p = line.strip().split(":")
                    if len(p) == 3 and p[0] in (self.name, str(self.uid)):
                        return int(p[1]), int(p[2])
        except OSError:
            pass
        return None

    def argv(self, *cmd, env=()):
        return ["setpriv", "--reuid=%d" % self.uid, "--regid=%d" % self.uid, "--clear-groups",
                "--inh-caps=-all", "env", "-i", "PATH=" + os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME=" + self.home, "TMPDIR=" + self.home, *env, *cmd]

    def close(self):
        errors = []
        # only this test's own user: whatever a failed step left running
        # (a mock's cells, mmdebstrap) would keep userdel from removing it
        run(["pkill", "-KILL", "-U", str(self.uid)])
        for _ in range(50):
            if run(["pgrep", "-U", str(self.uid)]).returncode != 0:
                break
            time.sleep(0.1)
        # a test that failed may have left files of the subordinate ids
        if self.subids("/etc/subuid") and shutil.which("mmdebstrap"):
            run(self.argv("mmdebstrap", "--unshare-helper", "rm", "-rf", self.home + "/store"))
        specs = []
        for path, opt in (("/etc/subuid", "--del-subuids"), ("/etc/subgid", "--del-subgids")):
            ids = self.subids(path)
            if ids is not None:
                specs += [opt, "%d-%d" % (ids[0], ids[0] + ids[1] - 1)]
        if specs:
            r = run(["usermod", *specs, self.name])
            if r.returncode != 0:
                errors.append("usermod %s: %s" % (" ".join(specs), r.stdout))
        r = run(["userdel", self.name])
        if r.returncode != 0:
            errors.append("userdel %s: %s" % (self.name, r.stdout))
        shutil.rmtree(self.home, ignore_errors=True)
        for path in ("/etc/subuid", "/etc/subgid", "/etc/passwd"):
            with open(path) as f:
                if any(line.split(":")[0] == self.name for line in f):
                    errors.append("%s still names %s" % (path, self.name))
        if os.path.exists(self.home):
            errors.append("%s could not be removed" % self.home)
        return errors


SHARED_STORE = "/var/cache/sbx-harness/images"


class Mock(live.Mock):
    """The user's sbx-mock over loopback (egress_live_test's calls and stop);
    the start lines read."""

    def __init__(self, user, binary, store):
        # as the README: no --images, when the store is root's default one
        # (a user with no store of their own gets root's: mock_cli.c)
        images = () if store == SHARED_STORE else ("--images", store)
        self.proc = subprocess.Popen(
            user.argv(binary, "--listen", "127.0.0.1:0", "--self-listen", "off", "--warm-pool", "0",
                      *images, env=("SBX_MOCK_CELL=" + os.path.dirname(binary) + "/sbx-cell",)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=user.home)
        # both streams into one queue: "listening" is on stdout, the
        # start's rootfs line on stderr, in either order
        self.lines, self.seen, self.url, self.rootfs = queue.Queue(), [], None, None
        for stream in (self.proc.stdout, self.proc.stderr):
            threading.Thread(target=lambda f=stream: [self.lines.put(l) for l in f], daemon=True).start()
        deadline = time.monotonic() + 30
        while (self.url is None or self.rootfs is None) and time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if line.startswith("sbx-mock listening on "):
                self.url = line.split()[-1]
            elif line.startswith("sbx-mock: rootfs:"):
                self.rootfs = line.strip()
        if self.url is None:
            self.proc.kill()
            self.proc.wait()
            raise Fail("the user's sbx-mock did not start: %s" % "".join(self.seen))

    def wait_line(self, prefix, timeout=10):
        """Whether a start line beginning with prefix came: the constructor
        stops reading at the two lines it needs, and the two streams'
        lines arrive in either order."""
        deadline = time.monotonic() + timeout
        while not any(l.startswith(prefix) for l in self.seen) and time.monotonic() < deadline:
            try:
                self.seen.append(self.lines.get(timeout=0.2))
            except queue.Empty:
                continue
        return any(l.startswith(prefix) for l in self.seen)

    def stop(self):
        """Stops the mock; Fail when it did not end cleanly or a sanitizer
        spoke (the ASan build runs this test too)."""
        super().stop()
        time.sleep(0.2)  # the readers' last lines
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        bad = [l for l in self.seen if "Sanitizer" in l or "runtime error:" in l]
        if self.proc.returncode != 0 or bad:
            raise Fail("the user's sbx-mock ended with %s: %s" % (self.proc.returncode, "".join(bad or self.seen[-20:])))


def root_store():
    """The store root's build of devbox:1 is in, and its hash; else Skip."""
    store = os.environ.get("SBX_IMAGE_STORE") or SHARED_STORE
    try:
        with open(os.path.join(store, "index")) as f:
            index = dict(l.rstrip("\n").split("\t", 1) for l in f if "\t" in l)
    except OSError as e:
        raise Skip("no image store at %s (%s): mock-api/images/build-image devbox:1 as root" % (store, e))
    h = index.get("devbox:1")
    if h is None or not os.path.isdir(os.path.join(store, h, "rootfs")):
        raise Skip("%s holds no root-built devbox:1: mock-api/images/build-image devbox:1 as root" % store)
    return store, h


def boot(user, mock_bin, checkout):
    store, h = root_store()
    owned = os.path.join(store, h, "owned-%d" % user.uid)
    try:
        # The README's line, as sudo runs it: root, the user's uid. No route
        # off the machine: a store that is not this checkout's build would
        # be rebuilt from Debian's archive, and a test never downloads.
        t0 = time.time()
        r = run(["unshare", "--net", os.path.join(checkout, "mock-api/images/build-image"),
                 "--owner", str(user.uid), "devbox:1"], env=dict(os.environ, SBX_IMAGE_STORE=store))
        copy_s = time.time() - t0
        if r.returncode != 0:
            raise Skip("build-image --owner %d devbox:1 (no network) failed, so %s is not this "
                       "checkout's build (ci/bootstrap test rebuilds it): %s" % (user.uid, store, r.stdout[-1500:]))
        if not os.path.isdir(owned) or os.stat(owned).st_uid != user.uid:
            raise Fail("build-image --owner %d made no %s owned by it: %s" % (user.uid, owned, r.stdout))
        bindir = os.path.join(user.home, "bin")
        os.mkdir(bindir)
        for p in (mock_bin, os.path.join(os.path.dirname(mock_bin), "sbx-cell")):
            shutil.copy2(p, bindir)
        os.chmod(bindir, 0o755)
        mock = Mock(user, os.path.join(bindir, "sbx-mock"), store)
        try:
            line = mock.rootfs
            if store == SHARED_STORE and not mock.wait_line("images: %s (the default store" % store):
                raise Fail("with no --images, the user's mock did not say it uses %s:\n%s"
                           % (store, "".join(mock.seen)))
            want = "devbox:1 = image %s (bound read-only (owned-%d: root's build copied" % (owned, user.uid)
            if line is None or want not in line:
                raise Fail("the start line does not say devbox:1 is the copy owned-%d root made:\n"
                           "  expected it to hold: %s\n  came: %s" % (user.uid, want, line))
            st, b = mock.call("POST", "/v1/sandboxes", {"shape": "s-1vcpu-1gb", "rootfs": "devbox:1"}, key=KEY)
            if st != 200:
                raise Fail("create on devbox:1 as uid %d: %s %s" % (user.uid, st, b))
            st, r = mock.call("POST", "/v1/sandboxes/%s/exec" % b["data"]["id"],
                              {"cmd": "cat", "args": ["/etc/os-release"]}, key=KEY, timeout=60)
            out = r["data"]["result"]["stdout"] if st == 200 else ""
            if 'VERSION_ID="12"' not in out or "VERSION_CODENAME=bookworm" not in out:
                raise Fail("the guest's /etc/os-release is not Debian 12's: %s %s" % (st, r))
        finally:
            mock.stop()
        print("ok: uid %d: build-image --owner copy %.1f s, its sbx-mock found %s and booted "
              "Debian 12 on devbox:1" % (user.uid, copy_s, owned))
    finally:
        shutil.rmtree(owned, ignore_errors=True)
        shutil.rmtree(owned + ".tmp", ignore_errors=True)


def failed_build(user, checkout):
    if shutil.which("newuidmap") is None or shutil.which("newgidmap") is None:
        raise Skip("newuidmap/newgidmap not installed (the uidmap package; ci/bootstrap test installs it)")
    # the user runs its own copy of the script and the list (a checkout may
    # be one it cannot read), in its home: every file there must be its own
    tree = os.path.join(user.home, "tree")
    os.makedirs(os.path.join(tree, "mock-api/images"))
    os.makedirs(os.path.join(tree, "fixtures/images"))
    shutil.copy2(os.path.join(checkout, "mock-api/images/build-image"), os.path.join(tree, "mock-api/images"))
    shutil.copy2(os.path.join(checkout, "fixtures/images/devbox-1.packages"),
                 os.path.join(tree, "fixtures/images"))
    run(["chown", "-R", "%d:%d" % (user.uid, user.uid), tree])  # its own checkout
    store = os.path.join(user.home, "store")
    with socket.socket() as refuser:  # bound, never listening: connections are refused
        refuser.bind(("127.0.0.1", 0))
        mirror = "http://127.0.0.1:%d/debian" % refuser.getsockname()[1]
        t0 = time.time()
        r = run(user.argv(os.path.join(tree, "mock-api/images/build-image"), "devbox:1",
                          env=("SBX_IMAGE_STORE=" + store, "SBX_IMAGE_MIRROR=" + mirror)), cwd=user.home)
        took = time.time() - t0
    if r.returncode == 0:
        raise Fail("build-image succeeded against a mirror that refuses connections: %s" % r.stdout)
    if "running apt-get update" not in r.stdout:
        raise Fail("the build did not reach apt-get update (where mmdebstrap's namespace has "
                   "made the root's skeleton): %s" % r.stdout[-2000:])
    foreign = []
    for base, dirs, files in os.walk(user.home):
        # each directory once, as the base of its own walk (a link to one
        # is not walked: listed with the files)
        for n in [base] + [os.path.join(base, f) for f in files] + \
                [os.path.join(base, d) for d in dirs if os.path.islink(os.path.join(base, d))]:
            st = os.lstat(n)
            if st.st_uid != user.uid or st.st_gid != user.uid:
                foreign.append("%s (uid %d gid %d)" % (n, st.st_uid, st.st_gid))
    if foreign:
        raise Fail("a failed unprivileged build left %d files uid %d does not own, e.g. %s"
                   % (len(foreign), user.uid, "; ".join(foreign[:5])))
    r = run(user.argv("rm", "-rf", store), cwd=user.home)
    if r.returncode != 0 or os.path.exists(store):
        raise Fail("uid %d cannot remove its store after the failed build: %s" % (user.uid, r.stdout))
    print("ok: uid %d: the unprivileged build failed in %.1f s and left only files it owns "
          "(removed)" % (user.uid, took))


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("boot", "failed-build"):
        print(__doc__)
        return 2
    mock_bin, checkout, what = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    user, rc = None, 0
    try:
        if os.geteuid() != 0:
            raise Skip("not root: the test makes a user of its own (useradd, /etc/subuid)")
        if what == "boot":
            root_store()  # skip before making a user
        user = User()
        if what == "boot":
            boot(user, mock_bin, checkout)
        else:
            failed_build(user, checkout)
    except Skip as e:
        print("SKIP: %s" % e)
        rc = SKIP
        if os.environ.get("CI") == "true":
            print("FAIL: skipped under CI=true (CI runs as root with uidmap and the images)")
            rc = 1
    except Fail as e:
        print("FAIL: %s" % e)
        rc = 1
    finally:
        if user is not None:
            for e in user.close():
                print("FAIL: cleanup: %s" % e)
                rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())

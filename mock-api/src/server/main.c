/* sbx-mock: the offline CreateOS Sandbox control plane as a program.
 * Parses flags into an sbx_mock_config, starts the server, prints the URL and
 * admin token on stdout, and stops cleanly on SIGINT/SIGTERM. Exit codes: 0
 * clean stop, 2 usage or setup error. */
#include <errno.h>
#include <unistd.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internet/inet_resolver.h"
#include "server/mock_cli.h"
#include "server/runtime_env.h"
#include "sbx/mock.h"

static const char usage[] =
	"usage: sbx-mock [options]\n"
	"Offline CreateOS Sandbox control plane (see mock-api/README.md).\n\n"
	"  --listen HOST:PORT      bind address (default 127.0.0.1:0 = ephemeral port)\n"
	"  --admin-token TOKEN     admin API token (default: random, printed)\n"
	"  --api-key KEY           a known API key (repeatable); turns accept-any-key off\n"
	"  --keys-file FILE        known API keys, one per line (# comments)\n"
	"  --accept-any-key        any key creates a tenant (default unless keys are given)\n"
	"  --no-accept-any-key     only known keys (401 otherwise)\n"
	"  --cap N                 concurrent sandboxes per key (default 5)\n"
	"  --cap-status CODE       status when over the cap (default 403)\n"
	"  --template-build-cap N  concurrent template builds per key (default 4, 0-1000)\n"
	"  --template-build-cap-global N  concurrent template builds in the mock (default 8)\n"
	"  --template-cap N        templates kept per key (default 32)\n"
	"  --template-storage-mib N  templates' storage per key, builds' disks included (1024)\n"
	"  --template-storage-mib-global N  templates' storage in the mock (default 8192)\n"
	"  --cap-code CODE         data.code when over the cap (default QUOTA_EXCEEDED)\n"
	"  --host-rules MODE       egress host rules: observed (default) | documented\n"
	"  --timing T              instant (default) | realistic | scale factor (e.g. 0.1)\n"
	"  --region NAME           the region this control plane serves (default local)\n"
	"  --max-egress-rules N    egress list limit (default 1024)\n"
	"  --max-body BYTES        JSON body limit (default 1048576)\n"
	"  --max-file-body BYTES   file upload limit (default 67108864)\n"
	"  --work-dir DIR          where guest trees live (default: private temp dir)\n"
	"  --guest-mode MODE       contained (default) | plain (no isolation)\n"
	"  --egress MODE           auto (default: enforced where possible) | enforced | stored\n"
	"  --internet-hosts FILE   names the simulated internet resolves (default: the\n"
	"                          source tree's fixtures/internet/hosts.json)\n"
	"  --internet-ca CERT,KEY  the simulated internet's TLS CA (PEM files; default:\n"
	"                          kept in --state-dir, else made at start)\n"
	"  --internet-stubs FILE   stubbed answers of the simulated internet ({stubs:[...]})\n"
	"  --internet-site HOST=DIR  serve DIR as HOST's static site (repeatable)\n"
	"  --internet-upstream PATTERNS  names, *.suffix, addresses, CIDRs (comma-separated)\n"
	"                          whose allowed flows are forwarded to the REAL destination\n"
	"                          (a name only to the addresses --internet-hosts gives it;\n"
	"                          default: none; nothing leaves the machine)\n"
	"  --internet-record DIR   record the guests' internet into cassette DIR (made if\n"
	"                          missing, added to if not): what no stub or site answers\n"
	"                          is fetched from the real origin, verified, and kept\n"
	"  --internet-record-allow PATTERNS  names, *.suffix, addresses, CIDRs that may be\n"
	"                          recorded (required with --internet-record)\n"
	"  --internet-record-ca FILE  the origins' CA bundle (default: the host's store)\n"
	"  --internet-record-resolve NAME:PORT:ADDR  where NAME is (repeatable; default:\n"
	"                          the host's resolver)\n"
	"  --internet-record-max-mib N  MiB of bodies the recording may write (default\n"
	"                          8192); past it nothing more is recorded, and said\n"
	"  --internet-redact-query NAME  query parameter whose values are redacted\n"
	"  --internet-replay DIR   answer the guests' internet from cassette DIR only (a\n"
	"                          request it lacks: 502 naming the nearest recorded)\n"
	"  --exec-timeout-ms MS    default exec timeout (default 600000, 0 = none)\n"
	"  --check-state DIR       validate DIR's state log without starting: exit 0\n"
	"                          clean, 1 a record or tail a start would drop, 2 unreadable\n"
	"  --seed N                fault RNG seed (default 1)\n"
	"  --journal-size N        request journal ring size (default 65536)\n"
	"  --no-journal            do not record requests\n"
	"  --scenario NAME|FILE    load a fault scenario: an existing file, else\n"
	"                          NAME.json in the scenario path\n"
	"  --scenario-dir DIR      look for scenario names here first, then in\n"
	"                          $SBX_SCENARIO_DIR, the source fixtures/scenarios,\n"
	"                          the installed share/sbx-harness/scenarios\n"
	"  --record-upstream URL   record mode: proxy every control-plane request to URL\n"
	"  --record-to FILE        ... and write the exchanges (JSON lines, keys redacted);\n"
	"                          a FILE that exists is refused unless --record-overwrite\n"
	"  --replay FILE           replay mode: answer a recorded session in order\n"
	"  --state-dir DIR         durable state: fsync'd mutation log + guest trees in DIR\n"
	"  --state-repair          a damaged state log: move its tail aside into a dated\n"
	"                          file and start from the last good record\n"
	"  --max-connections N     open API connections; past it new ones are closed at\n"
	"                          once (default 4000, less if the fd limit is lower)\n"
	"  --idle-timeout S        idle connections are closed after S seconds (default 120)\n"
	"  --self-listen HOST:PORT|off  the guests' self-signal endpoint, POST /self/pause\n"
	"                          and /self/delete (default 127.0.0.1:1029, as in a VM;\n"
	"                          a warning, not an error, when that port is taken)\n"
	"  --ingress-listen HOST:PORT|off  where sandboxes' preview URLs are served\n"
	"                          (ingress_url_template; default 127.0.0.1:0, loopback only)\n"
	"  --ingress-scheme https|http  what preview and noVNC URLs say (default https:\n"
	"                          clients trust the mock's CA, see --ca-out); the port\n"
	"                          takes TLS and plain HTTP either way\n"
	"  --ca-out FILE           write the mock's CA certificate (PEM) to FILE at start\n"
	"                          (NODE_EXTRA_CA_CERTS, curl --cacert; also GET /_mock/ca)\n"
	"  --warm-pool N           contained cells built ahead of creates, handed out\n"
	"                          once each; deletes are torn down after their answer\n"
	"                          (default 2, at most 64, 0 = off)\n"
	"  --images DIR            rootfs images from the store DIR (mock-api/images/build-image\n"
	"                          writes it: /var/cache/sbx-harness/images as root): a\n"
	"                          sandbox whose rootfs names one gets a root built on it\n"
	"                          (mock-api/IMAGES.md); other names get the host skeleton\n"
	"                          (default: the default store, $SBX_IMAGE_STORE, else that\n"
	"                          path as root, else ~/.cache/sbx-harness/images, when its\n"
	"                          index names an image; the start says which)\n"
	"  --no-images             no images: every root is the host skeleton\n"
	"  --image NAME=DIR        the rootfs directory DIR serves NAME (devbox:1); repeatable\n"
	"  --quiet                 no log lines on stderr\n"
	"  --help                  this text\n"
	"At start it writes its URL, admin token and CA for the shell in a directory of\n"
	"its own ($XDG_RUNTIME_DIR/sbx-harness/PID, else ${TMPDIR:-/tmp}/sbx-harness-UID/PID;\n"
	"removed at a clean stop); to use it: eval \"$(sbxctl mock env)\"\n"
	"Exit codes: 0 stopped by SIGINT/SIGTERM, 2 usage or setup error.\n";

__attribute__((format(printf, 1, 2))) static int die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("sbx-mock: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'sbx-mock --help'.\n", stderr);
	return 2;
}

/* Whether a listen host is a loopback address (or localhost). */
static bool loopback(const char *host)
{
	return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
	       strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

/* Warnings a start deserves: reachable from other hosts, or no key works. */
static void warn_start(const mock_cli *c)
{
	const char *self = c->cfg.self_listen;
	char host[256];
	const char *colon = self != NULL ? strrchr(self, ':') : NULL;

	if (c->cfg.quiet)
		return;
	if (c->cfg.listen_host != NULL && !loopback(c->cfg.listen_host))
		fprintf(stderr, "sbx-mock: WARNING: --listen %s is not a loopback address: other hosts "
				"can reach this mock, and guests run their code as this user\n",
			c->cfg.listen_host);
	if (colon != NULL) {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - self), self);
		if (!loopback(host))
			fprintf(stderr, "sbx-mock: WARNING: --self-listen %s is not a loopback address: "
					"other hosts can pause and delete sandboxes\n", self);
	}
	if (!c->cfg.accept_any_key && c->nkeys == 0)
		fprintf(stderr, "sbx-mock: WARNING: --no-accept-any-key without --api-key or "
				"--keys-file: every API request will be refused (401)\n");
}

/* Which roots the guests get, on stdout with the other start lines; the
 * host skeleton is said loudly (stderr, whatever --quiet says) unless
 * --no-images asked for it: code written for devbox:1 (Debian, apt, pip)
 * behaves differently on it. */
static void say_images(const mock_cli *c, sbx_mock *mock)
{
	switch (c->images_from) {
	case MOCK_CLI_IMAGES_DEFAULT:
		printf("images: %s (the default store; --no-images for the host skeleton)\n", c->cfg.images);
		break;
	case MOCK_CLI_IMAGES_FLAG:
		printf("images: %s\n", c->cfg.images != NULL ? c->cfg.images : "--image only");
		break;
	case MOCK_CLI_IMAGES_OFF:
		printf("images: none (--no-images): every guest gets the host skeleton\n");
		break;
	case MOCK_CLI_IMAGES_NONE:
		printf("images: none: every guest gets the host skeleton (%s)\n", c->images_why);
		break;
	}
	if (c->images_from == MOCK_CLI_IMAGES_NONE && sbx_mock_guests_contained(mock))
		fprintf(stderr, "sbx-mock: WARNING: no rootfs image: every guest gets the host skeleton, "
				"not Debian (%s). Build devbox:1 and desktop:1 with mock-api/images/build-image "
				"(mock-api/IMAGES.md), or start with --no-images to say you want the skeleton\n",
			c->images_why);
	else if (c->images_from != MOCK_CLI_IMAGES_OFF && sbx_mock_guests_contained(mock) &&
		 sbx_mock_images_usable(mock) == 0)
		fprintf(stderr, "sbx-mock: WARNING: no usable rootfs image: every guest gets the host "
				"skeleton (%s)\n", sbx_mock_rootfs_note(mock));
}

/* The runtime files and the line that uses them (runtime_env.h). */
static void publish(const mock_cli *c, sbx_mock *mock, mock_runtime *rt)
{
	if (mock_runtime_publish(rt, mock, c->cfg.accept_any_key, c->cfg.images) == 0) {
		printf("runtime: %s\n", rt->dir);
		printf("to use it from a shell: eval \"$(sbxctl mock env)\"\n");
	} else {
		printf("runtime: none (%s)\n", rt->note);
	}
}

static int run(mock_cli *c)
{
	mock_runtime rt = {.dir = ""};
	char userns_note[sizeof(((sbx_err *)0)->msg)] = "";
	sigset_t set;
	sbx_mock *mock;
	sbx_err err = {{0}};
	int sig = 0;

	/* Block the stop signals before any thread starts, then wait for them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* unprivileged, enforced egress needs a user namespace of our own,
	 * entered while this process has one thread; refused, the mock starts
	 * with egress stored only and says why */
	if ((c->cfg.egress == NULL || strcmp(c->cfg.egress, "stored") != 0) &&
	    (c->cfg.guest_mode == NULL || strcmp(c->cfg.guest_mode, "plain") != 0) &&
	    sbx_mock_own_userns(&err) != 0) {
		if (c->cfg.egress != NULL && strcmp(c->cfg.egress, "enforced") == 0) {
			fprintf(stderr, "sbx-mock: egress cannot be enforced: %s\n", err.msg);
			return 2;
		}
		snprintf(userns_note, sizeof(userns_note), "%s", err.msg);
	}
	mock = sbx_mock_start(&c->cfg, &err);
	if (mock == NULL) {
		fprintf(stderr, "sbx-mock: %s\n", err.msg);
		return 2;
	}
	printf("sbx-mock listening on %s\n", sbx_mock_url(mock));
	printf("admin token: %s\n", sbx_mock_admin_token(mock));
	printf("guest mode: %s\n", sbx_mock_guest_mode(mock));
	if (sbx_mock_self_url(mock) != NULL)
		printf("self-signal: %s\n", sbx_mock_self_url(mock));
	if (sbx_mock_ingress_url(mock) != NULL)
		printf("ingress: %s\n", sbx_mock_ingress_url(mock));
	if (c->cfg.ca_out != NULL)
		printf("CA certificate: %s\n", c->cfg.ca_out);
	if (sbx_mock_internet_sites_note(mock) != NULL)
		printf("internet sites not in the hosts file (resolved in " MOCK_INET_SYNTH_CIDR "): %s\n",
		       sbx_mock_internet_sites_note(mock));
	if (sbx_mock_egress_enforced(mock))
		printf("egress: %s\n", sbx_mock_egress_note(mock));
	if (c->cfg.internet_upstream != NULL)
		printf("internet upstream (REAL destinations): %s\n", c->cfg.internet_upstream);
	if (c->cfg.internet_record != NULL || c->cfg.internet_replay != NULL)
		printf("internet cassette: %s %s\n", c->cfg.internet_record != NULL ? "recording into" : "replaying",
		       c->cfg.internet_record != NULL ? c->cfg.internet_record : c->cfg.internet_replay);
	say_images(c, mock);
	publish(c, mock, &rt);
	fflush(stdout);
	warn_start(c);
	if (sbx_mock_self_note(mock) != NULL && !c->cfg.quiet)
		fprintf(stderr, "sbx-mock: self-signal endpoint off: %s (--self-listen)\n",
			sbx_mock_self_note(mock));
	if (!sbx_mock_egress_enforced(mock))
		fprintf(stderr, "sbx-mock: WARNING: egress %s%s%s\n", sbx_mock_egress_note(mock),
			userns_note[0] != '\0' ? "; " : "", userns_note);
	if (c->cfg.internet_upstream != NULL) /* loud whatever --quiet says: this is the way out */
		fprintf(stderr, "sbx-mock: WARNING: --internet-upstream %s: guests' allowed flows to these "
				"destinations LEAVE this machine for the real ones%s\n",
			c->cfg.internet_upstream, sbx_mock_egress_enforced(mock) ? "" : " (inactive: egress is not enforced)");
	if (sbx_mock_cgroups_note(mock) != NULL && !c->cfg.quiet)
		fprintf(stderr, "sbx-mock: %s\n", sbx_mock_cgroups_note(mock));
	if (!c->cfg.quiet)
		fprintf(stderr, "sbx-mock: %s\n", sbx_mock_rootfs_note(mock));
	if (!sbx_mock_guests_contained(mock))
		fprintf(stderr, "sbx-mock: WARNING: --guest-mode plain: guest code is NOT contained; it "
				"runs as this user with all of its access (never use it for untrusted code)\n");
	sigwait(&set, &sig);
	if (!c->cfg.quiet)
		fprintf(stderr, "sbx-mock: signal %d, stopping\n", sig);
	mock_runtime_remove(&rt); /* first: no shell picks a mock that is stopping */
	sbx_mock_stop(mock);
	return 0;
}

/* --check-state DIR: the start's restore path over DIR's log, nothing
 * started and nothing on disk changed. 0 clean, 1 not clean, 2 unreadable. */
static int check_state(mock_cli *c)
{
	sbx_err err = {{0}};
	int rc;

	c->cfg.state_dir = c->check_state;
	rc = sbx_mock_check_state(&c->cfg, stdout, &err);
	if (rc < 0) {
		fprintf(stderr, "sbx-mock: --check-state: %s\n", err.msg);
		return 2;
	}
	return rc;
}

int main(int argc, char **argv)
{
	mock_cli c;
	int rc = mock_cli_parse(&c, argc, argv);

	if (rc == MOCK_CLI_HELP) {
		fputs(usage, stdout);
		rc = 0;
	} else if (rc == MOCK_CLI_REFUSED) {
		rc = die_usage("%s", c.err);
	} else if (c.check_state != NULL) {
		rc = check_state(&c);
	} else {
		rc = run(&c);
	}
	mock_cli_free(&c);
	return rc;
}

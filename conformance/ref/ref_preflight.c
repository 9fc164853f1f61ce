/* ref_preflight: what the reference backend does before it creates a
 * guest: the integration's own refusals (bad settings, allowed domains it
 * cannot enforce, network off without the accept variable, no key), then
 * whoami once per process and the shape for the memory it needs.
 *
 * Never creates, deletes or retries anything; a refusal-class preflight
 * failure sticks for the life of the process, as in the integration. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ref.h"

/* The integration's own refusals, in order, before anything is created. */
int refuse_early(const struct ref *r, bool allow_network, bool check_domains, sbxd_error *err)
{
	const char *cls = r->q.refuse_as_execution ? SBXD_EXECUTION : SBXD_UNAVAILABLE;
	bool refuse_domains = !r->q.forward_domains && !r->q.claim_allowlist && !r->q.create_before_refusal;

	if (r->s.bad_setting[0] != '\0') {
		sbxd_error_set(err, cls, "%s", r->s.bad_setting);
		return -1;
	}
	if (refuse_domains && check_domains && r->s.domain_count > 0) {
		sbxd_error_set(err, cls,
			       "LANGFLOW_SANDBOX_ALLOWED_DOMAINS is set (%.200s), but CreateOS does not enforce "
			       "host-name egress rules; unset it or use a backend with a domain allowlist",
			       r->s.domains);
		return -1;
	}
	if (!r->q.no_accept_check && !allow_network && !r->s.accept_exceptions) {
		sbxd_error_set(err, cls,
			       "LANGFLOW_SANDBOX_ALLOW_NETWORK is false, but a CreateOS guest can still reach "
			       "169.254.0.0/16 (metadata service); set "
			       "LANGFLOW_SANDBOX_CREATEOS_ACCEPT_EGRESS_EXCEPTIONS=true to accept that");
		return -1;
	}
	if (r->s.api_key == NULL) {
		sbxd_error_set(err, cls, "CREATEOS_SANDBOX_API_KEY (or CREATEOS_API_KEY) is not set");
		return -1;
	}
	return 0;
}

/* ---- preflight: whoami once per process, then the shape ---- */

/* A pinned CREATEOS_SANDBOX_SHAPE: refused only when a non-empty catalog
 * does not list it or lists it with fewer MiB than LANGFLOW_SANDBOX_MEMORY_MB.
 * The 4096 MiB floor is for the automatic choice only (a user who pins a
 * small shape for a small job gets it). */
static int check_pin(struct ref *r, const cJSON *list, sbxd_error *err)
{
	const char *pin = r->s.shape_pin;
	long need = r->q.pin_keeps_floor && r->s.memory_mb < 4096 ? 4096 : r->s.memory_mb;
	const cJSON *sh;
	bool empty = cJSON_GetArraySize(list) == 0;

	cJSON_ArrayForEach(sh, list) {
		const char *id = str_field(sh, "id");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(sh, "mem_mib");
		double m = cJSON_IsNumber(mem) ? mem->valuedouble : 0;

		if (id == NULL || strcmp(id, pin) != 0)
			continue;
		if (m < (double)need) {
			sbxd_error_set(err, SBXD_UNAVAILABLE,
				       "CREATEOS_SANDBOX_SHAPE=%s has %.0f MiB, fewer than the %ld MiB "
				       "this run needs", id, m, need);
			return -1;
		}
		snprintf(r->shape, sizeof(r->shape), "%s", id);
		return 0;
	}
	if (!empty) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "CREATEOS_SANDBOX_SHAPE=%s is not a shape the "
			       "control plane offers", pin);
		return -1;
	}
	/* An empty catalog cannot contradict the pin: the create call will. */
	snprintf(r->shape, sizeof(r->shape), "%s", pin);
	return 0;
}

/* No pin: the smallest shape with at least max(memory_mb, 4096) MiB
 * (ties: fewer vCPUs); an empty catalog means s-2vcpu-4gb. */
static int auto_shape(struct ref *r, const cJSON *list, sbxd_error *err)
{
	long need = r->s.memory_mb > 4096 ? r->s.memory_mb : 4096;
	const cJSON *sh;
	double best_mem = 0, best_cpu = 0;
	bool found = false;

	if (cJSON_GetArraySize(list) == 0) {
		snprintf(r->shape, sizeof(r->shape), "s-2vcpu-4gb");
		return 0;
	}
	cJSON_ArrayForEach(sh, list) {
		const char *id = str_field(sh, "id");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(sh, "mem_mib");
		const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(sh, "vcpu");
		double m = cJSON_IsNumber(mem) ? mem->valuedouble : 0;
		double c = cJSON_IsNumber(cpu) ? cpu->valuedouble : 0;

		if (id == NULL || m < (double)need)
			continue;
		if (!found || m < best_mem || (m == best_mem && c < best_cpu)) {
			found = true;
			best_mem = m;
			best_cpu = c;
			snprintf(r->shape, sizeof(r->shape), "%s", id);
		}
	}
	if (!found) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "no shape with at least %ld MiB "
			       "(max(LANGFLOW_SANDBOX_MEMORY_MB=%ld, 4096))", need, r->s.memory_mb);
		return -1;
	}
	return 0;
}

static int pick_shape(struct ref *r, sbxd_error *err)
{
	cJSON *data = ref_http_json(r->http, "GET", "/v1/shapes?limit=500", NULL, "list shapes", NULL, err);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(data, "data");
	int rc;

	if (data == NULL)
		return -1;
	if (cJSON_IsArray(data))
		list = data;
	if (!cJSON_IsArray(list)) {
		sbxd_error_set(err, SBXD_UNAVAILABLE, "list shapes: the answer has no \"data\" array");
		cJSON_Delete(data);
		return -1;
	}
	if (r->s.shape_pin != NULL && !r->q.ignore_shape_pin)
		rc = check_pin(r, list, err);
	else
		rc = auto_shape(r, list, err);
	cJSON_Delete(data);
	return rc;
}

static int preflight_locked(struct ref *r, sbxd_error *err)
{
	cJSON *who;
	long status = 0;

	if (r->preflight_done)
		return 0;
	if (r->preflight_failed) {
		*err = r->preflight_err;
		return -1;
	}
	who = ref_http_json(r->http, "GET", "/v1/whoami", NULL, "preflight (whoami)", &status, err);
	if (who == NULL) {
		if (status == 0) {
			char why[sizeof(err->message)];

			snprintf(why, sizeof(why), "%s", err->message);
			sbxd_error_set(err, SBXD_UNAVAILABLE, "CreateOS control plane unreachable at %s (%s)",
				       r->s.base_url, why);
		}
		else
			snprintf(err->type, sizeof(err->type), "%s", SBXD_UNAVAILABLE);
		return -1;
	}
	cJSON_Delete(who);
	if (pick_shape(r, err) != 0) {
		if (strcmp(err->type, SBXD_UNAVAILABLE) == 0) {
			r->preflight_failed = true;
			r->preflight_err = *err;
		}
		return -1;
	}
	if (!r->q.whoami_every_run)
		r->preflight_done = true;
	return 0;
}

int preflight(struct ref *r, sbxd_error *err)
{
	int rc;

	pthread_mutex_lock(r->lock);
	rc = preflight_locked(r, err);
	pthread_mutex_unlock(r->lock);
	return rc;
}

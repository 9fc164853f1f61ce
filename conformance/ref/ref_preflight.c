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

static int pick_shape(struct ref *r, sbxd_error *err)
{
	long need = r->s.memory_mb > 4096 ? r->s.memory_mb : 4096;
	cJSON *data = ref_http_json(r->http, "GET", "/v1/shapes?limit=500", NULL, "list shapes", NULL, err);
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(data, "data");
	const cJSON *sh;
	double best_mem = 0, best_cpu = 0;
	bool found = false;

	if (data == NULL)
		return -1;
	if (cJSON_IsArray(data))
		list = data;
	cJSON_ArrayForEach(sh, list) {
		const char *id = str_field(sh, "id");
		const cJSON *mem = cJSON_GetObjectItemCaseSensitive(sh, "mem_mib");
		const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(sh, "vcpu");
		double m = cJSON_IsNumber(mem) ? mem->valuedouble : 0;
		double c = cJSON_IsNumber(cpu) ? cpu->valuedouble : 0;

		if (id == NULL)
			continue;
		if (r->s.shape_pin != NULL) {
			if (strcmp(id, r->s.shape_pin) != 0)
				continue;
			found = true;
			if (m < (double)need) {
				sbxd_error_set(err, SBXD_UNAVAILABLE,
					       "CREATEOS_SANDBOX_SHAPE=%s has %.0f MiB, below the %ld MiB this "
					       "run needs (max(LANGFLOW_SANDBOX_MEMORY_MB, 4096))", id, m, need);
				cJSON_Delete(data);
				return -1;
			}
			snprintf(r->shape, sizeof(r->shape), "%s", id);
			break;
		}
		if (m < (double)need)
			continue;
		if (!found || m < best_mem || (m == best_mem && c < best_cpu)) {
			found = true;
			best_mem = m;
			best_cpu = c;
			snprintf(r->shape, sizeof(r->shape), "%s", id);
		}
	}
	cJSON_Delete(data);
	if (!found) {
		if (r->s.shape_pin != NULL)
			sbxd_error_set(err, SBXD_UNAVAILABLE, "CREATEOS_SANDBOX_SHAPE=%s is not a shape the "
				       "control plane offers", r->s.shape_pin);
		else
			sbxd_error_set(err, SBXD_UNAVAILABLE, "no shape with at least %ld MiB "
				       "(LANGFLOW_SANDBOX_MEMORY_MB=%ld)", need, r->s.memory_mb);
		return -1;
	}
	return 0;
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

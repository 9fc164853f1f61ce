/* egress_enforce: the operations layer's side of enforced egress — when a
 * sandbox's kernel rules change (its guest starts, PUT egress, a change of
 * the host-rule mode) and which list, mode and quota state they get; the
 * kernel work is internet.c's. See ops.h.
 *
 * A sync copies the sandbox's list under the model lock together with a
 * sequence number taken under the same lock, then applies outside it: of
 * two racing syncs the internet keeps the one that saw the later model. */
#define _GNU_SOURCE
#include "ops/ops.h"

#include "internet/internet.h"
#include "ops/core.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The sandbox's address index: 10.(200+hi).mid.lo of model_sandbox.c. */
static uint32_t slot_of(const char *ip)
{
	uint8_t a[4];

	if (inet_pton(AF_INET, ip, a) != 1 || a[0] != 10 || a[1] < 200)
		return 0;
	return (uint32_t)(a[1] - 200) << 16 | (uint32_t)a[2] << 8 | a[3];
}

typedef struct egress_copy {
	bool found;
	uint32_t slot;
	uint64_t gen;
	sbx_egress_list list;
	sbx_host_rule_mode mode;
	bool blocked;
} egress_copy;

/* Under the model lock. */
static void copy_locked(sbx_mock *mock, const mock_sandbox *sb, egress_copy *c)
{
	memset(c, 0, sizeof(*c));
	if (sb == NULL || mock_status_terminal(sb->status) || sbx_egress_list_copy(&sb->egress, &c->list) != 0)
		return;
	c->found = true;
	c->slot = slot_of(sb->ip);
	c->gen = ++mock->egress_seq;
	c->mode = mock->model->set.host_rule_mode;
	c->blocked = sb->bw_quota >= 0 && sb->bw_used >= sb->bw_quota;
}

static int apply(sbx_mock *mock, egress_copy *c, const char *id, sbx_err *err)
{
	int rc = 0;

	if (c->found)
		rc = mock_internet_apply(mock->inet, c->slot, c->gen, &c->list, c->mode, c->blocked, err);
	if (rc != 0)
		fprintf(stderr, "sbx-mock: egress of %s not applied (its link drops everything): %s\n", id,
			err->msg);
	sbx_egress_list_free(&c->list);
	return rc;
}

int mock_egress_wire(sbx_mock *mock, const mock_sandbox *sb, mock_guest *g, sbx_err *err)
{
	egress_copy c;

	int rc;

	if (mock->inet == NULL || g == NULL)
		return 0;
	pthread_mutex_lock(&mock->model->lock);
	copy_locked(mock, sb, &c);
	pthread_mutex_unlock(&mock->model->lock);
	if (!c.found) { /* destroyed meanwhile: its link would drop everything */
		sbx_egress_list_free(&c.list);
		c.blocked = true;
	}
	rc = mock_internet_wire(mock->inet, slot_of(sb->ip), sb->id, sb->ip, mock_guest_cell_pid(g),
				mock_guest_take_net_link(g), c.gen, &c.list, c.mode, c.blocked, err);
	sbx_egress_list_free(&c.list);
	return rc;
}

int mock_egress_prewire(void *arg, mock_guest *g, sbx_err *err)
{
	sbx_mock *mock = arg;
	uint32_t link;

	if (mock->inet == NULL)
		return 0;
	if (mock_internet_prewire(mock->inet, mock_guest_cell_pid(g), &link, err) != 0)
		return -1;
	mock_guest_set_net_link(g, link);
	return 0;
}

void mock_egress_unprewire(void *arg, mock_guest *g)
{
	sbx_mock *mock = arg;

	mock_internet_unprewire(mock->inet, mock_guest_take_net_link(g));
}

void mock_egress_sync(sbx_mock *mock, const char *id)
{
	sbx_err err = {{0}};
	egress_copy c;

	if (mock->inet == NULL)
		return;
	pthread_mutex_lock(&mock->model->lock);
	copy_locked(mock, mock_sandbox_find_any(mock->model, id), &c);
	pthread_mutex_unlock(&mock->model->lock);
	apply(mock, &c, id, &err);
}

void mock_egress_sync_all(sbx_mock *mock)
{
	char (*ids)[sizeof(((mock_sandbox *)0)->id)] = NULL;
	size_t n = 0;

	if (mock->inet == NULL)
		return;
	pthread_mutex_lock(&mock->model->lock);
	ids = calloc(mock->model->nsbx + 1, sizeof(*ids));
	for (size_t i = 0; ids != NULL && i < mock->model->nsbx; i++)
		memcpy(ids[n++], mock->model->sbx[i]->id, sizeof(ids[0]));
	pthread_mutex_unlock(&mock->model->lock);
	for (size_t i = 0; i < n; i++)
		mock_egress_sync(mock, ids[i]);
	free(ids);
}

void mock_egress_unwire_guest(void *arg, mock_guest *g)
{
	sbx_mock *mock = arg;

	if (mock->inet != NULL && g != NULL)
		mock_internet_unwire_id(mock->inet, mock_guest_name(g));
}

void mock_egress_builder_ip(uint32_t k, char *out, size_t cap)
{
	/* 10.232.0.0/16: past the sandboxes' 10.200-231 (model_sandbox.c),
	 * so its slot (slot_of) is never a sandbox's */
	snprintf(out, cap, "10.232.%u.%u", (unsigned)(k >> 8 & 0xff), (unsigned)(k & 0xff));
}

int mock_egress_wire_builder(sbx_mock *mock, uint32_t k, mock_guest *g, sbx_err *err)
{
	/* allow all: the simulated internet leaves the machine only through
	 * --internet-upstream, which the mock's operator opened */
	const sbx_egress_list open = {.is_null = true};
	char ip[16];

	if (mock->inet == NULL || g == NULL)
		return 0;
	if (k == 0 || k > 0xffff) {
		sbx_err_set(err, "builder address index %u out of 1..65535", (unsigned)k);
		return -1;
	}
	mock_egress_builder_ip(k, ip, sizeof(ip));
	/* a warm-pool builder's link was made ahead (mock_egress_prewire) */
	return mock_internet_wire(mock->inet, slot_of(ip), mock_guest_name(g), ip, mock_guest_cell_pid(g),
				  mock_guest_take_net_link(g), 0, &open, SBX_HOST_RULES_OBSERVED, false, err);
}

void mock_egress_unwire(sbx_mock *mock, const mock_sandbox *sb)
{
	if (mock->inet != NULL && sb->guest != NULL)
		mock_internet_unwire(mock->inet, slot_of(sb->ip));
}

/* journal: a ring of request records; see journal.h. */
#include "faults/journal.h"
#include "util/path_match.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "faults/faults.h"

struct mock_journal {
	pthread_mutex_t lock;
	mock_journal_entry *ring;
	size_t size;
	size_t head;        /* next slot to write */
	size_t used;
	uint64_t next_seq;
	uint64_t dropped;
};

mock_journal *mock_journal_new(size_t size)
{
	mock_journal *j = calloc(1, sizeof(*j));

	if (j == NULL)
		return NULL;
	if (size > 0) {
		j->ring = calloc(size, sizeof(*j->ring));
		if (j->ring == NULL) {
			free(j);
			return NULL;
		}
	}
	pthread_mutex_init(&j->lock, NULL);
	j->size = size;
	j->next_seq = 1;
	return j;
}

static void entry_release(mock_journal_entry *e)
{
	free(e->path);
	free(e->query);
	free(e->tenant);
	free(e->fault);
	memset(e, 0, sizeof(*e));
}

static void clear_locked(mock_journal *j)
{
	for (size_t i = 0; i < j->size; i++)
		entry_release(&j->ring[i]);
	j->head = 0;
	j->used = 0;
	j->dropped = 0;
}

void mock_journal_free(mock_journal *j)
{
	if (j == NULL)
		return;
	clear_locked(j);
	free(j->ring);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static char *dup_or_null(const char *s)
{
	return s != NULL ? strdup(s) : NULL;
}

void mock_journal_add(mock_journal *j, const mock_journal_entry *e)
{
	mock_journal_entry *slot;

	if (j == NULL || j->size == 0)
		return;
	pthread_mutex_lock(&j->lock);
	slot = &j->ring[j->head];
	if (j->used == j->size) {
		entry_release(slot);
		j->dropped++;
	} else {
		j->used++;
	}
	*slot = *e;
	slot->seq = j->next_seq++;
	slot->path = dup_or_null(e->path);
	slot->query = dup_or_null(e->query);
	slot->tenant = dup_or_null(e->tenant);
	slot->fault = dup_or_null(e->fault);
	j->head = (j->head + 1) % j->size;
	pthread_mutex_unlock(&j->lock);
}

void mock_journal_clear(mock_journal *j)
{
	pthread_mutex_lock(&j->lock);
	clear_locked(j);
	pthread_mutex_unlock(&j->lock);
}

static bool entry_matches(const mock_journal_entry *e, const mock_journal_filter *f)
{
	if (e->seq <= f->since)
		return false;
	if (f->method != NULL && strcasecmp(f->method, e->method) != 0)
		return false;
	if (f->path != NULL && (e->path == NULL || !mock_path_match(f->path, e->path)))
		return false;
	if (f->tenant != NULL && (e->tenant == NULL || strcmp(f->tenant, e->tenant) != 0))
		return false;
	if (f->status != 0 && f->status != e->status)
		return false;
	return true;
}

static cJSON *entry_json(const mock_journal_entry *e)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "seq", (double)e->seq);
	cJSON_AddNumberToObject(o, "ts_ms", (double)e->ts_ms);
	cJSON_AddStringToObject(o, "method", e->method);
	cJSON_AddStringToObject(o, "path", e->path != NULL ? e->path : "");
	cJSON_AddStringToObject(o, "query", e->query != NULL ? e->query : "");
	if (e->tenant != NULL)
		cJSON_AddStringToObject(o, "tenant", e->tenant);
	else
		cJSON_AddNullToObject(o, "tenant");
	cJSON_AddNumberToObject(o, "status", e->status);
	if (e->sandbox_id[0] != '\0')
		cJSON_AddStringToObject(o, "sandbox_id", e->sandbox_id);
	cJSON_AddNumberToObject(o, "duration_us", (double)e->duration_us);
	cJSON_AddNumberToObject(o, "start_us", (double)e->start_us);
	cJSON_AddNumberToObject(o, "end_us", (double)e->end_us);
	if (e->conn != 0)
		cJSON_AddNumberToObject(o, "conn", (double)e->conn);
	if (e->fault != NULL)
		cJSON_AddStringToObject(o, "fault", e->fault);
	if (e->agent[0] != '\0')
		cJSON_AddStringToObject(o, "agent", e->agent);
	return o;
}

/* Walks entries oldest first; calls fn for each match until it returns false. */
static void walk(mock_journal *j, const mock_journal_filter *f,
		 bool (*fn)(const mock_journal_entry *e, void *arg), void *arg)
{
	if (j->size == 0)
		return; /* journal disabled: nothing recorded */
	size_t start = (j->head + j->size - j->used) % j->size;

	for (size_t i = 0; i < j->used; i++) {
		const mock_journal_entry *e = &j->ring[(start + i) % j->size];

		if (entry_matches(e, f) && !fn(e, arg))
			return;
	}
}

struct collect {
	cJSON *arr;
	size_t n, limit;
	uint64_t last;
};

static bool collect_fn(const mock_journal_entry *e, void *arg)
{
	struct collect *c = arg;

	cJSON_AddItemToArray(c->arr, entry_json(e));
	c->last = e->seq;
	c->n++;
	return c->limit == 0 || c->n < c->limit;
}

cJSON *mock_journal_query(mock_journal *j, const mock_journal_filter *flt)
{
	cJSON *o = cJSON_CreateObject();
	struct collect c = {NULL, 0, flt->limit, 0};

	c.arr = cJSON_AddArrayToObject(o, "entries");
	pthread_mutex_lock(&j->lock);
	walk(j, flt, collect_fn, &c);
	/* next_seq: where a follow-up `since` should start. With a limit it is
	 * the last returned entry, so nothing is skipped. */
	cJSON_AddNumberToObject(o, "next_seq",
				(double)(c.limit != 0 && c.n == c.limit ? c.last : j->next_seq - 1));
	cJSON_AddBoolToObject(o, "wrapped", j->dropped > 0);
	cJSON_AddNumberToObject(o, "dropped", (double)j->dropped);
	/* false: started with --no-journal, nothing is ever recorded */
	cJSON_AddBoolToObject(o, "enabled", j->size > 0);
	pthread_mutex_unlock(&j->lock);
	return o;
}

static bool count_fn(const mock_journal_entry *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
	return true;
}

size_t mock_journal_count(mock_journal *j, const mock_journal_filter *flt)
{
	size_t n = 0;

	pthread_mutex_lock(&j->lock);
	walk(j, flt, count_fn, &n);
	pthread_mutex_unlock(&j->lock);
	return n;
}

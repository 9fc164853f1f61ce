/* mutation_log: the durable mutation log of sbx-mock (`--state-dir DIR`).
 *
 * DIR/state.log is append-only; each record is framed as
 *   u32 little-endian payload length | u32 little-endian CRC-32 (IEEE) of
 *   the payload | payload (a JSON object)
 * and every append is fdatasync'd before it returns, so a caller that
 * appends before answering never acknowledges an operation the log lacks.
 * On open the log is read back; the first bad record ends the replay.
 * Nothing is deleted: the bytes from the bad record on are copied into
 * DIR/state.log.<torn|damaged>-<UTC time> before the log is cut back.
 *   - torn (the last record cut short by a crash in its write, so never
 *     acknowledged): set aside with a warning, and the open goes on;
 *   - damaged (CRC mismatch, absurd length, a length running past the end
 *     over another record): the open fails naming the file, the offset and
 *     --state-repair, unless repair is true, which sets the tail aside
 *     (reporting how many records it holds) and goes on.
 *
 * This module knows framing and files only — what a record means is the
 * model's business (model.c), when to write one the HTTP layer's. */
#ifndef SBX_MOCK_MUTATION_LOG_H
#define SBX_MOCK_MUTATION_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx/err.h"

#define MOCK_MUTLOG_MAX_RECORD (64u * 1024 * 1024)

typedef struct mock_mutlog mock_mutlog;

/* Called for each good record in order; payload is NUL-terminated. */
typedef void (*mock_mutlog_record_fn)(void *arg, const char *payload, size_t len);

/* Opens (creating DIR and the log when missing) and replays. *dropped gets
 * the number of bytes set aside from a torn/damaged tail (0 when clean). Takes an
 * exclusive flock on DIR/lock (holding this pid) until mock_mutlog_close:
 * NULL with "already used by another sbx-mock (pid N)" when another holds
 * it. */
mock_mutlog *mock_mutlog_open(const char *dir, bool quiet, bool repair, mock_mutlog_record_fn fn,
			      void *arg, size_t *dropped, sbx_err *err);
/* Appends one record and fdatasyncs. 0, or -1 with err. Thread-safe. */
int mock_mutlog_append(mock_mutlog *st, const char *payload, size_t len, sbx_err *err);
/* Number of records read at open plus appended since. */
uint64_t mock_mutlog_records(mock_mutlog *st);
void mock_mutlog_close(mock_mutlog *st);

/* Reads DIR/state.log without changing anything (no create, no lock, no
 * truncation) and calls fn for each good record, as mock_mutlog_open would.
 * *records gets the good records, *len the file's size, *good the length of
 * the good prefix (< *len: *why says what ends it, *torn whether it is a
 * record cut short at the end, which a start sets aside, or damage, which
 * a start refuses without --state-repair). 0, or -1 with err when
 * the log cannot be read (a missing log is an error here). */
int mock_mutlog_check(const char *dir, mock_mutlog_record_fn fn, void *arg, uint64_t *records, size_t *len,
		      size_t *good, const char **why, bool *torn, sbx_err *err);

uint32_t mock_crc32(const void *data, size_t len);

#endif

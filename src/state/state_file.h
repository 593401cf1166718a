/* The state file of a task's checkpoint: "SPST", u32 version 1, then per
 * operator with state its keyed section (the backend's, key group by key
 * group) and its operator state elements (u32 length, bytes); the
 * handles of the acknowledgement hold every offset. Little-endian. The
 * writer buffers (a write(2) per STATE_FILE_BUFFER bytes) and counts
 * offsets, on the task's snapshot thread; the reader opens files by path
 * and checks every length against the file, on the task thread: the file
 * comes from disk. */
#ifndef SPATE_STATE_STATE_FILE_H
#define SPATE_STATE_STATE_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <spate/error.h>

#include "proto/checkpoint.pb-c.h"
#include "state/state_map.h"

/* Bytes of state file written per write(2). */
#define STATE_FILE_BUFFER (1 << 20)

struct state_file_writer {
    int fd;
    uint8_t *buf;
    size_t used;
    uint64_t off; /* bytes written so far, buffered ones included */
    int error;    /* errno of the first failed write */
};

/* Creates the file at path (its folder must exist: the coordinator made
 * it) and writes the header. */
int state_file_create(struct state_file_writer *w, const char *path, spate_error *err);
/* Flushes and closes; the first error of any write, naming path (the file
 * is removed then). */
int state_file_finish(struct state_file_writer *w, const char *path, spate_error *err);

void state_file_write(struct state_file_writer *w, const uint8_t *p, size_t n);
void state_file_flush(struct state_file_writer *w);

/* Room for n bytes in the buffer (which counts them written), or NULL
 * when n is more than a buffer holds. */
static inline uint8_t *
state_file_room(struct state_file_writer *w, size_t n)
{
    uint8_t *at;

    if (n > STATE_FILE_BUFFER - w->used) {
        state_file_flush(w);
        if (n > STATE_FILE_BUFFER)
            return NULL;
    }
    at = w->buf + w->used;
    w->used += n;
    w->off += n;
    return at;
}

static inline void
state_file_put(struct state_file_writer *w, const void *p, size_t n)
{
    uint8_t *at;

    if (n == 0)
        return; /* p may be NULL (an empty value), which memcpy may not take */
    at = state_file_room(w, n);

    if (at != NULL) {
        memcpy(at, p, n);
        return;
    }
    state_file_write(w, p, n);
    w->off += n;
}

static inline void
state_file_u32(struct state_file_writer *w, uint32_t v)
{
    state_file_put(w, &v, 4);
}

/* A state map entry: u64 hash, u32 key length, key, u32 value length,
 * value (inline: a snapshot writes one per entry). */
static inline void
state_file_entry(struct state_file_writer *w, const struct state_entry *e)
{
    uint32_t klen = state_entry_key_len(e), vlen = e->value_len;
    uint8_t *at = state_file_room(w, 16 + (size_t)klen + vlen);

    if (at == NULL) {
        state_file_put(w, &e->hash, 8);
        state_file_u32(w, klen);
        state_file_put(w, state_entry_key(e), klen);
        state_file_u32(w, vlen);
        state_file_put(w, state_entry_value(e), vlen);
        return;
    }
    /* Put together in the buffer. */
    memcpy(at, &e->hash, 8);
    memcpy(at + 8, &klen, 4);
    memcpy(at + 12, state_entry_key(e), klen);
    memcpy(at + 12 + klen, &vlen, 4);
    memcpy(at + 16 + klen, state_entry_value(e), vlen);
}

/* An operator state entry of a handle, and its elements' offsets. */
Checkpoint__OperatorStateEntry *state_file_operator_entry(const char *name,
                                                          Checkpoint__DistributionMode mode);
void state_file_add_offset(Checkpoint__OperatorStateEntry *e, uint64_t off);

/* ---- reading ---- */

struct state_file {
    char *path;
    FILE *f;
    uint64_t size;
};

/* The files a restore reads, each opened once. */
struct state_file_reader {
    struct state_file *files;
    int nfiles;
};

/* The file at path, opened and its header checked. */
int state_file_open(struct state_file_reader *r, const char *path, struct state_file **out,
                    spate_error *err);
void state_file_reader_release(struct state_file_reader *r);
/* Reads len bytes at off into a fresh buffer (the caller frees it). */
int state_file_read(struct state_file *f, uint64_t off, uint64_t len, uint8_t **out,
                    spate_error *err);
/* An error naming the file, the offset and what is wrong there. */
int state_file_corrupt(const struct state_file *f, uint64_t off, const char *what,
                       spate_error *err);

/* A cursor over bytes read from a state file. */
struct state_file_cursor {
    const uint8_t *p, *end;
};

bool state_file_cursor_u32(struct state_file_cursor *c, uint32_t *v);
/* state_file_entry's form; false when it does not fit what is left. */
bool state_file_cursor_entry(struct state_file_cursor *c, uint64_t *hash, const uint8_t **key,
                             uint32_t *klen, const uint8_t **value, uint32_t *vlen);

#endif

/* Timers of one operator instance (Flink's InternalTimerService with heap
 * timers): event-time and processing-time timers of the current key and
 * namespace, one per (key, namespace, timestamp), fired in timestamp order
 * with their key and namespace made current. The live timers' identities
 * are kept per key group, so that a snapshot writes them by key group; the
 * heaps order by the timestamp kept beside each timer. A keyed state
 * backend owns one (the heap backend does; a RocksDB backend may keep its
 * timers on the heap too, as Flink's can). Task thread only. */
#ifndef SPATE_STATE_TIMER_SERVICE_H
#define SPATE_STATE_TIMER_SERVICE_H

#include <stdbool.h>
#include <stdint.h>

#include "state/keyed_state.h"
#include "state/keyed_state_backend.h"

struct timer_slot {
    int64_t timestamp; /* the timer's, beside it for the heap's sifts */
    struct timer *timer;
};

struct timer_heap {
    struct timer_slot *items;
    size_t count, cap;
};

/* Timers an owner keeps in a form of its own, the service's in checkpoints
 * only: a window's, one per window for all the keys with state in it
 * (Flink's window operator registers one per key and window). Snapshots
 * and restores stay in the per-key form, so any backend, at any
 * parallelism, restores them. */
struct timer_service;

struct timer_owner_form {
    /* Appends the owner's timers to out (timer_service_snapshot's
     * buffers), each with timer_service_snapshot_put. */
    void (*snapshot)(void *data, struct timer_service *ts, struct byte_buf *out);
    /* A restored timer: true when the owner takes it into its form, false
     * to register it per key. */
    bool (*adopt)(void *data, bool event_time, int64_t timestamp, spate_bytes key, const void *ns,
                  size_t ns_len);
    void *data;
};

struct timer_service {
    struct keyed_state sets; /* per key group: the live timers' identities */
    struct timer_heap event, processing;
    struct state_key_context *key; /* the current key: the owner's */
    uint64_t *wake_ns;             /* processing time: the next wake-up (monotonic ns) */
    void *owner;                   /* what fire gets */
    uint8_t *buf;                  /* a timer's identity */
    size_t buf_cap;
    /* Fired timers kept for the next ones, all of spare_data bytes of key
     * and namespace (a window's timers are of one size): no allocation
     * per timer once as many were live. */
    struct timer **spare;
    size_t nspare, spare_cap;
    size_t spare_data;
    const struct timer_owner_form *form; /* NULL: none */
};

void timer_service_init(struct timer_service *ts, uint32_t max_parallelism,
                        struct key_group_range range, struct state_key_context *key,
                        uint64_t *wake_ns, void *owner);
void timer_service_release(struct timer_service *ts);

/* A timer of the current key and namespace (again: nothing changes). A
 * processing-time one moves the wake-up earlier when it is earlier. */
void timer_service_register(struct timer_service *ts, bool event_time, int64_t timestamp);
/* Deletes it: the heap keeps its slot, skipped when it comes up. */
void timer_service_delete(struct timer_service *ts, bool event_time, int64_t timestamp);
/* Fires, in timestamp order, the timers due at time (event time: the
 * watermark; processing time: the wall clock in ms). */
void timer_service_advance(struct timer_service *ts, bool event_time, int64_t time,
                           keyed_timer_fire_fn fire);
/* The earliest processing-time timer (INT64_MAX: none). */
int64_t timer_service_next_processing_time(const struct timer_service *ts);
/* The wake-up came (now: monotonic ns): fires what is due by the wall
 * clock and sets the next wake-up. */
void timer_service_on_processing_time(struct timer_service *ts, uint64_t now,
                                      keyed_timer_fire_fn fire);

/* Hands every live timer to fn, then forgets them all: a backend that
 * keeps its timers elsewhere takes those a restore gave the heap. */
void timer_service_drain(struct timer_service *ts, void (*fn)(void *arg, const struct timer *t),
                         void *arg);

/* The live timers by key group: out[kg - range.start] gets u32 count, then
 * per timer u8 event time, i64 timestamp, u64 key hash, u32 key length, u32
 * namespace length, key and namespace bytes. */
void timer_service_snapshot(struct timer_service *ts, struct byte_buf *out);
/* One timer of key (whose hash is key_hash) in that form, into out. */
void timer_service_snapshot_put(struct timer_service *ts, struct byte_buf *out, bool event_time,
                                int64_t timestamp, uint64_t key_hash, spate_bytes key,
                                const void *ns, size_t ns_len);
/* Registers the timers of one key group in that form (those the owner's
 * form adopts are its); false when the bytes
 * are malformed. The current key is left empty. */
bool timer_service_restore(struct timer_service *ts, const uint8_t *bytes, size_t len);

#endif

/* Producer and consumer "tasks" over the network layer for the unit tests,
 * net_harness and network_bench until the streaming layer's tasks exist: a
 * thread with a notifier that emits numbered records (u64 sequence number per
 * subpartition, then random bytes; a latency record's emit time at
 * NET_TASK_HEADER), or reads them back and checks their order. */
#ifndef SPATE_TESTS_NET_TASK_H
#define SPATE_TESTS_NET_TASK_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/notifier.h"
#include "metrics/task_metrics.h"
#include "network/net_env.h"
#include "network/partition_id.h"
#include "network/partitioner.h"

#define NET_TASK_HEADER 16

struct producer_task {
    /* set by the caller */
    struct net_env *env;
    struct result_partition_id id;
    uint32_t index; /* producer index, written into records */
    uint32_t num_subpartitions;
    uint64_t records;     /* in total, over all subpartitions */
    uint32_t record_size; /* >= NET_TASK_HEADER */
    enum partitioner_kind partitioner;
    int64_t buffer_timeout_ms;
    uint64_t event_every; /* a user event after every that many records (0: none) */
    uint64_t pause_every; /* wait until the flush deadline after that many (0: never) */
    bool timestamps;      /* payload's first 8 bytes: clock_mono_ns at emit */
    bool use_reserve;     /* serialize through reserve/commit */
    bool spin_set;        /* spin_ns replaces the notifier's default spin */
    uint64_t spin_ns;
    /* results */
    int rc;
    char error[512];
    uint64_t emitted;
    uint64_t elapsed_ns;
    struct task_io_metrics metrics;
    /* internals */
    struct notifier notifier;
    pthread_t thread;
};

struct consumer_channel_spec {
    struct result_partition_id partition;
    uint32_t subpartition;
    const char *host; /* NULL: local */
    int port;
};

struct consumer_task {
    struct net_env *env;
    uint32_t num_channels;
    struct consumer_channel_spec *channels;
    uint64_t delay_every; /* slow consumer: sleep delay_us after that many records */
    uint32_t delay_us;
    bool check_order;
    bool stall;           /* never read (a stalled consumer), until stop is set */
    bool collect_latency; /* record payload timestamps' delay */
    uint64_t stop_after;  /* stop after this many records (0: to the end) */
    bool spin_set;        /* spin_ns replaces the notifier's default spin */
    uint64_t spin_ns;
    /* results */
    int rc;
    char error[512];
    uint64_t received;
    uint64_t bytes;
    uint64_t events;
    uint64_t *per_channel; /* records per channel */
    uint64_t order_errors;
    uint64_t event_order_errors;
    uint64_t *latencies_ns; /* collect_latency: one per record, capacity latency_cap */
    uint64_t latency_cap, latency_count;
    uint64_t elapsed_ns;
    struct task_io_metrics metrics;
    /* internals */
    _Atomic bool stop;
    struct notifier notifier;
    pthread_t thread;
};

/* Start a task thread; join waits for it and returns its rc. */
int producer_task_start(struct producer_task *p);
int producer_task_join(struct producer_task *p);
void producer_task_cancel(struct producer_task *p);
int consumer_task_start(struct consumer_task *c);
int consumer_task_join(struct consumer_task *c);
void consumer_task_cancel(struct consumer_task *c);
void consumer_task_release(struct consumer_task *c);

/* Process RSS and its peak (VmHWM), in KiB. */
long net_task_rss_kb(void);
long net_task_peak_rss_kb(void);

#endif

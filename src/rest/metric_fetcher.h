/* The REST side's metric fetcher (Flink's MetricFetcherImpl): asks every
 * TaskManager the ResourceManager knows for its metric dump (the
 * TaskExecutor's request_metric_dump) and keeps the answers in a metric
 * store, fetched again when a handler needs it and it is older than
 * metrics.fetcher.update-interval. Any REST thread, one at a time: a mutex
 * is held from acquire to release, and while a fetch waits for the
 * TaskManagers' answers (at most fetch_timeout_ms). */
#ifndef SPATE_REST_METRIC_FETCHER_H
#define SPATE_REST_METRIC_FETCHER_H

#include <stdint.h>

#include "rest/metric_store.h"
#include "rpc/gateway.h"

struct metric_fetcher;

/* rm: the ResourceManager's gateway (borrowed, outlives the fetcher). */
struct metric_fetcher *metric_fetcher_new(struct rpc_service *svc, const struct rpc_gateway *rm,
                                          int64_t update_interval_ms, int64_t fetch_timeout_ms);
void metric_fetcher_free(struct metric_fetcher *f);

/* Locks the fetcher and returns the store, fetched anew if older than the
 * update interval, and the wall ms of that fetch (Flink's end-timestamp)
 * into *fetched_ms (may be NULL). Never NULL: empty when nothing could be
 * fetched. Valid until metric_fetcher_release, which every acquire needs. */
const struct metric_store *metric_fetcher_acquire(struct metric_fetcher *f, int64_t *fetched_ms);
void metric_fetcher_release(struct metric_fetcher *f);

#endif

/* The REST side's metric fetcher (Flink's MetricFetcherImpl): asks every
 * TaskManager the ResourceManager knows for its metric dump (the
 * TaskExecutor's request_metric_dump) and keeps the answers in a metric
 * store, fetched again when a handler needs it and it is older than
 * metrics.fetcher.update-interval. The REST thread owns it; it waits on the
 * TaskManagers' answers for at most fetch_timeout_ms. */
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

/* The store, fetched anew if older than the update interval; borrowed
 * until the next call. Never NULL: empty when nothing could be fetched. */
const struct metric_store *metric_fetcher_update(struct metric_fetcher *f);
/* Wall ms of the last fetch (0: none yet): Flink's end-timestamp. */
int64_t metric_fetcher_last_update(const struct metric_fetcher *f);

#endif

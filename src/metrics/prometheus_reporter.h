/* Flink's Prometheus reporter: an HTTP server of its own on every process
 * (metrics.reporter.prom.port, a port or a range: the first free one) that
 * answers a scrape with the process's metric registries in Prometheus' text
 * format, named as Flink names them: "flink_" + the group's logical scope +
 * "_" + the metric, characters other than [A-Za-z0-9_:] as '_'
 * (flink_taskmanager_job_task_numRecordsIn), the group's variables as labels
 * (job_id, job_name, task_name, subtask_index, ...). A scrape runs on the
 * server's thread: it calls the owner's refresh hook, then reads the
 * registry (which has its own lock). */
#ifndef SPATE_METRICS_PROMETHEUS_REPORTER_H
#define SPATE_METRICS_PROMETHEUS_REPORTER_H

#include <stddef.h>

#include <spate/error.h>

#include "core/config.h"
#include "metrics/metrics.h"

struct prometheus_reporter;

struct prometheus_reporter_options {
    const char *bind_host; /* an IPv4 address or "localhost" */
    const char *port;      /* "9249", "9250-9260", "0" (ephemeral) */
    /* Called on the server's thread before each scrape reads the registry
     * (process figures to set into gauges); may be NULL. */
    void (*refresh)(void *arg);
    void *arg;
};

/* Reports the registries rs[0..n) (a mini cluster has one per TaskManager),
 * borrowed: they must outlive the reporter. SPATE_ECONFIG for a bad host,
 * the parser's error for a bad port, SPATE_EADDRINUSE when no port of the
 * range is free. */
int prometheus_reporter_start(struct metric_registry *const *rs, size_t n,
                              const struct prometheus_reporter_options *o,
                              struct prometheus_reporter **out, spate_error *err);
/* Starts one when the configuration asks for it
 * (metrics.reporter.prom.factory.class, and "prom" among metrics.reporters
 * when that is set), else *out = NULL and 0. o->port is taken from the
 * configuration. Logs the URL it serves. */
int prometheus_reporter_from_config(const struct config *conf, struct metric_registry *const *rs,
                                    size_t n, const struct prometheus_reporter_options *o,
                                    struct prometheus_reporter **out, spate_error *err);
int prometheus_reporter_port(const struct prometheus_reporter *p);
/* NULL is fine. Waits for a scrape in progress. */
void prometheus_reporter_stop(struct prometheus_reporter *p);

/* The registries in Prometheus' text format (version 0.0.4): each metric
 * family once, with its HELP and TYPE lines, its series together. Free the
 * result; *len gets its length. */
char *prometheus_text(struct metric_registry *const *rs, size_t n, size_t *len);

#endif

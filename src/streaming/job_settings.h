/* A job's checkpointing and restart strategy (Flink's
 * JobCheckpointingSettings and RestartStrategyOptions). The client records
 * the keys the job set (its code, its configuration file and -D) and
 * resolves the settings from them; the JobMaster resolves them again with
 * those keys laid over the JobManager's configuration, spate's defaults
 * last (job_settings_complete), so that a cluster's
 * execution.checkpointing.*, state.* and restart-strategy.* serve the jobs
 * that leave them out. Carried in the JobGraph (proto/jobgraph.proto
 * CheckpointSettings, RestartSettings). Plain data. */
#ifndef SPATE_STREAMING_JOB_SETTINGS_H
#define SPATE_STREAMING_JOB_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/config.h"
#include "proto/jobgraph.pb-c.h"

/* execution.checkpointing.externalized-checkpoint-retention */
enum checkpoint_retention {
    RETAIN_NEVER,          /* NO_EXTERNALIZED_CHECKPOINTS: deleted when the job ends */
    RETAIN_ON_FAILURE,     /* DELETE_ON_CANCELLATION: kept when the job fails */
    RETAIN_ON_CANCELLATION /* RETAIN_ON_CANCELLATION: kept however the job ends */
};

struct checkpoint_settings {
    int64_t interval_ms; /* 0: no periodic checkpoints */
    int64_t timeout_ms;
    int64_t min_pause_ms;
    int max_concurrent;
    int tolerable_failures;
    bool exactly_once;     /* else AT_LEAST_ONCE */
    char *checkpoints_dir; /* absolute; NULL: the job set none (or no checkpoints) */
    int num_retained;
    enum checkpoint_retention retention;
    char *savepoints_dir; /* state.savepoints.dir, absolute, or NULL */
    /* execution.checkpointing.incremental as the job (or the cluster's
     * configuration) set it: 1 or 0; -1: unset, the TaskManagers'. */
    int incremental;
    /* The keys the job set itself, flat YAML (`key: "value"` lines), or
     * NULL: it set none. */
    char *job_config;
};

enum restart_kind {
    RESTART_NONE,
    RESTART_FIXED_DELAY,
    RESTART_EXPONENTIAL_DELAY,
    RESTART_FAILURE_RATE,
};

struct restart_settings {
    enum restart_kind kind;
    int attempts;               /* fixed-delay */
    int64_t delay_ms;           /* fixed-delay, failure-rate */
    int64_t initial_backoff_ms; /* exponential-delay */
    int64_t max_backoff_ms;
    double backoff_multiplier;
    int64_t reset_backoff_threshold_ms;
    double jitter_factor;
    int attempts_before_reset;
    int max_failures_per_interval; /* failure-rate */
    int64_t failure_rate_interval_ms;
};

/* "none", "fixed-delay", "exponential-delay", "failure-rate". */
const char *restart_kind_name(enum restart_kind kind);

/* Settings from conf (may be NULL: defaults). interval_ms > 0 overrides
 * execution.checkpointing.interval (spate_env_enable_checkpointing), and
 * mode >= 0 the mode (1: exactly once, 0: at least once). Folders not set
 * stay NULL (job_settings_complete fills them). Without
 * restart-strategy.type the strategy is exponential-delay when checkpoints
 * are on, none otherwise. Relative folders are made absolute against the
 * working directory (the JobManager's is another). cp->job_config records
 * the keys conf sets and the overrides. Errors: a bad value (naming the
 * key), a backoff multiplier not above 1, an initial backoff above the
 * maximum. Release with job_settings_release. */
int job_settings_from_config(const struct config *conf, int64_t interval_ms, int mode,
                             struct checkpoint_settings *cp, struct restart_settings *rs,
                             spate_error *err);
/* The JobMaster's part: resolves cp and rs again from cp->job_config laid
 * over the cluster's configuration (NULL: none), key by key; with
 * checkpoints on and no folder from either, spate's default (the first of
 * the cluster's io.tmp.dirs, /spate-checkpoints). job names the job in the
 * log lines. Errors (cp and rs unchanged): job_config is not YAML, sets a
 * key that is not one of these settings or a folder that is not absolute,
 * or a value (the job's or the cluster's) is bad. */
int job_settings_complete(struct checkpoint_settings *cp, struct restart_settings *rs,
                          const struct config *cluster, const char *job, spate_error *err);
/* The encoded JobGraph graph[len] with its CheckpointSettings and
 * RestartSettings replaced by cp's and rs's, in *out (malloc'd). */
int job_settings_reencode(const uint8_t *graph, size_t len, const struct checkpoint_settings *cp,
                          const struct restart_settings *rs, uint8_t **out, size_t *out_len,
                          spate_error *err);
void job_settings_release(struct checkpoint_settings *cp);

/* To the JobGraph's messages: the strings stay cp's. */
void job_settings_encode(const struct checkpoint_settings *cp, const struct restart_settings *rs,
                         Jobgraph__CheckpointSettings *pcp, Jobgraph__RestartSettings *prs);
/* From a decoded JobGraph (absent messages: checkpointing off, no
 * restarts); checks every value, as for any input from outside. */
int job_settings_decode(const Jobgraph__CheckpointSettings *pcp,
                        const Jobgraph__RestartSettings *prs, struct checkpoint_settings *cp,
                        struct restart_settings *rs, spate_error *err);

#endif

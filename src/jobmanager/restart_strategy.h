/* Restart strategies (Flink's RestartBackoffTimeStrategy implementations):
 * whether a failed job (or region) may restart and after what pause. none,
 * fixed-delay (a number of attempts, a fixed pause), exponential-delay
 * (a pause growing by a multiplier up to a maximum, with jitter, reset after
 * a quiet period; failures during a pause merge into one attempt) and
 * failure-rate (at most N failures within an interval). The JobMaster asks
 * on every failure: notify_failure, then can_restart, then backoff_ms.
 * Times are the caller's monotonic milliseconds, so tests drive the clock.
 * Owned by one JobMaster (loop thread). */
#ifndef SPATE_JOBMANAGER_RESTART_STRATEGY_H
#define SPATE_JOBMANAGER_RESTART_STRATEGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "streaming/job_settings.h"

struct restart_strategy {
    struct restart_settings s;
    int attempts;            /* fixed-delay, exponential-delay: restarts so far */
    int64_t next_restart_ms; /* exponential-delay: when the pending restart runs */
    bool failed_before;      /* exponential-delay: next_restart_ms is set */
    int64_t *failures;       /* failure-rate: a ring of the last max + 1 failure times */
    int nfailures, first;
    uint64_t rng; /* jitter (xorshift64) */
};

/* seed: any value (jitter); 0 picks one. */
void restart_strategy_init(struct restart_strategy *r, const struct restart_settings *s,
                           uint64_t seed);
void restart_strategy_release(struct restart_strategy *r);
/* A failure at now_ms. Returns whether it counts as a new restart attempt
 * (false: exponential-delay merged it into the restart already pending). */
bool restart_strategy_notify_failure(struct restart_strategy *r, int64_t now_ms);
/* After notify_failure: may the job restart? */
bool restart_strategy_can_restart(const struct restart_strategy *r, int64_t now_ms);
/* After notify_failure: the pause before the restart, in ms. */
int64_t restart_strategy_backoff_ms(const struct restart_strategy *r, int64_t now_ms);
/* For logs and failure messages: "fixed-delay (attempts 3, delay 1000 ms)". */
void restart_strategy_describe(const struct restart_strategy *r, char *buf, size_t size);
/* As Flink's RestartStrategy#getDescription words it, for the REST API's
 * /jobs/:jobid/config: "Restart deactivated.", "Restart with fixed delay
 * (1000 ms). #3 restart attempts.", ... */
void restart_strategy_flink_description(const struct restart_strategy *r, char *buf, size_t size);

#endif

/* Restart strategies (restart_strategy.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "jobmanager/restart_strategy.h"

void
restart_strategy_init(struct restart_strategy *r, const struct restart_settings *s, uint64_t seed)
{
    memset(r, 0, sizeof *r);
    r->s = *s;
    r->rng = seed ? seed : (uint64_t)clock_mono_ns() | 1;
    if (s->kind == RESTART_FAILURE_RATE)
        r->failures = xcalloc((size_t)s->max_failures_per_interval + 1, sizeof *r->failures);
}

void
restart_strategy_release(struct restart_strategy *r)
{
    free(r->failures);
    r->failures = NULL;
}

static uint64_t
next_random(struct restart_strategy *r)
{
    r->rng ^= r->rng << 13;
    r->rng ^= r->rng >> 7;
    r->rng ^= r->rng << 17;
    return r->rng;
}

/* exponential-delay: initial * multiplier^attempts, jittered by up to
 * ±jitter of it, kept within [initial, max]. */
static int64_t
exponential_backoff(struct restart_strategy *r)
{
    const struct restart_settings *s = &r->s;
    double base = (double)s->initial_backoff_ms * pow(s->backoff_multiplier, r->attempts);
    int64_t backoff = base >= (double)s->max_backoff_ms ? s->max_backoff_ms : (int64_t)base;
    int64_t offset = (int64_t)((double)backoff * s->jitter_factor);

    if (offset > 0)
        backoff += (int64_t)(next_random(r) % (uint64_t)(2 * offset + 1)) - offset;
    if (backoff > s->max_backoff_ms)
        backoff = s->max_backoff_ms;
    return backoff < s->initial_backoff_ms ? s->initial_backoff_ms : backoff;
}

bool
restart_strategy_notify_failure(struct restart_strategy *r, int64_t now_ms)
{
    int cap;

    switch (r->s.kind) {
    case RESTART_NONE:
        return true;
    case RESTART_FIXED_DELAY:
        r->attempts++;
        return true;
    case RESTART_EXPONENTIAL_DELAY:
        /* Tasks failing while a restart waits belong to that restart. */
        if (r->failed_before && now_ms <= r->next_restart_ms)
            return false;
        if (r->failed_before && now_ms - r->next_restart_ms >= r->s.reset_backoff_threshold_ms)
            r->attempts = 0;
        r->next_restart_ms = now_ms + exponential_backoff(r);
        r->failed_before = true;
        r->attempts++;
        return true;
    case RESTART_FAILURE_RATE:
        /* Keep the newest max + 1 failure times. */
        cap = r->s.max_failures_per_interval + 1;
        if (r->nfailures == cap) {
            r->first = (r->first + 1) % cap;
            r->nfailures--;
        }
        r->failures[(r->first + r->nfailures) % cap] = now_ms;
        r->nfailures++;
        return true;
    }
    return true;
}

bool
restart_strategy_can_restart(const struct restart_strategy *r, int64_t now_ms)
{
    switch (r->s.kind) {
    case RESTART_NONE:
        return false;
    case RESTART_FIXED_DELAY:
        return r->attempts <= r->s.attempts;
    case RESTART_EXPONENTIAL_DELAY:
        return r->attempts <= r->s.attempts_before_reset;
    case RESTART_FAILURE_RATE:
        /* More than max failures, the oldest of them within the interval:
         * the rate is exceeded. */
        return r->nfailures <= r->s.max_failures_per_interval ||
               now_ms - r->failures[r->first] > r->s.failure_rate_interval_ms;
    }
    return false;
}

int64_t
restart_strategy_backoff_ms(const struct restart_strategy *r, int64_t now_ms)
{
    switch (r->s.kind) {
    case RESTART_NONE:
        return 0;
    case RESTART_FIXED_DELAY:
    case RESTART_FAILURE_RATE:
        return r->s.delay_ms;
    case RESTART_EXPONENTIAL_DELAY:
        return r->next_restart_ms > now_ms ? r->next_restart_ms - now_ms : 0;
    }
    return 0;
}

void
restart_strategy_describe(const struct restart_strategy *r, char *buf, size_t size)
{
    const struct restart_settings *s = &r->s;

    switch (s->kind) {
    case RESTART_NONE:
        snprintf(buf, size, "none");
        break;
    case RESTART_FIXED_DELAY:
        snprintf(buf, size, "fixed-delay (%d attempts, %lld ms apart)", s->attempts,
                 (long long)s->delay_ms);
        break;
    case RESTART_EXPONENTIAL_DELAY:
        snprintf(buf, size,
                 "exponential-delay (%lld ms to %lld ms, x%g, jitter %g, reset after %lld ms, %d "
                 "attempts)",
                 (long long)s->initial_backoff_ms, (long long)s->max_backoff_ms,
                 s->backoff_multiplier, s->jitter_factor, (long long)s->reset_backoff_threshold_ms,
                 s->attempts_before_reset);
        break;
    case RESTART_FAILURE_RATE:
        snprintf(buf, size, "failure-rate (%d failures per %lld ms, %lld ms apart)",
                 s->max_failures_per_interval, (long long)s->failure_rate_interval_ms,
                 (long long)s->delay_ms);
        break;
    }
}

void
restart_strategy_flink_description(const struct restart_strategy *r, char *buf, size_t size)
{
    const struct restart_settings *s = &r->s;

    switch (s->kind) {
    case RESTART_NONE:
        snprintf(buf, size, "Restart deactivated.");
        break;
    case RESTART_FIXED_DELAY:
        snprintf(buf, size, "Restart with fixed delay (%lld ms). #%d restart attempts.",
                 (long long)s->delay_ms, s->attempts);
        break;
    case RESTART_EXPONENTIAL_DELAY:
        snprintf(buf, size,
                 "Restart with exponential delay: starting at %lld ms, increasing by %g, with "
                 "maximum %lld ms. Delay resets after %lld ms with jitter %g.",
                 (long long)s->initial_backoff_ms, s->backoff_multiplier,
                 (long long)s->max_backoff_ms, (long long)s->reset_backoff_threshold_ms,
                 s->jitter_factor);
        break;
    case RESTART_FAILURE_RATE:
        snprintf(buf, size,
                 "Failure rate restart with maximum of %d failures within interval %lld ms and "
                 "fixed delay %lld ms.",
                 s->max_failures_per_interval, (long long)s->failure_rate_interval_ms,
                 (long long)s->delay_ms);
        break;
    }
}

/* Unit tests of src/jobmanager/restart_strategy.c with a scripted clock:
 * none, fixed-delay's attempts, exponential-delay's growth, cap, jitter
 * bounds, merged failures, reset and attempt limit, failure-rate's window. */
#include <criterion/criterion.h>

#include "jobmanager/restart_strategy.h"

static struct restart_settings
settings(enum restart_kind kind)
{
    struct restart_settings s = {
        .kind = kind,
        .attempts = 2,
        .delay_ms = 300,
        .initial_backoff_ms = 50,
        .max_backoff_ms = 1000,
        .backoff_multiplier = 2.0,
        .reset_backoff_threshold_ms = 10000,
        .jitter_factor = 0,
        .attempts_before_reset = 1000,
        .max_failures_per_interval = 2,
        .failure_rate_interval_ms = 1000,
    };

    return s;
}

Test(restart_strategy, none_never_restarts)
{
    struct restart_settings s = settings(RESTART_NONE);
    struct restart_strategy r;

    restart_strategy_init(&r, &s, 1);
    restart_strategy_notify_failure(&r, 0);
    cr_assert_not(restart_strategy_can_restart(&r, 0));
    restart_strategy_release(&r);
}

Test(restart_strategy, fixed_delay_restarts_its_attempts_then_stops)
{
    struct restart_settings s = settings(RESTART_FIXED_DELAY);
    struct restart_strategy r;

    restart_strategy_init(&r, &s, 1);
    for (int i = 0; i < 2; i++) {
        cr_assert(restart_strategy_notify_failure(&r, i * 5000));
        cr_assert(restart_strategy_can_restart(&r, i * 5000), "attempt %d", i + 1);
        cr_assert_eq(restart_strategy_backoff_ms(&r, i * 5000), 300);
    }
    restart_strategy_notify_failure(&r, 20000);
    cr_assert_not(restart_strategy_can_restart(&r, 20000));
    restart_strategy_release(&r);
}

Test(restart_strategy, exponential_delay_grows_to_its_maximum)
{
    struct restart_settings s = settings(RESTART_EXPONENTIAL_DELAY);
    static const int64_t want[] = { 50, 100, 200, 400, 800, 1000, 1000 };
    struct restart_strategy r;
    int64_t now = 1000;

    restart_strategy_init(&r, &s, 1);
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        cr_assert(restart_strategy_notify_failure(&r, now));
        cr_assert(restart_strategy_can_restart(&r, now));
        cr_assert_eq(restart_strategy_backoff_ms(&r, now), want[i], "restart %zu: %lld", i + 1,
                     (long long)restart_strategy_backoff_ms(&r, now));
        /* The next failure comes right after the restart ran. */
        now += want[i] + 1;
    }
    restart_strategy_release(&r);
}

Test(restart_strategy, exponential_delay_merges_failures_during_its_pause)
{
    struct restart_settings s = settings(RESTART_EXPONENTIAL_DELAY);
    struct restart_strategy r;

    restart_strategy_init(&r, &s, 1);
    cr_assert(restart_strategy_notify_failure(&r, 1000));
    /* Another task of the same restart fails 10 ms later. */
    cr_assert_not(restart_strategy_notify_failure(&r, 1010));
    cr_assert_eq(restart_strategy_backoff_ms(&r, 1010), 40);
    cr_assert(restart_strategy_notify_failure(&r, 1051));
    cr_assert_eq(restart_strategy_backoff_ms(&r, 1051), 100);
    restart_strategy_release(&r);
}

Test(restart_strategy, exponential_delay_resets_after_a_quiet_period)
{
    struct restart_settings s = settings(RESTART_EXPONENTIAL_DELAY);
    struct restart_strategy r;

    restart_strategy_init(&r, &s, 1);
    restart_strategy_notify_failure(&r, 0);
    restart_strategy_notify_failure(&r, 100);
    cr_assert_eq(restart_strategy_backoff_ms(&r, 100), 100);
    /* 10 s of running after the restart at 200 ms. */
    restart_strategy_notify_failure(&r, 200 + 10000);
    cr_assert_eq(restart_strategy_backoff_ms(&r, 10200), 50);
    restart_strategy_release(&r);
}

Test(restart_strategy, exponential_delay_stops_after_its_attempts)
{
    struct restart_settings s = settings(RESTART_EXPONENTIAL_DELAY);
    struct restart_strategy r;
    int64_t now = 0;

    s.attempts_before_reset = 3;
    restart_strategy_init(&r, &s, 1);
    for (int i = 0; i < 3; i++) {
        restart_strategy_notify_failure(&r, now);
        cr_assert(restart_strategy_can_restart(&r, now));
        now += 2000;
    }
    restart_strategy_notify_failure(&r, now);
    cr_assert_not(restart_strategy_can_restart(&r, now));
    restart_strategy_release(&r);
}

Test(restart_strategy, exponential_jitter_stays_within_its_fraction_and_varies)
{
    struct restart_settings s = settings(RESTART_EXPONENTIAL_DELAY);
    bool seen_other = false;

    s.jitter_factor = 0.5;
    s.initial_backoff_ms = 100;
    s.backoff_multiplier = 2;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        struct restart_strategy r;
        int64_t b;

        restart_strategy_init(&r, &s, seed);
        restart_strategy_notify_failure(&r, 0);
        restart_strategy_notify_failure(&r, 1000); /* 200 ± 100 */
        b = restart_strategy_backoff_ms(&r, 1000);
        cr_assert(b >= 100 && b <= 300, "backoff %lld", (long long)b);
        seen_other |= b != 200;
        restart_strategy_release(&r);
    }
    cr_assert(seen_other);
}

Test(restart_strategy, failure_rate_allows_its_failures_per_interval)
{
    struct restart_settings s = settings(RESTART_FAILURE_RATE);
    struct restart_strategy r;

    restart_strategy_init(&r, &s, 1);
    restart_strategy_notify_failure(&r, 0);
    cr_assert(restart_strategy_can_restart(&r, 0));
    restart_strategy_notify_failure(&r, 400);
    cr_assert(restart_strategy_can_restart(&r, 400));
    cr_assert_eq(restart_strategy_backoff_ms(&r, 400), 300);
    /* A third within 1 s of the first: too many. */
    restart_strategy_notify_failure(&r, 900);
    cr_assert_not(restart_strategy_can_restart(&r, 900));
    restart_strategy_release(&r);

    /* Spread out, they never exceed the rate. */
    restart_strategy_init(&r, &s, 1);
    for (int i = 0; i < 20; i++) {
        restart_strategy_notify_failure(&r, i * 600);
        cr_assert(restart_strategy_can_restart(&r, i * 600), "failure %d", i);
    }
    restart_strategy_release(&r);
}

Test(restart_strategy, describe_names_the_strategy_and_its_values)
{
    struct restart_settings s = settings(RESTART_FIXED_DELAY);
    struct restart_strategy r;
    char buf[200];

    restart_strategy_init(&r, &s, 1);
    restart_strategy_describe(&r, buf, sizeof buf);
    cr_assert_str_eq(buf, "fixed-delay (2 attempts, 300 ms apart)");
    restart_strategy_release(&r);
}

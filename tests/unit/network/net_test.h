/* Helpers of the network unit tests: an environment with small, explicit
 * settings on 127.0.0.1 and an ephemeral data port. */
#ifndef SPATE_TESTS_NET_TEST_H
#define SPATE_TESTS_NET_TEST_H

#include <criterion/criterion.h>

#include "network/net_env.h"
#include "tests/harness/net_task.h"

static inline struct net_env *
test_env(size_t buffers, size_t segment_size, bool lz4)
{
    struct net_env_config cfg;
    struct net_env *env;
    spate_error err;

    cr_assert_eq(net_env_config_load(NULL, &cfg, &err), 0, "%s", err.message);
    cfg.num_buffers = buffers;
    cfg.segment_size = segment_size;
    cfg.lz4 = lz4;
    cfg.backoff_initial_ms = 5;
    cfg.backoff_max_ms = 2000;
    cr_assert_eq(net_env_new(&cfg, &env, &err), 0, "%s", err.message);
    return env;
}

#endif

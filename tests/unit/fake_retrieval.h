/* Fake HA for the unit tests of the TaskExecutor, the JobLeaderService and
 * the JobMaster: a leader retrieval the test drives. start() records the
 * listener it is handed, so that the test can announce a leader (or none)
 * to it; `started` says whether the component under test listens now. */
#ifndef SPATE_TESTS_UNIT_FAKE_RETRIEVAL_H
#define SPATE_TESTS_UNIT_FAKE_RETRIEVAL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/util.h"
#include "rpc/leader.h"

struct fake_retrieval {
    struct leader_retrieval base;
    const struct leader_listener *l;
    void *arg;
    atomic_bool started;
};

static int
fr_start(struct leader_retrieval *lr, const struct leader_listener *l, void *arg, spate_error *err)
{
    struct fake_retrieval *r = (struct fake_retrieval *)lr;

    UNUSED(err);
    r->l = l;
    r->arg = arg;
    atomic_store(&r->started, true);
    return 0;
}

static void
fr_stop(struct leader_retrieval *lr)
{
    atomic_store(&((struct fake_retrieval *)lr)->started, false);
}

static void
fr_free(struct leader_retrieval *lr)
{
    UNUSED(lr); /* static */
}

static const struct leader_retrieval_ops fr_ops = { fr_start, fr_stop, fr_free };

/* A struct fake_retrieval's initializer. */
#define FAKE_RETRIEVAL_INIT            \
    {                                  \
        { &fr_ops }, NULL, NULL, false \
    }

#endif

/* Leader retrieval: how a component learns the address and session id of
 * another's current leader. The interface is here so that RPC users depend
 * on it alone; src/ha/ implements it (standalone now, ZooKeeper later). A
 * listener may be called on any thread (ZooKeeper's): it hands the news to
 * its endpoint with rpc_endpoint_run_async, as Flink's listeners do. */
#ifndef SPATE_RPC_LEADER_H
#define SPATE_RPC_LEADER_H

#include <spate/error.h>

#include "core/id.h"

struct leader_listener {
    /* address "host:port/endpoint" and its leader session id; NULL, NULL
     * when there is no leader any more. Both are borrowed for the call. */
    void (*notify_leader)(void *arg, const char *address, const spate_id *session_id);
    void (*handle_error)(void *arg, int code, const char *message);
};

struct leader_retrieval;

struct leader_retrieval_ops {
    int (*start)(struct leader_retrieval *lr, const struct leader_listener *l, void *arg,
                 spate_error *err);
    void (*stop)(struct leader_retrieval *lr);
    void (*free)(struct leader_retrieval *lr);
};

/* Implementations embed this first. */
struct leader_retrieval {
    const struct leader_retrieval_ops *ops;
};

static inline int
leader_retrieval_start(struct leader_retrieval *lr, const struct leader_listener *l, void *arg,
                       spate_error *err)
{
    return lr->ops->start(lr, l, arg, err);
}

static inline void
leader_retrieval_stop(struct leader_retrieval *lr)
{
    lr->ops->stop(lr);
}

static inline void
leader_retrieval_free(struct leader_retrieval *lr)
{
    if (lr != NULL)
        lr->ops->free(lr);
}

#endif

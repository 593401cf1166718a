/* Leader election: one per JobManager process (as Flink since 1.15), so
 * that its Dispatcher, ResourceManager, REST endpoint and JobMasters always
 * lead from the same process. The process is the one contender; once
 * granted, each component confirms its leadership by publishing its address
 * with the session id, which retrievers elsewhere watch. */
#ifndef SPATE_HA_LEADER_ELECTION_H
#define SPATE_HA_LEADER_ELECTION_H

/* Threads: the contender's callbacks run on any thread (ZooKeeper's: the HA
 * thread), one at a time, and hand the news to the endpoints with
 * rpc_endpoint_run_async. A new grant always brings a new session id, from
 * which the fencing tokens (ResourceManagerId, JobMasterIds) derive, so a
 * former leader's calls are rejected. Leadership is revoked as soon as the
 * connection to ZooKeeper is suspended, not only when the session expires. */

#include <stdbool.h>

#include <spate/error.h>

#include "core/id.h"

struct leader_contender {
    void (*grant)(void *arg, const spate_id *session_id);
    void (*revoke)(void *arg);
};

struct leader_election;

struct leader_election_ops {
    /* Starts contending; a grant follows when this process is the leader. */
    int (*start)(struct leader_election *le, const struct leader_contender *c, void *arg,
                 spate_error *err);
    /* Publishes component's address if session is still this process's
     * leadership (Flink's confirmLeadership); asynchronous, any thread. */
    void (*confirm)(struct leader_election *le, const char *component, const spate_id *session,
                    const char *address);
    /* Removes component's leader information (a job ended); asynchronous. */
    void (*withdraw)(struct leader_election *le, const char *component);
    bool (*has_leadership)(struct leader_election *le, const spate_id *session);
    /* Proves that session is still this process's leadership with a round
     * trip to the coordination service (ZooKeeper: this process's latch
     * node still exists in a live session), before a write that no fencing
     * token guards: a leader that was paused or cut off may not know yet
     * that it lost. Blocking (up to the session timeout): a worker thread
     * only. 0, or SPATE_ESTATE with why. */
    int (*verify)(struct leader_election *le, const spate_id *session, spate_error *err);
    /* Stops contending and gives leadership up; once it returns, the
     * contender is called no more. Not from a contender callback. */
    void (*stop)(struct leader_election *le);
};

struct leader_election {
    const struct leader_election_ops *ops;
};

static inline int
leader_election_start(struct leader_election *le, const struct leader_contender *c, void *arg,
                      spate_error *err)
{
    return le->ops->start(le, c, arg, err);
}

static inline void
leader_election_confirm(struct leader_election *le, const char *component, const spate_id *session,
                        const char *address)
{
    le->ops->confirm(le, component, session, address);
}

static inline void
leader_election_withdraw(struct leader_election *le, const char *component)
{
    le->ops->withdraw(le, component);
}

static inline bool
leader_election_has_leadership(struct leader_election *le, const spate_id *session)
{
    return le->ops->has_leadership(le, session);
}

static inline int
leader_election_verify(struct leader_election *le, const spate_id *session, spate_error *err)
{
    return le->ops->verify(le, session, err);
}

static inline void
leader_election_stop(struct leader_election *le)
{
    le->ops->stop(le);
}

#endif

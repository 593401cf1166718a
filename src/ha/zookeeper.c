/* ZooKeeper HA services (ha_services.h over coord.h's plugin): the
 * session, the JobManager's leader election (ephemeral sequential latch
 * nodes), leader retrieval with watches, publication of leader information.
 * Its own thread, "ha", does all of that; ZooKeeper's thread only queues.
 *
 * Leadership (tests/e2e/test_ha.py shows each rule): the process whose latch
 * node is lowest leads; the next one watches the node before its own. A
 * grant brings a fresh session id: the ResourceManagerId and the
 * JobMasterIds are that id (as in Flink), so a former leader's fenced calls
 * are rejected; the ResourceManager tells the TaskExecutors it drops its id,
 * so that they reject a former leader's disconnects. Leadership is revoked as
 * soon as the connection is suspended, before the session expires; after a
 * reconnection within the session the process contends again with its node
 * (a new session id), after an expiry with a new node. Garbage in a leader
 * node is ignored with a log line; a corrupt store entry is an error naming
 * it. An unreachable quorum at start is retried (connection-timeout per
 * attempt, retry-wait doubling between, max-retry-attempts), then the
 * process exits with an error naming the quorum. */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/list.h"
#include "core/log.h"
#include "core/util.h"
#include "ha/ha_int.h"

/* Threads: events (ZooKeeper's completion thread) and commands (any thread)
 * go into one queue, guarded by mu, that the HA thread drains; everything
 * marked "HA thread" below is touched by it alone. Listeners are called
 * from the HA thread through a guard (ha_int.h), never holding mu. Layout
 * under <root> = <path.root>/<cluster-id>, as Flink's:
 *   leader/latch/latch-<seq>                 one per contending JobManager
 *   leader/<component>/connection_info       ha.proto's LeaderInfo
 *   jobgraphs/<jobid>, jobs/<jobid>/...      the stores (stores_zk.c) */

struct zk_event {
    struct zk_event *next;
    int type; /* coord_event, or 0: a command */
    int state;
    char *path;
    void (*fn)(struct zk_ha *ha, void *arg);
    void (*drop)(void *arg); /* frees arg of a command that will not run */
    void *arg;
};

struct zk_retrieval {
    struct leader_retrieval base;
    struct zk_ha *ha;
    char *path; /* .../leader/<component>/connection_info */
    const struct leader_listener *l;
    void *arg;
    struct ha_guard guard;
    /* HA thread */
    struct list_node node;
    bool have_leader;
    spate_id session;
    char address[512];
};

struct zk_election {
    struct leader_election base;
    struct zk_ha *ha;
    const struct leader_contender *c;
    void *arg;
    struct ha_guard guard;
    /* HA thread */
    bool started;
    char node[512]; /* this process's latch node, "" when none */
    char standing_by_for[512];
    /* HA thread writes, has_leadership reads: under ha->mu */
    bool leader;
    spate_id session;
};

struct zk_ha {
    struct ha_services base;
    const struct coord_plugin *zk;
    struct coord_client *client;
    char *quorum, *root, *storage, *jrs_dir, *latch_dir;
    int64_t session_timeout_ms, connection_timeout_ms, retry_wait_ms;
    int64_t max_retries;

    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct zk_event *head, *tail; /* under mu */
    bool quit;                    /* under mu */
    int conn_state;               /* under mu: the last session state seen */

    /* HA thread */
    int state;
    struct list_node retrievals;
    int64_t retry_at_ms; /* 0: none; else re-check everything then */
    struct zk_election election;
};

static void zk_post(struct zk_ha *ha, struct zk_event *ev);

/* ---- accessors for stores_zk.c ---------------------------------------------------- */

const struct coord_plugin *
zk_ha_plugin(struct zk_ha *ha)
{
    return ha->zk;
}

struct coord_client *
zk_ha_client(struct zk_ha *ha)
{
    return ha->client;
}

const char *
zk_ha_root(struct zk_ha *ha)
{
    return ha->root;
}

const char *
zk_ha_storage(struct zk_ha *ha)
{
    return ha->storage;
}

int
zk_ha_ensure_path(struct zk_ha *ha, const char *path, spate_error *err)
{
    char *p = xstrdup(path);
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    int rc = 0;

    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;

            *s = '\0';
            rc = ha->zk->exists(ha->client, p, 0, errbuf, sizeof errbuf);
            if (rc == SPATE_ENOENT) {
                rc = ha->zk->create(ha->client, p, NULL, 0, 0, NULL, 0, errbuf, sizeof errbuf);
                if (rc == SPATE_EEXIST)
                    rc = 0;
            }
            if (rc != 0) {
                rc = spate_error_set(err, rc, "%s", errbuf);
                break;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    return rc;
}

/* ---- the queue ----------------------------------------------------------------------- */

static void
zk_post(struct zk_ha *ha, struct zk_event *ev)
{
    pthread_mutex_lock(&ha->mu);
    if (ha->quit) {
        pthread_mutex_unlock(&ha->mu);
        if (ev->drop != NULL)
            ev->drop(ev->arg);
        free(ev->path);
        free(ev);
        return;
    }
    ev->next = NULL;
    if (ha->tail != NULL)
        ha->tail->next = ev;
    else
        ha->head = ev;
    ha->tail = ev;
    pthread_cond_broadcast(&ha->cv);
    pthread_mutex_unlock(&ha->mu);
}

static void
zk_command(struct zk_ha *ha, void (*fn)(struct zk_ha *ha, void *arg), void (*drop)(void *arg),
           void *arg)
{
    struct zk_event *ev = xcalloc(1, sizeof *ev);

    ev->fn = fn;
    ev->drop = drop;
    ev->arg = arg;
    zk_post(ha, ev);
}

/* ZooKeeper's completion thread: queue, and keep the session state for
 * whoever waits for the first connection. */
static void
zk_on_event(void *arg, int event, int state, const char *path)
{
    struct zk_ha *ha = arg;
    struct zk_event *ev = xcalloc(1, sizeof *ev);

    if (event == COORD_EV_SESSION) {
        pthread_mutex_lock(&ha->mu);
        ha->conn_state = state;
        pthread_cond_broadcast(&ha->cv);
        pthread_mutex_unlock(&ha->mu);
    }
    ev->type = event;
    ev->state = state;
    ev->path = xstrdup(path);
    zk_post(ha, ev);
}

/* ---- retrieval (HA thread) ------------------------------------------------------------ */

static void
zr_notify(struct zk_retrieval *r, const char *address, const spate_id *session)
{
    if (!ha_guard_begin(&r->guard))
        return;
    r->l->notify_leader(r->arg, address, session);
    ha_guard_end(&r->guard);
}

static void
zr_lost(struct zk_retrieval *r)
{
    if (!r->have_leader)
        return;
    r->have_leader = false;
    r->address[0] = '\0';
    zr_notify(r, NULL, NULL);
}

static void
zr_retrieve(struct zk_ha *ha, struct zk_retrieval *r)
{
    char errbuf[SPATE_ERROR_MESSAGE_MAX], address[sizeof r->address];
    spate_error err = { 0 };
    uint8_t *data = NULL;
    size_t len = 0;
    spate_id session;
    int rc;

    if (ha->state != COORD_CONNECTED || r->l == NULL)
        return;
    for (int tries = 0; tries < 3; tries++) {
        rc = ha->zk->get(ha->client, r->path, 1, &data, &len, NULL, errbuf, sizeof errbuf);
        if (rc != SPATE_ENOENT)
            break;
        /* No leader yet: watch for the node's creation. */
        rc = ha->zk->exists(ha->client, r->path, 1, errbuf, sizeof errbuf);
        if (rc == SPATE_ENOENT) {
            zr_lost(r);
            return;
        }
    }
    if (rc != 0) {
        SPATE_LOG_DEBUG(HA_LOG, "cannot read leader information: %s", errbuf);
        return; /* read again once connected */
    }
    rc = ha_leader_info_decode(data, len, &session, address, sizeof address, &err);
    free(data);
    if (rc == SPATE_ENOENT) {
        zr_lost(r);
        return;
    }
    if (rc != 0) {
        SPATE_LOG_WARN(HA_LOG, "ignoring the leader information in znode '%s': %s", r->path,
                       err.message);
        return;
    }
    if (r->have_leader && id_equal(&session, &r->session) && strcmp(address, r->address) == 0)
        return;
    r->have_leader = true;
    r->session = session;
    snprintf(r->address, sizeof r->address, "%s", address);
    SPATE_LOG_INFO(HA_LOG, "leader of '%s': %s (session %s)", r->path, address, id_str(&session).s);
    zr_notify(r, r->address, &r->session);
}

static void
zr_add(struct zk_ha *ha, void *arg)
{
    struct zk_retrieval *r = arg;

    list_push_back(&ha->retrievals, &r->node);
    zr_retrieve(ha, r);
}

static void
zr_destroy(struct zk_retrieval *r)
{
    ha_guard_release(&r->guard);
    free(r->path);
    free(r);
}

/* A removal the HA thread did not get to (zk_free, after joining it). */
static void
zr_drop(void *arg)
{
    struct zk_retrieval *r = arg;

    if (list_linked(&r->node))
        list_remove(&r->node);
    zr_destroy(r);
}

static void
zr_remove(struct zk_ha *ha, void *arg)
{
    struct zk_retrieval *r = arg;

    UNUSED(ha);
    if (list_linked(&r->node))
        list_remove(&r->node);
    zr_destroy(r);
}

static int
zr_start(struct leader_retrieval *lr, const struct leader_listener *l, void *arg, spate_error *err)
{
    struct zk_retrieval *r = (struct zk_retrieval *)lr;

    UNUSED(err);
    r->l = l;
    r->arg = arg;
    zk_command(r->ha, zr_add, NULL, r);
    return 0;
}

static void
zr_stop(struct leader_retrieval *lr)
{
    ha_guard_stop(&((struct zk_retrieval *)lr)->guard);
}

static void
zr_free(struct leader_retrieval *lr)
{
    struct zk_retrieval *r = (struct zk_retrieval *)lr;
    struct zk_ha *ha = r->ha;
    bool direct;

    ha_guard_stop(&r->guard);
    pthread_mutex_lock(&ha->mu);
    direct = ha->quit;
    pthread_mutex_unlock(&ha->mu);
    if (direct)
        zr_destroy(r); /* the HA thread is gone and left the list */
    else
        zk_command(ha, zr_remove, zr_drop, r);
}

static const struct leader_retrieval_ops zr_ops = { zr_start, zr_stop, zr_free };

static struct leader_retrieval *
zk_retriever(struct zk_ha *ha, const char *component)
{
    struct zk_retrieval *r = xcalloc(1, sizeof *r);

    r->base.ops = &zr_ops;
    r->ha = ha;
    r->path = xasprintf("%s/leader/%s/connection_info", ha->root, component);
    ha_guard_init(&r->guard);
    list_init(&r->node);
    return &r->base;
}

static struct leader_retrieval *
zk_rm_retriever(struct ha_services *base)
{
    return zk_retriever((struct zk_ha *)base, HA_COMPONENT_RESOURCE_MANAGER);
}

static struct leader_retrieval *
zk_dispatcher_retriever(struct ha_services *base)
{
    return zk_retriever((struct zk_ha *)base, HA_COMPONENT_DISPATCHER);
}

static struct leader_retrieval *
zk_rest_retriever(struct ha_services *base)
{
    return zk_retriever((struct zk_ha *)base, HA_COMPONENT_REST_SERVER);
}

static struct leader_retrieval *
zk_job_master_retriever(struct ha_services *base, const spate_id *job, const char *default_address)
{
    UNUSED(default_address);
    return zk_retriever((struct zk_ha *)base, id_str(job).s);
}

/* ---- election (HA thread) ----------------------------------------------------------------- */

static uint64_t
ze_seq(const char *name)
{
    const char *dash = strrchr(name, '-');

    return dash ? strtoull(dash + 1, NULL, 10) : UINT64_MAX;
}

static void
ze_grant(struct zk_ha *ha, struct zk_election *e)
{
    spate_id session;

    id_random(&session);
    pthread_mutex_lock(&ha->mu);
    e->leader = true;
    e->session = session;
    pthread_mutex_unlock(&ha->mu);
    e->standing_by_for[0] = '\0';
    SPATE_LOG_INFO(HA_LOG, "this JobManager was granted leadership with session id %s (latch %s)",
                   id_str(&session).s, e->node);
    if (ha_guard_begin(&e->guard)) {
        e->c->grant(e->arg, &session);
        ha_guard_end(&e->guard);
    }
}

static void
ze_revoke(struct zk_ha *ha, struct zk_election *e, const char *why)
{
    if (!e->leader)
        return;
    pthread_mutex_lock(&ha->mu);
    e->leader = false;
    memset(&e->session, 0, sizeof e->session);
    pthread_mutex_unlock(&ha->mu);
    SPATE_LOG_WARN(HA_LOG, "leadership of this JobManager revoked: %s", why);
    if (ha_guard_begin(&e->guard)) {
        e->c->revoke(e->arg);
        ha_guard_end(&e->guard);
    }
}

static void
zk_retry_later(struct zk_ha *ha)
{
    ha->retry_at_ms = (int64_t)clock_mono_ms() + ha->retry_wait_ms;
}

static void
ze_check(struct zk_ha *ha)
{
    struct zk_election *e = &ha->election;
    char errbuf[SPATE_ERROR_MESSAGE_MAX], pred[512];
    spate_error err = { 0 };

    if (!e->started || ha->state != COORD_CONNECTED)
        return;
    for (int round = 0; round < 5; round++) {
        char **names = NULL;
        size_t n = 0;
        const char *mine;
        uint64_t my_seq, best = UINT64_MAX;
        bool found = false, lowest = true;
        int rc;

        if (e->node[0] == '\0') {
            char prefix[600];

            if (zk_ha_ensure_path(ha, ha->latch_dir, &err) != 0) {
                SPATE_LOG_WARN(HA_LOG, "cannot contend for leadership: %s", err.message);
                zk_retry_later(ha);
                return;
            }
            snprintf(prefix, sizeof prefix, "%s/latch-", ha->latch_dir);
            rc = ha->zk->create(ha->client, prefix, NULL, 0, COORD_EPHEMERAL | COORD_SEQUENTIAL,
                                e->node, sizeof e->node, errbuf, sizeof errbuf);
            if (rc != 0) {
                e->node[0] = '\0';
                SPATE_LOG_WARN(HA_LOG, "cannot contend for leadership: %s", errbuf);
                if (rc != SPATE_ECONNLOST)
                    zk_retry_later(ha);
                return;
            }
            SPATE_LOG_INFO(HA_LOG, "contending for leadership with latch node %s", e->node);
        }
        rc = ha->zk->children(ha->client, ha->latch_dir, 0, &names, &n, errbuf, sizeof errbuf);
        if (rc != 0) {
            SPATE_LOG_WARN(HA_LOG, "cannot list the leader latch: %s", errbuf);
            if (rc != SPATE_ECONNLOST)
                zk_retry_later(ha);
            return;
        }
        mine = strrchr(e->node, '/') + 1;
        my_seq = ze_seq(mine);
        pred[0] = '\0';
        for (size_t i = 0; i < n; i++) {
            uint64_t s = ze_seq(names[i]);

            if (strcmp(names[i], mine) == 0)
                found = true;
            else if (s < my_seq) {
                lowest = false;
                if (best == UINT64_MAX || s > best) {
                    best = s;
                    snprintf(pred, sizeof pred, "%s/%s", ha->latch_dir, names[i]);
                }
            }
        }
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
        if (!found) {
            /* Our node is gone (deleted by hand, or an old session's): anew. */
            ze_revoke(ha, e, "its latch node disappeared");
            e->node[0] = '\0';
            continue;
        }
        if (lowest) {
            if (!e->leader)
                ze_grant(ha, e);
            return;
        }
        ze_revoke(ha, e, "another JobManager's latch node comes first");
        /* Wait for the one before us to go. */
        rc = ha->zk->exists(ha->client, pred, 1, errbuf, sizeof errbuf);
        if (rc == SPATE_ENOENT)
            continue;
        if (rc != 0) {
            SPATE_LOG_WARN(HA_LOG, "cannot watch the leader latch: %s", errbuf);
            if (rc != SPATE_ECONNLOST)
                zk_retry_later(ha);
            return;
        }
        if (strcmp(e->standing_by_for, pred) != 0) {
            snprintf(e->standing_by_for, sizeof e->standing_by_for, "%s", pred);
            SPATE_LOG_INFO(HA_LOG, "standing by: latch node %s comes before ours (%s)", pred,
                           e->node);
        }
        return;
    }
}

static void
ze_start_cmd(struct zk_ha *ha, void *arg)
{
    UNUSED(arg);
    ha->election.started = true;
    ze_check(ha);
}

static int
ze_start(struct leader_election *le, const struct leader_contender *c, void *arg, spate_error *err)
{
    struct zk_election *e = (struct zk_election *)le;

    if (e->c != NULL)
        return spate_error_set(err, SPATE_ESTATE, "the leader election has started already");
    e->c = c;
    e->arg = arg;
    zk_command(e->ha, ze_start_cmd, NULL, NULL);
    return 0;
}

struct ze_confirm {
    char *component;
    spate_id session;
    char *address; /* NULL: withdraw */
};

static void
ze_confirm_cmd(struct zk_ha *ha, void *arg)
{
    struct ze_confirm *c = arg;
    struct zk_election *e = &ha->election;
    char *dir = xasprintf("%s/leader/%s", ha->root, c->component);
    char *path = xasprintf("%s/connection_info", dir);
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    spate_error err = { 0 };
    uint8_t *data;
    size_t len;
    int rc;

    if (ha->state != COORD_CONNECTED)
        goto out;
    if (c->address == NULL) {
        if (e->leader) {
            ha->zk->remove(ha->client, path, -1, errbuf, sizeof errbuf);
            ha->zk->remove(ha->client, dir, -1, errbuf, sizeof errbuf);
        }
        goto out;
    }
    if (!e->leader || !id_equal(&e->session, &c->session)) {
        SPATE_LOG_INFO(HA_LOG, "not publishing %s at %s: session %s is no longer the leader's",
                       c->component, c->address, id_str(&c->session).s);
        goto out;
    }
    if (zk_ha_ensure_path(ha, dir, &err) != 0) {
        SPATE_LOG_WARN(HA_LOG, "cannot publish the %s leader: %s", c->component, err.message);
        goto out;
    }
    data = ha_leader_info_encode(&c->session, c->address, &len);
    rc = ha->zk->check_and_put(ha->client, e->node, path, data, len, errbuf, sizeof errbuf);
    free(data);
    if (rc != 0)
        SPATE_LOG_WARN(HA_LOG, "cannot publish the %s leader: %s", c->component, errbuf);
    else
        SPATE_LOG_INFO(HA_LOG, "published %s leader %s (session %s)", c->component, c->address,
                       id_str(&c->session).s);
out:
    free(dir);
    free(path);
    free(c->component);
    free(c->address);
    free(c);
}

static void
ze_confirm_drop(void *arg)
{
    struct ze_confirm *c = arg;

    free(c->component);
    free(c->address);
    free(c);
}

static void
ze_confirm(struct leader_election *le, const char *component, const spate_id *session,
           const char *address)
{
    struct zk_election *e = (struct zk_election *)le;
    struct ze_confirm *c = xcalloc(1, sizeof *c);

    c->component = xstrdup(component);
    c->session = *session;
    c->address = xstrdup(address);
    zk_command(e->ha, ze_confirm_cmd, ze_confirm_drop, c);
}

static void
ze_withdraw(struct leader_election *le, const char *component)
{
    struct zk_election *e = (struct zk_election *)le;
    struct ze_confirm *c = xcalloc(1, sizeof *c);

    c->component = xstrdup(component);
    zk_command(e->ha, ze_confirm_cmd, ze_confirm_drop, c);
}

static bool
ze_has_leadership(struct leader_election *le, const spate_id *session)
{
    struct zk_election *e = (struct zk_election *)le;
    bool yes;

    pthread_mutex_lock(&e->ha->mu);
    yes = e->leader && id_equal(&e->session, session);
    pthread_mutex_unlock(&e->ha->mu);
    return yes;
}

/* leader_election_verify: the waiting thread and the HA thread share it;
 * the last one out frees it (the waiter may give up first). */
struct ze_verify {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    bool done;
    spate_id session;
    int rc;
    char why[SPATE_ERROR_MESSAGE_MAX];
};

static void
ze_verify_unref(struct ze_verify *v)
{
    bool last;

    pthread_mutex_lock(&v->mu);
    last = --v->refs == 0;
    pthread_mutex_unlock(&v->mu);
    if (last) {
        pthread_mutex_destroy(&v->mu);
        pthread_cond_destroy(&v->cv);
        free(v);
    }
}

static void
ze_verify_finish(struct ze_verify *v, int rc, const char *why)
{
    pthread_mutex_lock(&v->mu);
    v->rc = rc;
    snprintf(v->why, sizeof v->why, "%s", why);
    v->done = true;
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
    ze_verify_unref(v);
}

static void
ze_verify_drop(void *arg)
{
    ze_verify_finish(arg, SPATE_ESTATE, "the HA services are stopping");
}

/* HA thread: after every event queued before it (a revocation among them),
 * the latch node of the granted session asked for in a round trip: gone,
 * or the session gone, and leadership is over even if no event said so. */
static void
ze_verify_cmd(struct zk_ha *ha, void *arg)
{
    struct ze_verify *v = arg;
    struct zk_election *e = &ha->election;
    char errbuf[256], why[768];
    bool leader;

    pthread_mutex_lock(&ha->mu);
    leader = e->leader && id_equal(&e->session, &v->session);
    pthread_mutex_unlock(&ha->mu);
    if (!leader) {
        ze_verify_finish(v, SPATE_ESTATE, "leadership was revoked");
        return;
    }
    if (ha->state != COORD_CONNECTED || e->node[0] == '\0' ||
        ha->zk->exists(ha->client, e->node, 0, errbuf, sizeof errbuf) != 0) {
        snprintf(why, sizeof why, "ZooKeeper does not confirm latch node %.400s: %s", e->node,
                 ha->state != COORD_CONNECTED ? "not connected" : errbuf);
        ze_verify_finish(v, SPATE_ESTATE, why);
        return;
    }
    ze_verify_finish(v, 0, "");
}

static int
ze_verify(struct leader_election *le, const spate_id *session, spate_error *err)
{
    struct zk_election *e = (struct zk_election *)le;
    struct ze_verify *v = xcalloc(1, sizeof *v);
    struct timespec until;
    int rc;

    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    v->refs = 2;
    v->session = *session;
    zk_command(e->ha, ze_verify_cmd, ze_verify_drop, v);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (e->ha->session_timeout_ms + e->ha->connection_timeout_ms) / 1000 + 1;
    pthread_mutex_lock(&v->mu);
    while (!v->done && pthread_cond_timedwait(&v->cv, &v->mu, &until) == 0)
        ;
    rc = v->done ? v->rc : SPATE_ESTATE;
    if (rc != 0)
        spate_error_set(err, SPATE_ESTATE, "leadership session %s not confirmed: %s",
                        id_str(session).s, v->done ? v->why : "ZooKeeper did not answer in time");
    pthread_mutex_unlock(&v->mu);
    ze_verify_unref(v);
    return rc;
}

static void
ze_stop_cmd(struct zk_ha *ha, void *arg)
{
    struct zk_election *e = &ha->election;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];

    UNUSED(arg);
    e->started = false;
    pthread_mutex_lock(&ha->mu);
    e->leader = false;
    pthread_mutex_unlock(&ha->mu);
    if (e->node[0] != '\0' && ha->state == COORD_CONNECTED)
        ha->zk->remove(ha->client, e->node, -1, errbuf, sizeof errbuf);
    e->node[0] = '\0';
}

static void
ze_stop(struct leader_election *le)
{
    struct zk_election *e = (struct zk_election *)le;

    ha_guard_stop(&e->guard);
    zk_command(e->ha, ze_stop_cmd, NULL, NULL);
}

static const struct leader_election_ops ze_ops = { ze_start,          ze_confirm, ze_withdraw,
                                                   ze_has_leadership, ze_verify,  ze_stop };

/* ---- the session (HA thread) ---------------------------------------------------------------- */

static void
zk_refresh_all(struct zk_ha *ha)
{
    struct list_node *n, *tmp;

    ze_check(ha);
    list_for_each_safe(n, tmp, &ha->retrievals)
        zr_retrieve(ha, list_entry(n, struct zk_retrieval, node));
}

static void
zk_all_lost(struct zk_ha *ha, const char *why)
{
    struct list_node *n;

    ze_revoke(ha, &ha->election, why);
    list_for_each(n, &ha->retrievals) zr_lost(list_entry(n, struct zk_retrieval, node));
}

static void
zk_on_state(struct zk_ha *ha, int state)
{
    int prev = ha->state;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];

    ha->state = state;
    if (state == COORD_CONNECTED && prev != COORD_CONNECTED) {
        SPATE_LOG_INFO(HA_LOG,
                       "connected to ZooKeeper %s: session 0x%" PRIx64
                       ", session timeout %d ms (asked %lld ms)",
                       ha->quorum, (uint64_t)ha->zk->session_id(ha->client),
                       ha->zk->session_timeout_ms(ha->client), (long long)ha->session_timeout_ms);
        zk_refresh_all(ha);
    } else if (state == COORD_CONNECTING && prev == COORD_CONNECTED) {
        SPATE_LOG_WARN(HA_LOG,
                       "connection to ZooKeeper %s suspended: leaders are unknown until it "
                       "is back",
                       ha->quorum);
        zk_all_lost(ha, "the connection to ZooKeeper was suspended");
    } else if (state == COORD_EXPIRED) {
        SPATE_LOG_WARN(HA_LOG, "ZooKeeper session expired: starting a new one with %s", ha->quorum);
        zk_all_lost(ha, "the ZooKeeper session expired");
        ha->election.node[0] = '\0';
        if (ha->zk->reconnect(ha->client, errbuf, sizeof errbuf) != 0) {
            SPATE_LOG_ERROR(HA_LOG, "%s", errbuf);
            zk_retry_later(ha);
        }
        ha->state = COORD_CONNECTING;
    } else if (state == COORD_AUTH_FAILED) {
        SPATE_LOG_ERROR(HA_LOG, "ZooKeeper %s refused authentication", ha->quorum);
    }
}

static void
zk_on_watch(struct zk_ha *ha, const struct zk_event *ev)
{
    struct list_node *n, *tmp;
    size_t dl = strlen(ha->latch_dir);

    if (strncmp(ev->path, ha->latch_dir, dl) == 0 && ev->path[dl] == '/') {
        ze_check(ha);
        return;
    }
    list_for_each_safe(n, tmp, &ha->retrievals)
    {
        struct zk_retrieval *r = list_entry(n, struct zk_retrieval, node);

        if (strcmp(r->path, ev->path) == 0)
            zr_retrieve(ha, r);
    }
}

static void *
zk_thread_main(void *arg)
{
    struct zk_ha *ha = arg;

    log_set_thread_name("ha");
    for (;;) {
        struct zk_event *ev;

        pthread_mutex_lock(&ha->mu);
        while (ha->head == NULL && !ha->quit) {
            if (ha->retry_at_ms != 0) {
                int64_t now = (int64_t)clock_mono_ms();
                struct timespec ts;
                int64_t wake;

                if (now >= ha->retry_at_ms)
                    break;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                wake = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + (ha->retry_at_ms - now);
                ts.tv_sec = wake / 1000;
                ts.tv_nsec = (wake % 1000) * 1000000;
                pthread_cond_timedwait(&ha->cv, &ha->mu, &ts);
            } else {
                pthread_cond_wait(&ha->cv, &ha->mu);
            }
        }
        if (ha->quit) {
            pthread_mutex_unlock(&ha->mu);
            break;
        }
        ev = ha->head;
        if (ev != NULL) {
            ha->head = ev->next;
            if (ha->head == NULL)
                ha->tail = NULL;
        }
        pthread_mutex_unlock(&ha->mu);
        if (ev == NULL) {
            ha->retry_at_ms = 0;
            zk_refresh_all(ha);
            continue;
        }
        if (ev->type == 0)
            ev->fn(ha, ev->arg);
        else if (ev->type == COORD_EV_SESSION)
            zk_on_state(ha, ev->state);
        else if (ev->type != COORD_EV_NOT_WATCHING)
            zk_on_watch(ha, ev);
        free(ev->path);
        free(ev);
    }
    return NULL;
}

/* ---- the services ------------------------------------------------------------------------------ */

static struct leader_election *
zk_election(struct ha_services *base)
{
    return &((struct zk_ha *)base)->election.base;
}

static int
zk_jgs(struct ha_services *base, struct job_graph_store **out, spate_error *err)
{
    return zk_job_graph_store_new((struct zk_ha *)base, out, err);
}

static int
zk_jrs(struct ha_services *base, struct job_result_store **out, spate_error *err)
{
    struct zk_ha *ha = (struct zk_ha *)base;

    if (ha->jrs_dir == NULL)
        return spate_error_set(err, SPATE_ECONFIG,
                               "high-availability.storageDir (or job-result-store.storage-path) "
                               "must be set for high-availability.type zookeeper");
    return ha_file_job_result_store_new(ha->jrs_dir, out, err);
}

static int
zk_ccs(struct ha_services *base, const spate_id *job, uint32_t max_retained,
       struct completed_checkpoint_store **out, spate_error *err)
{
    return zk_checkpoint_store_new((struct zk_ha *)base, job, max_retained, out, err);
}

static int
zk_counter(struct ha_services *base, const spate_id *job, struct checkpoint_id_counter **out,
           spate_error *err)
{
    return zk_checkpoint_id_counter_new((struct zk_ha *)base, job, out, err);
}

static int64_t
zk_session_timeout(struct ha_services *base)
{
    struct zk_ha *ha = (struct zk_ha *)base;

    return ha->zk->session_timeout_ms(ha->client);
}

/* <storageDir>/<cluster-id>/blob, as Flink's FileSystemBlobStore. */
static int
zk_blob_store_dir(struct ha_services *base, char **out, spate_error *err)
{
    struct zk_ha *ha = (struct zk_ha *)base;

    *out = NULL;
    if (ha->storage == NULL)
        return spate_error_set(err, SPATE_ECONFIG,
                               "high-availability.storageDir must be set for "
                               "high-availability.type zookeeper (the HA blob store)");
    *out = xasprintf("%s/blob", ha->storage);
    return 0;
}

static void
zk_free(struct ha_services *base)
{
    struct zk_ha *ha = (struct zk_ha *)base;
    struct zk_event *ev;

    ha_guard_stop(&ha->election.guard);
    pthread_mutex_lock(&ha->mu);
    ha->quit = true;
    pthread_cond_broadcast(&ha->cv);
    pthread_mutex_unlock(&ha->mu);
    if (ha->thread_started)
        pthread_join(ha->thread, NULL);
    /* Closing the session deletes the latch node at once: a standby takes
     * over without waiting for the session timeout. */
    if (ha->client != NULL)
        ha->zk->close(ha->client);
    while ((ev = ha->head) != NULL) {
        ha->head = ev->next;
        if (ev->drop != NULL)
            ev->drop(ev->arg);
        free(ev->path);
        free(ev);
    }
    while (!list_empty(&ha->retrievals))
        list_remove(ha->retrievals.next); /* their owners free them */
    ha_guard_release(&ha->election.guard);
    pthread_mutex_destroy(&ha->mu);
    pthread_cond_destroy(&ha->cv);
    free(ha->quorum);
    free(ha->root);
    free(ha->storage);
    free(ha->jrs_dir);
    free(ha->latch_dir);
    free(ha);
}

static const struct ha_services_ops zk_ops = {
    .resource_manager_retriever = zk_rm_retriever,
    .dispatcher_retriever = zk_dispatcher_retriever,
    .job_master_retriever = zk_job_master_retriever,
    .rest_retriever = zk_rest_retriever,
    .election = zk_election,
    .job_graph_store = zk_jgs,
    .job_result_store = zk_jrs,
    .checkpoint_store = zk_ccs,
    .checkpoint_id_counter = zk_counter,
    .session_timeout_ms = zk_session_timeout,
    .blob_store_dir = zk_blob_store_dir,
    .free = zk_free,
};

/* "/flink" + "/default" -> "/flink/default"; slashes doubled or missing fixed. */
static char *
zk_join_path(const char *a, const char *b)
{
    char *out = xmalloc(strlen(a) + strlen(b) + 3);
    char *o = out;

    for (const char *parts[2] = { a, b }, **p = parts; p < parts + 2; p++) {
        const char *s = *p;

        while (*s == '/')
            s++;
        if (*s == '\0')
            continue;
        *o++ = '/';
        while (*s) {
            if (!(*s == '/' && (s[1] == '/' || s[1] == '\0')))
                *o++ = *s;
            s++;
        }
    }
    if (o == out)
        *o++ = '/';
    *o = '\0';
    return out;
}

/* Waits for the first connection: connection-timeout per attempt, then
 * retry-wait (doubling) between attempts, max-retry-attempts retries. */
static int
zk_wait_connected(struct zk_ha *ha, spate_error *err)
{
    int64_t wait = ha->retry_wait_ms, started = (int64_t)clock_mono_ms();

    for (int64_t attempt = 0;; attempt++) {
        int64_t deadline = (int64_t)clock_mono_ms() + ha->connection_timeout_ms;
        bool connected;

        pthread_mutex_lock(&ha->mu);
        while (ha->conn_state != COORD_CONNECTED && (int64_t)clock_mono_ms() < deadline) {
            struct timespec ts;
            int64_t left = deadline - (int64_t)clock_mono_ms();

            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_sec += left / 1000;
            ts.tv_nsec += (left % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&ha->cv, &ha->mu, &ts);
        }
        connected = ha->conn_state == COORD_CONNECTED;
        pthread_mutex_unlock(&ha->mu);
        if (connected)
            return 0;
        if (attempt >= ha->max_retries)
            return spate_error_set(
                err, SPATE_ETIMEDOUT,
                "cannot connect to the ZooKeeper quorum '%s' (high-availability.zookeeper.quorum): "
                "no answer in %lld attempts over %lld ms; is ZooKeeper running there?",
                ha->quorum, (long long)attempt + 1, (long long)clock_mono_ms() - started);
        SPATE_LOG_ERROR(HA_LOG,
                        "cannot connect to the ZooKeeper quorum '%s' within %lld ms "
                        "(high-availability.zookeeper.client.connection-timeout), attempt %lld of "
                        "%lld: retrying in %lld ms",
                        ha->quorum, (long long)ha->connection_timeout_ms, (long long)attempt + 1,
                        (long long)ha->max_retries + 1, (long long)wait);
        {
            struct timespec ts = { (time_t)(wait / 1000), (long)(wait % 1000) * 1000000 };

            nanosleep(&ts, NULL);
        }
        wait *= 2;
    }
}

/* An option without a default: NULL when unset. */
static int
zk_opt_string(const struct config *conf, const struct config_option *opt, const char **out,
              spate_error *err)
{
    *out = NULL;
    if (!config_is_set(conf, opt))
        return 0;
    return config_get_string(conf, opt, out, err);
}

int
ha_zookeeper_new(const struct config *conf, struct ha_services **out, spate_error *err)
{
    const struct coord_plugin *zk;
    const char *quorum = NULL, *proot, *cluster, *storage = NULL, *jrs = NULL;
    struct zk_ha *ha;
    char errbuf[SPATE_ERROR_MESSAGE_MAX];
    int rc;

    if ((rc = zk_opt_string(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_QUORUM), &quorum, err)) != 0)
        return rc;
    if (quorum == NULL || *quorum == '\0')
        return spate_error_set(err, SPATE_ECONFIG,
                               "high-availability.type is zookeeper but no quorum is set: set "
                               "high-availability.zookeeper.quorum (host:port,...)");
    ha = xcalloc(1, sizeof *ha);
    if ((rc = config_get_string(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_PATH_ROOT), &proot, err)) !=
            0 ||
        (rc = config_get_string(conf, CFG(HIGH_AVAILABILITY_CLUSTER_ID), &cluster, err)) != 0 ||
        (rc = zk_opt_string(conf, CFG(HIGH_AVAILABILITY_STORAGE_DIR), &storage, err)) != 0 ||
        (rc = zk_opt_string(conf, CFG(JOB_RESULT_STORE_STORAGE_PATH), &jrs, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_SESSION_TIMEOUT),
                                     &ha->session_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_CONNECTION_TIMEOUT),
                                     &ha->connection_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_RETRY_WAIT),
                                     &ha->retry_wait_ms, err)) != 0 ||
        (rc = config_get_int(conf, CFG(HIGH_AVAILABILITY_ZOOKEEPER_MAX_RETRY_ATTEMPTS),
                             &ha->max_retries, err)) != 0 ||
        (rc = ha_plugin_load_zookeeper(&zk, err)) != 0) {
        free(ha);
        return rc;
    }
    ha->base.ops = &zk_ops;
    ha->zk = zk;
    ha->quorum = xstrdup(quorum);
    {
        char *r = zk_join_path(proot, cluster);
        char *id = zk_join_path("", cluster);

        ha->root = r;
        ha->latch_dir = xasprintf("%s/leader/latch", r);
        if (storage != NULL && *storage != '\0')
            ha->storage = xasprintf("%s%s", storage, id);
        if (jrs != NULL && *jrs != '\0')
            ha->jrs_dir = xstrdup(jrs);
        else if (storage != NULL && *storage != '\0')
            ha->jrs_dir = xasprintf("%s/job-result-store%s", storage, id);
        free(id);
    }
    list_init(&ha->retrievals);
    pthread_mutex_init(&ha->mu, NULL);
    {
        pthread_condattr_t ca;

        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&ha->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    ha->election.base.ops = &ze_ops;
    ha->election.ha = ha;
    ha_guard_init(&ha->election.guard);
    ha->state = COORD_CONNECTING;
    ha->conn_state = COORD_CONNECTING;
    rc = zk->connect(ha->quorum, (int)ha->session_timeout_ms, zk_on_event, ha, NULL, &ha->client,
                     errbuf, sizeof errbuf);
    if (rc != 0) {
        spate_error_set(err, rc, "%s", errbuf);
        goto fail;
    }
    if (pthread_create(&ha->thread, NULL, zk_thread_main, ha) != 0) {
        rc = spate_error_set(err, SPATE_EAGAIN, "cannot start the HA thread");
        goto fail;
    }
    ha->thread_started = true;
    SPATE_LOG_INFO(HA_LOG, "connecting to ZooKeeper %s (root %s, session timeout %lld ms)",
                   ha->quorum, ha->root, (long long)ha->session_timeout_ms);
    if ((rc = zk_wait_connected(ha, err)) != 0)
        goto fail;
    *out = &ha->base;
    return 0;
fail:
    zk_free(&ha->base);
    return rc;
}

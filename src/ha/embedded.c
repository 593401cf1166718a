/* Embedded high availability (Flink's EmbeddedHaServices), for the mini
 * cluster: every leader lives in this process. The election grants at once
 * with a fresh session id; what the leaders confirm is kept here and told to
 * the retrievers of that component; the stores are in memory. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/list.h"
#include "ha/ha_int.h"

/* Threads: any. mu guards the leaders, the retrievers list and the
 * election; listeners are called without it, each retriever held by a
 * reference and its guard for the call. */

struct emb_ha;

struct emb_retrieval {
    struct leader_retrieval base;
    struct emb_ha *ha;
    char *component;
    const struct leader_listener *l;
    void *arg;
    struct ha_guard guard;
    struct list_node node; /* under ha->mu */
    _Atomic int refs;      /* the owner's and each call in flight */
};

struct emb_leader {
    char *component;
    char *address;
    spate_id session;
};

struct emb_election {
    struct leader_election base;
    struct emb_ha *ha;
    bool started;
    spate_id session;
};

struct emb_ha {
    struct ha_services base;
    pthread_mutex_t mu;
    struct list_node retrievals;
    struct emb_leader *leaders;
    size_t n, cap;
    struct emb_election election;
};

static void
er_unref(struct emb_retrieval *r)
{
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) {
        ha_guard_release(&r->guard);
        free(r->component);
        free(r);
    }
}

static void
er_notify(struct emb_retrieval *r, const char *address, const spate_id *session)
{
    if (ha_guard_begin(&r->guard)) {
        r->l->notify_leader(r->arg, address, session);
        ha_guard_end(&r->guard);
    }
    er_unref(r);
}

static struct emb_leader *
eh_find(struct emb_ha *ha, const char *component)
{
    for (size_t i = 0; i < ha->n; i++)
        if (strcmp(ha->leaders[i].component, component) == 0)
            return &ha->leaders[i];
    return NULL;
}

static int
er_start(struct leader_retrieval *lr, const struct leader_listener *l, void *arg, spate_error *err)
{
    struct emb_retrieval *r = (struct emb_retrieval *)lr;
    struct emb_ha *ha = r->ha;
    struct emb_leader *e;
    char *address = NULL;
    spate_id session;

    (void)err;
    r->l = l;
    r->arg = arg;
    pthread_mutex_lock(&ha->mu);
    list_push_back(&ha->retrievals, &r->node);
    if ((e = eh_find(ha, r->component)) != NULL) {
        address = xstrdup(e->address);
        session = e->session;
        atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&ha->mu);
    if (address != NULL) {
        er_notify(r, address, &session);
        free(address);
    }
    return 0;
}

static void
er_stop(struct leader_retrieval *lr)
{
    ha_guard_stop(&((struct emb_retrieval *)lr)->guard);
}

static void
er_free(struct leader_retrieval *lr)
{
    struct emb_retrieval *r = (struct emb_retrieval *)lr;

    ha_guard_stop(&r->guard);
    pthread_mutex_lock(&r->ha->mu);
    if (list_linked(&r->node))
        list_remove(&r->node);
    pthread_mutex_unlock(&r->ha->mu);
    er_unref(r);
}

static const struct leader_retrieval_ops er_ops = { er_start, er_stop, er_free };

static struct leader_retrieval *
eh_retriever(struct emb_ha *ha, const char *component)
{
    struct emb_retrieval *r = xcalloc(1, sizeof *r);

    r->base.ops = &er_ops;
    r->ha = ha;
    r->component = xstrdup(component);
    ha_guard_init(&r->guard);
    list_init(&r->node);
    atomic_init(&r->refs, 1);
    return &r->base;
}

static struct leader_retrieval *
eh_rm(struct ha_services *base)
{
    return eh_retriever((struct emb_ha *)base, HA_COMPONENT_RESOURCE_MANAGER);
}

static struct leader_retrieval *
eh_dispatcher(struct ha_services *base)
{
    return eh_retriever((struct emb_ha *)base, HA_COMPONENT_DISPATCHER);
}

static struct leader_retrieval *
eh_rest(struct ha_services *base)
{
    return eh_retriever((struct emb_ha *)base, HA_COMPONENT_REST_SERVER);
}

static struct leader_retrieval *
eh_job_master(struct ha_services *base, const spate_id *job, const char *default_address)
{
    (void)default_address;
    return eh_retriever((struct emb_ha *)base, id_str(job).s);
}

/* Sets (address != NULL) or removes a component's leader and tells its
 * retrievers. */
static void
eh_publish(struct emb_ha *ha, const char *component, const spate_id *session, const char *address)
{
    struct emb_retrieval **targets = NULL;
    size_t nt = 0, cap = 0;
    struct emb_leader *e;
    struct list_node *n;
    spate_id s = { { 0 } };

    pthread_mutex_lock(&ha->mu);
    if (address != NULL && (!ha->election.started || !id_equal(&ha->election.session, session))) {
        pthread_mutex_unlock(&ha->mu);
        return;
    }
    e = eh_find(ha, component);
    if (address != NULL) {
        if (e == NULL) {
            xgrow((void **)&ha->leaders, &ha->cap, ha->n + 1, sizeof *ha->leaders);
            e = &ha->leaders[ha->n++];
            e->component = xstrdup(component);
            e->address = NULL;
        }
        free(e->address);
        e->address = xstrdup(address);
        e->session = *session;
        s = *session;
    } else if (e != NULL) {
        free(e->component);
        free(e->address);
        *e = ha->leaders[--ha->n];
    }
    list_for_each(n, &ha->retrievals)
    {
        struct emb_retrieval *r = list_entry(n, struct emb_retrieval, node);

        if (strcmp(r->component, component) != 0)
            continue;
        xgrow((void **)&targets, &cap, nt + 1, sizeof *targets);
        atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed);
        targets[nt++] = r;
    }
    pthread_mutex_unlock(&ha->mu);
    for (size_t i = 0; i < nt; i++)
        er_notify(targets[i], address, address ? &s : NULL);
    free(targets);
}

static int
ee_start(struct leader_election *le, const struct leader_contender *c, void *arg, spate_error *err)
{
    struct emb_election *e = (struct emb_election *)le;
    spate_id session;

    pthread_mutex_lock(&e->ha->mu);
    if (e->started) {
        pthread_mutex_unlock(&e->ha->mu);
        return spate_error_set(err, SPATE_ESTATE, "the leader election has started already");
    }
    e->started = true;
    id_random(&e->session);
    session = e->session;
    pthread_mutex_unlock(&e->ha->mu);
    c->grant(arg, &session);
    return 0;
}

static void
ee_confirm(struct leader_election *le, const char *component, const spate_id *session,
           const char *address)
{
    struct emb_election *e = (struct emb_election *)le;

    eh_publish(e->ha, component, session, address);
}

static void
ee_withdraw(struct leader_election *le, const char *component)
{
    struct emb_election *e = (struct emb_election *)le;

    eh_publish(e->ha, component, NULL, NULL);
}

static bool
ee_has_leadership(struct leader_election *le, const spate_id *session)
{
    struct emb_election *e = (struct emb_election *)le;
    bool yes;

    pthread_mutex_lock(&e->ha->mu);
    yes = e->started && id_equal(&e->session, session);
    pthread_mutex_unlock(&e->ha->mu);
    return yes;
}

/* Nothing to ask: leadership here is this process's own. */
static int
ee_verify(struct leader_election *le, const spate_id *session, spate_error *err)
{
    if (ee_has_leadership(le, session))
        return 0;
    return spate_error_set(err, SPATE_ESTATE, "leadership session %s is over", id_str(session).s);
}

static void
ee_stop(struct leader_election *le)
{
    struct emb_election *e = (struct emb_election *)le;

    pthread_mutex_lock(&e->ha->mu);
    e->started = false;
    pthread_mutex_unlock(&e->ha->mu);
}

static const struct leader_election_ops ee_ops = { ee_start,          ee_confirm, ee_withdraw,
                                                   ee_has_leadership, ee_verify,  ee_stop };

static struct leader_election *
eh_election(struct ha_services *base)
{
    return &((struct emb_ha *)base)->election.base;
}

static void
eh_free(struct ha_services *base)
{
    struct emb_ha *ha = (struct emb_ha *)base;

    for (size_t i = 0; i < ha->n; i++) {
        free(ha->leaders[i].component);
        free(ha->leaders[i].address);
    }
    free(ha->leaders);
    while (!list_empty(&ha->retrievals))
        list_remove(ha->retrievals.next); /* their owners free them */
    pthread_mutex_destroy(&ha->mu);
    free(ha);
}

static const struct ha_services_ops eh_ops = {
    .resource_manager_retriever = eh_rm,
    .dispatcher_retriever = eh_dispatcher,
    .job_master_retriever = eh_job_master,
    .rest_retriever = eh_rest,
    .election = eh_election,
    .job_graph_store = ha_memory_services_job_graph_store,
    .job_result_store = ha_memory_services_job_result_store,
    .checkpoint_store = ha_memory_services_checkpoint_store,
    .checkpoint_id_counter = ha_memory_services_checkpoint_id_counter,
    .session_timeout_ms = ha_memory_services_no_session,
    .blob_store_dir = ha_memory_services_no_blob_store,
    .free = eh_free,
};

struct ha_services *
ha_embedded_new(void)
{
    struct emb_ha *ha = xcalloc(1, sizeof *ha);

    ha->base.ops = &eh_ops;
    pthread_mutex_init(&ha->mu, NULL);
    list_init(&ha->retrievals);
    ha->election.base.ops = &ee_ops;
    ha->election.ha = ha;
    return &ha->base;
}

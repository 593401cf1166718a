/* Standalone high availability (ha_services.h): fixed leader addresses from
 * the configuration, session ids zero; an election that grants at once with
 * a fresh session id; in-memory stores. A retriever tells its listener at
 * start; the listener hands it to its endpoint (rpc_endpoint_run_async). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ha/ha_int.h"
#include "ha/ha_services.h"
#include "rpc/gateways.h"

struct standalone_retrieval {
    struct leader_retrieval base;
    char *address;
};

static int
sr_start(struct leader_retrieval *lr, const struct leader_listener *l, void *arg, spate_error *err)
{
    struct standalone_retrieval *sr = (struct standalone_retrieval *)lr;
    spate_id zero;

    (void)err;
    memset(&zero, 0, sizeof zero);
    l->notify_leader(arg, sr->address, &zero);
    return 0;
}

static void
sr_stop(struct leader_retrieval *lr)
{
    (void)lr;
}

static void
sr_free(struct leader_retrieval *lr)
{
    struct standalone_retrieval *sr = (struct standalone_retrieval *)lr;

    free(sr->address);
    free(sr);
}

static const struct leader_retrieval_ops sr_ops = { sr_start, sr_stop, sr_free };

struct leader_retrieval *
ha_standalone_retrieval_new(const char *address)
{
    struct standalone_retrieval *sr = xcalloc(1, sizeof *sr);

    sr->base.ops = &sr_ops;
    sr->address = xstrdup(address);
    return &sr->base;
}

/* The election: this process is the leader as soon as it asks. */
struct standalone_election {
    struct leader_election base;
    spate_id session;
    bool started;
};

static int
se_start(struct leader_election *le, const struct leader_contender *c, void *arg, spate_error *err)
{
    struct standalone_election *e = (struct standalone_election *)le;

    if (e->started)
        return spate_error_set(err, SPATE_ESTATE, "the leader election has started already");
    e->started = true;
    id_random(&e->session);
    c->grant(arg, &e->session);
    return 0;
}

static void
se_confirm(struct leader_election *le, const char *component, const spate_id *session,
           const char *address)
{
    (void)le;
    (void)component;
    (void)session;
    (void)address; /* retrievers know the configured addresses */
}

static void
se_withdraw(struct leader_election *le, const char *component)
{
    (void)le;
    (void)component;
}

static bool
se_has_leadership(struct leader_election *le, const spate_id *session)
{
    struct standalone_election *e = (struct standalone_election *)le;

    return e->started && id_equal(&e->session, session);
}

/* Nothing to ask: leadership here is this process's own. */
static int
se_verify(struct leader_election *le, const spate_id *session, spate_error *err)
{
    if (se_has_leadership(le, session))
        return 0;
    return spate_error_set(err, SPATE_ESTATE, "leadership session %s is over", id_str(session).s);
}

static void
se_stop(struct leader_election *le)
{
    ((struct standalone_election *)le)->started = false;
}

static const struct leader_election_ops se_ops = { se_start,          se_confirm, se_withdraw,
                                                   se_has_leadership, se_verify,  se_stop };

struct standalone_ha {
    struct ha_services base;
    char *jobmanager_rpc;
    char *rest_url;
    struct standalone_election election;
};

static struct leader_retrieval *
sh_endpoint(struct ha_services *ha, const char *name)
{
    struct standalone_ha *sh = (struct standalone_ha *)ha;
    char addr[512];

    snprintf(addr, sizeof addr, "%s/%s", sh->jobmanager_rpc, name);
    return ha_standalone_retrieval_new(addr);
}

static struct leader_retrieval *
sh_rm(struct ha_services *ha)
{
    return sh_endpoint(ha, RPC_ENDPOINT_RESOURCE_MANAGER);
}

static struct leader_retrieval *
sh_dispatcher(struct ha_services *ha)
{
    return sh_endpoint(ha, RPC_ENDPOINT_DISPATCHER);
}

static struct leader_retrieval *
sh_job_master(struct ha_services *ha, const spate_id *job, const char *default_address)
{
    (void)ha;
    (void)job;
    return ha_standalone_retrieval_new(default_address);
}

static struct leader_retrieval *
sh_rest(struct ha_services *ha)
{
    struct standalone_ha *sh = (struct standalone_ha *)ha;

    return ha_standalone_retrieval_new(sh->rest_url);
}

static struct leader_election *
sh_election(struct ha_services *ha)
{
    return &((struct standalone_ha *)ha)->election.base;
}

static void
sh_free(struct ha_services *ha)
{
    struct standalone_ha *sh = (struct standalone_ha *)ha;

    free(sh->jobmanager_rpc);
    free(sh->rest_url);
    free(sh);
}

static const struct ha_services_ops sh_ops = {
    .resource_manager_retriever = sh_rm,
    .dispatcher_retriever = sh_dispatcher,
    .job_master_retriever = sh_job_master,
    .rest_retriever = sh_rest,
    .election = sh_election,
    .job_graph_store = ha_memory_services_job_graph_store,
    .job_result_store = ha_memory_services_job_result_store,
    .checkpoint_store = ha_memory_services_checkpoint_store,
    .checkpoint_id_counter = ha_memory_services_checkpoint_id_counter,
    .session_timeout_ms = ha_memory_services_no_session,
    .blob_store_dir = ha_memory_services_no_blob_store,
    .free = sh_free,
};

struct ha_services *
ha_standalone_new(const char *jobmanager_rpc, const char *rest_url)
{
    struct standalone_ha *sh = xcalloc(1, sizeof *sh);

    sh->base.ops = &sh_ops;
    sh->jobmanager_rpc = xstrdup(jobmanager_rpc);
    sh->rest_url = xstrdup(rest_url ? rest_url : "http://127.0.0.1:8081");
    sh->election.base.ops = &se_ops;
    return &sh->base;
}

/* The REST URL clients use without HA: rest.address and rest.port. */
static void
sh_rest_url(const struct config *conf, char *out, size_t size)
{
    const char *host = "127.0.0.1";
    int64_t port = 8081;

    config_get_string(conf, CFG(REST_ADDRESS), &host, NULL);
    config_get_int(conf, CFG(REST_PORT), &port, NULL);
    if (host == NULL || strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    snprintf(out, size, "http://%s:%lld", host, (long long)port);
}

int
ha_services_new(const struct config *conf, const char *jobmanager_rpc, struct ha_services **out,
                spate_error *err)
{
    const char *host;
    int64_t port;
    int type, rc;
    char rpc[300], rest[300];

    if ((rc = config_get_enum(conf, CFG(HIGH_AVAILABILITY_TYPE), &type, err)) != 0)
        return rc;
    if (type == 1) {
        *out = ha_embedded_new();
        return 0;
    }
    if (type == 2)
        return ha_zookeeper_new(conf, out, err);
    sh_rest_url(conf, rest, sizeof rest);
    if (jobmanager_rpc != NULL) {
        *out = ha_standalone_new(jobmanager_rpc, rest);
        return 0;
    }
    if ((rc = config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &host, err)) != 0 ||
        (rc = config_get_int(conf, CFG(JOBMANAGER_RPC_PORT), &port, err)) != 0)
        return rc;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    snprintf(rpc, sizeof rpc, "%s:%lld", host, (long long)port);
    *out = ha_standalone_new(rpc, rest);
    return 0;
}

int
ha_services_from_config(const struct config *conf, struct ha_services **out, spate_error *err)
{
    return ha_services_new(conf, NULL, out, err);
}

void
ha_services_free(struct ha_services *ha)
{
    if (ha != NULL)
        ha->ops->free(ha);
}

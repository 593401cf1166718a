/* Standalone high availability (ha_services.h): fixed leader addresses from
 * the configuration, session ids zero. A retriever tells its listener at
 * start; the listener hands it to its endpoint (rpc_endpoint_run_async). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
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

struct standalone_ha {
    struct ha_services base;
    char *jobmanager_rpc;
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

static void
sh_free(struct ha_services *ha)
{
    struct standalone_ha *sh = (struct standalone_ha *)ha;

    free(sh->jobmanager_rpc);
    free(sh);
}

static const struct ha_services_ops sh_ops = { sh_rm, sh_dispatcher, sh_job_master, sh_free };

struct ha_services *
ha_standalone_new(const char *jobmanager_rpc)
{
    struct standalone_ha *sh = xcalloc(1, sizeof *sh);

    sh->base.ops = &sh_ops;
    sh->jobmanager_rpc = xstrdup(jobmanager_rpc);
    return &sh->base;
}

int
ha_services_from_config(const struct config *conf, struct ha_services **out, spate_error *err)
{
    const char *host;
    int64_t port;
    int type, rc;
    char rpc[300];

    if ((rc = config_get_enum(conf, CFG(HIGH_AVAILABILITY_TYPE), &type, err)) != 0)
        return rc;
    if (type != 0)
        return spate_error_set(err, SPATE_ENOTSUP,
                               "high-availability.type other than 'none' is not supported yet");
    if ((rc = config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &host, err)) != 0 ||
        (rc = config_get_int(conf, CFG(JOBMANAGER_RPC_PORT), &port, err)) != 0)
        return rc;
    if (strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    snprintf(rpc, sizeof rpc, "%s:%lld", host, (long long)port);
    *out = ha_standalone_new(rpc);
    return 0;
}

void
ha_services_free(struct ha_services *ha)
{
    if (ha != NULL)
        ha->ops->free(ha);
}

/* submit_job: the test-only way to run a job library on a running cluster
 * until `spate run` submits over REST (issue 7): builds the JobGraph with
 * the plan-only executor, as the JobManager's REST handler will, and hands
 * it to the Dispatcher's submit_job over RPC. Prints the job id.
 *
 *   submit_job HOST:PORT JOB.so [ARGS...]
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/config.h"
#include "rpc/gateways.h"
#include "rpc/service.h"
#include "streaming/plan_executor.h"

int
main(int argc, char **argv)
{
    struct rpc_service_options ro = { 0 };
    Cluster__JobSubmission sub = CLUSTER__JOB_SUBMISSION__INIT;
    struct plan_result plan = { 0 };
    struct config *conf = config_new();
    struct rpc_service *svc = NULL;
    struct rpc_gateway *gw = NULL;
    struct rpc_future *f = NULL;
    spate_error err = { 0 };
    char addr[300], path[PATH_MAX];
    int status = 1;
    spate_id id;

    if (argc < 3) {
        fprintf(stderr, "usage: submit_job HOST:PORT JOB.so [ARGS...]\n");
        return 2;
    }
    if (realpath(argv[2], path) == NULL) {
        fprintf(stderr, "submit_job: cannot find '%s'\n", argv[2]);
        return 1;
    }
    if (plan_from_library(path, conf, 0, argc - 2, argv + 2, &plan, &err) != 0)
        goto out;
    snprintf(addr, sizeof addr, "%s/%s", argv[1], RPC_ENDPOINT_DISPATCHER);
    ro.thread_name = "rpc";
    if (rpc_service_new(&ro, &svc, &err) != 0 || rpc_service_start(svc, &err) != 0 ||
        rpc_gateway_new(svc, addr, NULL, &gw, &err) != 0)
        goto out;
    sub.job_graph.data = plan.graph;
    sub.job_graph.len = plan.graph_len;
    sub.library_path = path;
    f = dispatcher_submit_job(gw, &sub, 0);
    if (rpc_future_wait(f, -1, &err) != 0)
        goto out;
    gw_id_get(&((Cluster__JobId *)rpc_future_value(f))->job_id, &id);
    printf("%s\n", id_str(&id).s);
    status = 0;
out:
    if (status != 0)
        fprintf(stderr, "submit_job: %s\n", err.message);
    rpc_future_unref(f);
    rpc_gateway_free(gw);
    rpc_service_free(svc);
    plan_result_release(&plan);
    config_free(conf);
    return status;
}

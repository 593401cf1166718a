/* Diagnostics over REST, in Flink's JSON: thread dumps of the JobManager
 * and of a TaskManager (every thread's name and native stack: the seeds'
 * RequestStackTrace), a TaskManager's log files and one of them (the seeds'
 * RequestTaskManagerLog), asked of its TaskExecutor by RPC. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/thread_dump.h"
#include "rest/rest_int.h"

static json_t *
thread_info_json(const char *name, const char *text)
{
    return json_pack("{s:s, s:s}", "threadName", name, "stringifiedThreadInfo", text);
}

/* GET /jobmanager/thread-dump (ThreadDumpInfo). */
static enum MHD_Result
rest_jm_thread_dump(struct rest_request *rq)
{
    struct thread_stack *t;
    spate_error err = { 0 };
    json_t *infos;
    size_t n;

    if (thread_dump_collect(&t, &n, &err) != 0)
        return rest_error(rq->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "%s", err.message);
    infos = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(infos, thread_info_json(t[i].name, t[i].text));
    thread_dump_free(t, n);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "threadInfos", infos));
}

/* A gateway to the TaskExecutor of :taskmanagerid (params[0]) at the
 * address the ResourceManager knows; NULL after answering 404 into *ret. */
static struct rpc_gateway *
rest_te_gateway(struct rest_request *rq, enum MHD_Result *ret)
{
    Cluster__TaskManagerQuery q = CLUSTER__TASK_MANAGER_QUERY__INIT;
    const Cluster__TaskManagerInfos *infos;
    struct rpc_gateway *gw = NULL;
    spate_error err = { 0 };
    struct rpc_future *f;
    spate_id id;

    if (id_parse(rq->params[0], &id, NULL) != 0) {
        *ret =
            rest_error(rq->c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", rq->params[0]);
        return NULL;
    }
    q.resource_id = gw_id_bytes(&id);
    if ((f = rest_ask(rq->c, rm_request_task_managers(rq->rs->rm, &q, REST_ASK_MS), ret)) == NULL)
        return NULL;
    infos = rpc_future_value(f);
    if (infos->n_taskmanagers == 0)
        *ret =
            rest_error(rq->c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", rq->params[0]);
    else if (rpc_gateway_new(rq->rs->svc, infos->taskmanagers[0]->address, NULL, &gw, &err) != 0)
        *ret = rest_error(rq->c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", err.message);
    rpc_future_unref(f);
    return gw;
}

/* GET /taskmanagers/:taskmanagerid/thread-dump (ThreadDumpInfo). */
static enum MHD_Result
rest_tm_thread_dump(struct rest_request *rq)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    const Cluster__ThreadDump *d;
    struct rpc_gateway *gw;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *infos;

    if ((gw = rest_te_gateway(rq, &ret)) == NULL)
        return ret;
    f = rest_ask(rq->c, te_request_thread_dump(gw, &ack, REST_ASK_MS), &ret);
    rpc_gateway_free(gw);
    if (f == NULL)
        return ret;
    d = rpc_future_value(f);
    infos = json_array();
    for (size_t i = 0; i < d->n_threads; i++)
        json_array_append_new(infos, thread_info_json(d->threads[i]->name, d->threads[i]->text));
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "threadInfos", infos));
}

/* GET /taskmanagers/:taskmanagerid/logs (LogListInfo). */
static enum MHD_Result
rest_tm_logs(struct rest_request *rq)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    const Cluster__LogList *l;
    struct rpc_gateway *gw;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *logs;

    if ((gw = rest_te_gateway(rq, &ret)) == NULL)
        return ret;
    f = rest_ask(rq->c, te_request_log_list(gw, &ack, REST_ASK_MS), &ret);
    rpc_gateway_free(gw);
    if (f == NULL)
        return ret;
    l = rpc_future_value(f);
    logs = json_array();
    for (size_t i = 0; i < l->n_logs; i++)
        json_array_append_new(logs, json_pack("{s:s, s:I, s:I}", "name", l->logs[i]->name, "size",
                                              (json_int_t)l->logs[i]->size, "mtime",
                                              (json_int_t)l->logs[i]->mtime));
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "logs", logs));
}

/* GET /taskmanagers/:taskmanagerid/logs/:filename: the file as text (its
 * last 8 MB, what an RPC frame carries). */
static enum MHD_Result
rest_tm_log_file(struct rest_request *rq)
{
    Cluster__LogFileRequest req = CLUSTER__LOG_FILE_REQUEST__INIT;
    const Cluster__LogFile *lf;
    struct rpc_gateway *gw;
    enum MHD_Result ret;
    struct rpc_future *f;
    char *text;

    if ((gw = rest_te_gateway(rq, &ret)) == NULL)
        return ret;
    req.name = rq->params[1];
    req.max_bytes = 8u << 20;
    f = rest_ask(rq->c, te_request_log_file(gw, &req, REST_ASK_MS), &ret);
    rpc_gateway_free(gw);
    if (f == NULL)
        return ret;
    lf = rpc_future_value(f);
    text = xmalloc(lf->data.len + 1);
    memcpy(text, lf->data.data, lf->data.len);
    ret = rest_send_text(rq->c, MHD_HTTP_OK, text, lf->data.len);
    rpc_future_unref(f);
    return ret;
}

const struct rest_route rest_diagnostics_routes[] = {
    { "GET", "/jobmanager/thread-dump", rest_jm_thread_dump, REST_BODY_NONE, 0 },
    { "GET", "/taskmanagers/:taskmanagerid/thread-dump", rest_tm_thread_dump, REST_BODY_NONE, 0 },
    { "GET", "/taskmanagers/:taskmanagerid/logs", rest_tm_logs, REST_BODY_NONE, 0 },
    { "GET", "/taskmanagers/:taskmanagerid/logs/:filename", rest_tm_log_file, REST_BODY_NONE, 0 },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};

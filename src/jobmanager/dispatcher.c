/* The Dispatcher (dispatcher.h). */
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/job_status.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/dispatcher.h"
#include "jobmanager/job_vertices.h"
#include "rpc/gateways.h"
#include "checkpoint/checkpoint_storage.h"
#include "streaming/job_graph_codec.h"

/* The kind of the job graph store's records. */
#define DISP_KIND_JOB_GRAPH "job-graph"

#define DISP_LOG "dispatcher"

struct disp_job {
    struct hmap_node node;
    spate_id job_id;
    struct job_master *jm;         /* NULL once archived */
    Cluster__JobDetails *archived; /* what the archive keeps (unpacked) */
    uint64_t archived_seq;         /* archive order: the oldest goes first */
    uint8_t library_key[SHA256_BYTES];
    bool holds_blob;   /* a reference on the library's blob, dropped with the entry */
    uint8_t *vertices; /* the archived Cluster__JobVertices, packed */
    size_t vertices_len;
    Ckstats__CheckpointingStats *checkpoints; /* archived: its last statistics */
    Ckstats__TriggerStatuses *triggers;       /* archived: its checkpoint and savepoint triggers */
    bool persisted;                           /* in the job graph store: cleaned up when it ends */
};

struct dispatcher {
    struct rpc_endpoint ep;
    struct dispatcher_options o;
    struct hmap jobs;
    size_t narchived;
    uint64_t archive_seq;
    struct rpc_gateway *rm; /* in-process */
    bool shutting_down;
    /* high availability: leadership and the stores jobs are recovered from */
    bool leader;
    spate_id session;
    struct leader_election *le;
    struct job_graph_store *jgs;
    struct job_result_store *jrs;
    /* Recoveries of the stored jobs in flight, and the submissions that came
     * meanwhile: they are stored only once the recovery has listed the
     * store, or it would start them too (Flink's Dispatcher serves once its
     * leader process has recovered the jobs). */
    int recovering;
    struct list_node held; /* struct disp_persist */
    /* Savepoint disposals (Flink's operation cache), newest last. */
    struct list_node disposals;
    int ndisposals;
};

#define DISP_DISPOSALS_KEPT 100 /* finished disposals remembered */

struct disp_disposal {
    struct list_node node;
    struct dispatcher *d;
    spate_id trigger_id;
    char *path;
    bool done;
    int rc;
    spate_error err;
};

/* High availability, at the end of this file. */
static void disp_job_ended(struct dispatcher *d, struct disp_job *j);
static bool disp_check_leader(struct dispatcher *d, struct rpc_call *call);
static void disp_publish_job_master(struct dispatcher *d, struct disp_job *j);
static void disp_persist(struct dispatcher *d, const spate_id *job_id, const char *kind,
                         const ProtobufCMessage *msg, const uint8_t *library_key,
                         struct rpc_call *call);
static int disp_open_stores(struct dispatcher *d, spate_error *err);
static void disp_release_held(struct dispatcher *d, const char *why);

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct dispatcher *
disp_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct dispatcher, ep);
}

static struct disp_job *
disp_find(struct dispatcher *d, const spate_id *job)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(job), &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);

        if (id_equal(&j->job_id, job))
            return j;
    }
    return NULL;
}

/* Frees an entry that is out of the table: its archive and blob reference. */
static void
disp_job_free(struct dispatcher *d, struct disp_job *j)
{
    if (j->archived != NULL)
        cluster__job_details__free_unpacked(j->archived, NULL);
    if (j->holds_blob && d->o.blobs != NULL)
        blob_server_unref(d->o.blobs, j->library_key);
    free(j->vertices);
    if (j->checkpoints != NULL)
        ckstats__checkpointing_stats__free_unpacked(j->checkpoints, NULL);
    if (j->triggers != NULL)
        ckstats__trigger_statuses__free_unpacked(j->triggers, NULL);
    free(j);
}

static void
disp_job_info(struct disp_job *j, Cluster__JobInfo *info)
{
    if (j->jm != NULL) {
        job_master_info(j->jm, info);
    } else {
        *info = *j->archived->info;
        info->job_id = gw_id_bytes(&j->job_id);
    }
}

/* The vertices of a job whose JobMaster goes, packed. */
static void
disp_archive_vertices(struct disp_job *j, struct job_master *jm)
{
    const struct execution_graph *eg = job_master_execution_graph(jm);
    Cluster__JobVertices v;

    if (job_vertices_build(eg, NULL, &v) != 0)
        return;
    j->vertices_len = cluster__job_vertices__get_packed_size(&v);
    j->vertices = xmalloc(j->vertices_len + 1);
    cluster__job_vertices__pack(&v, j->vertices);
    job_vertices_release(&v);
}

/* Keeps the archive within jobstore.max-capacity: the oldest entries go,
 * and with them their libraries' blobs (when no other job uses them). */
static void
disp_trim_archive(struct dispatcher *d)
{
    while (d->narchived > d->o.archive_capacity) {
        struct disp_job *oldest = NULL;
        struct hmap_node *n;

        HMAP_FOR_EACH(n, &d->jobs)
        {
            struct disp_job *j = container_of(n, struct disp_job, node);

            if (j->jm == NULL && (oldest == NULL || j->archived_seq < oldest->archived_seq))
                oldest = j;
        }
        SPATE_ASSERT(oldest != NULL);
        SPATE_LOG_INFO(DISP_LOG, "job %s leaves the archive (jobstore.max-capacity %zu)",
                       id_str(&oldest->job_id).s, d->o.archive_capacity);
        hmap_remove(&d->jobs, &oldest->node);
        d->narchived--;
        disp_job_free(d, oldest);
    }
}

/* A JobMaster's job ended: archive what REST shows of it, stop the
 * JobMaster, record the result (HA). */
static void
disp_on_terminal(void *arg, struct job_master *jm)
{
    struct dispatcher *d = arg;
    struct hmap_node *n;

    HMAP_FOR_EACH(n, &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);
        uint8_t *packed;
        size_t len;

        if (j->jm != jm)
            continue;
        job_master_details_pack(jm, &packed, &len);
        j->archived = cluster__job_details__unpack(NULL, len, packed);
        free(packed);
        SPATE_ASSERT(j->archived != NULL && j->archived->info != NULL);
        j->archived_seq = ++d->archive_seq;
        disp_archive_vertices(j, jm);
        j->checkpoints = job_master_checkpoint_stats(jm, 0);
        j->triggers = job_master_trigger_statuses(jm);
        j->jm = NULL;
        d->narchived++;
        rpc_future_unref(job_master_stop(jm));
        disp_job_ended(d, j);
        disp_trim_archive(d);
        return;
    }
}

/* Starts j's JobMaster with o (the job's own fields set), under this
 * leadership and the Dispatcher's settings; j is freed when it cannot. */
static struct disp_job *
disp_launch(struct dispatcher *d, struct disp_job *j, struct job_master_options *o,
            spate_error *err)
{
    o->job_id = j->job_id;
    o->job_master_id = d->session; /* the leadership's: fences off former leaders */
    o->slot_request_timeout_ms = d->o.slot_request_timeout_ms;
    o->heartbeat = d->o.heartbeat;
    o->registration = d->o.registration;
    o->ha = d->o.ha;
    o->leader_election = d->le;
    o->cluster_conf = d->o.conf;
    o->metrics = d->o.metrics;
    o->host = d->o.host;
    o->on_terminal = disp_on_terminal;
    o->arg = d;
    hmap_insert(&d->jobs, &j->node, id_hash(&j->job_id));
    if (job_master_start(d->ep.svc, o, &j->jm, err) != 0) {
        hmap_remove(&d->jobs, &j->node);
        disp_job_free(d, j);
        return NULL;
    }
    disp_publish_job_master(d, j);
    return j;
}

/* Starts a submitted JobGraph's JobMaster (a new submission or a recovered
 * one); job_id is the JobGraph's. */
static struct disp_job *
disp_start_job(struct dispatcher *d, const spate_id *job_id, const Cluster__JobSubmission *req,
               spate_error *err)
{
    struct job_master_options o = { 0 };
    char library_path[PATH_MAX];
    struct disp_job *j;

    if (d->o.blobs == NULL) {
        spate_error_set(err, SPATE_ESTATE, "this Dispatcher has no BlobServer");
        return NULL;
    }
    if (req->library_key.len != SHA256_BYTES && req->library_key.len != 0) {
        spate_error_set(err, SPATE_EINVAL,
                        "a job submission needs its library's 32-byte key, or none (a job of "
                        "built-in operators only, as SQL's)");
        return NULL;
    }
    j = xcalloc(1, sizeof *j);
    if (req->library_key.len == SHA256_BYTES) {
        memcpy(j->library_key, req->library_key.data, SHA256_BYTES);
        /* A recovered job's library may be in the HA blob store only: the
         * first fetch restores it. */
        if (blob_server_ref_job(d->o.blobs, job_id, j->library_key, err) != 0) {
            free(j);
            spate_error_wrap(err, "job library not uploaded");
            return NULL;
        }
        j->holds_blob = true;
        o.library_key = j->library_key;
        /* The JobMaster loads it when the job has sources of its own
         * (their split enumerators run there). */
        if (blob_server_local_path(d->o.blobs, j->library_key, library_path, sizeof library_path,
                                   err) == 0)
            o.library_path = library_path;
        memset(err, 0, sizeof *err);
    }
    j->job_id = *job_id;
    o.graph = req->job_graph.data;
    o.graph_len = req->job_graph.len;
    o.blob_server = blob_server_address(d->o.blobs);
    if (disp_launch(d, j, &o, err) == NULL)
        return NULL;
    SPATE_LOG_INFO(DISP_LOG, "submitted job %s (%s)", id_str(job_id).s, job_master_name(j->jm));
    return j;
}

/* A client's JobGraph: stored (with HA), then a JobMaster runs it. */
static void
dh_submit_job(struct rpc_endpoint *ep, const Cluster__JobSubmission *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Cluster__JobId reply = CLUSTER__JOB_ID__INIT;
    spate_error err = { 0 };
    struct disp_job *j;
    spate_id job_id;

    if (d->shutting_down) {
        rpc_call_fail(call, SPATE_ESTATE, "the cluster is shutting down");
        return;
    }
    if (!disp_check_leader(d, call))
        return;
    if (job_graph_peek_id(req->job_graph.data, req->job_graph.len, &job_id, &err) != 0) {
        SPATE_LOG_WARN(DISP_LOG, "job submission refused: %s", err.message);
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    if (disp_find(d, &job_id) != NULL) {
        rpc_call_fail(call, SPATE_EEXIST, "job %s was submitted already", id_str(&job_id).s);
        return;
    }
    if (req->library_key.len != SHA256_BYTES && req->library_key.len != 0) {
        rpc_call_fail(call, SPATE_EINVAL,
                      "a job submission needs its library's 32-byte key, or none (a job of "
                      "built-in operators only, as SQL's)");
        return;
    }
    if (d->jgs != NULL) {
        /* The library goes to the HA blob store, then the graph to the job
         * graph store; the job runs once both are stored. */
        disp_persist(d, &job_id, DISP_KIND_JOB_GRAPH, &req->base,
                     req->library_key.len ? req->library_key.data : NULL, call);
        return;
    }
    if ((j = disp_start_job(d, &job_id, req, &err)) == NULL) {
        SPATE_LOG_WARN(DISP_LOG, "job submission refused: %s", err.message);
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    reply.job_id = gw_id_bytes(&j->job_id);
    rpc_call_reply(call, &reply.base);
}

static void
dh_request_jobs(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Cluster__JobsOverview out = CLUSTER__JOBS_OVERVIEW__INIT;
    size_t n = 0, cap = hmap_count(&d->jobs);
    Cluster__JobInfo *infos = xcalloc(cap ? cap : 1, sizeof *infos);
    Cluster__JobInfo **ptrs = xcalloc(cap ? cap : 1, sizeof *ptrs);
    struct hmap_node *node;

    UNUSED(req);
    if (!disp_check_leader(d, call)) {
        free(infos);
        free(ptrs);
        return;
    }
    HMAP_FOR_EACH(node, &d->jobs)
    {
        disp_job_info(container_of(node, struct disp_job, node), &infos[n]);
        ptrs[n] = &infos[n];
        n++;
    }
    out.n_jobs = n;
    out.jobs = ptrs;
    rpc_call_reply(call, &out.base);
    free(infos);
    free(ptrs);
}

/* The job a request names (at the leader), or NULL once the call has failed. */
static struct disp_job *
disp_lookup(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    struct disp_job *j;
    spate_id job;

    if (!disp_check_leader(disp_of(ep), call))
        return NULL;
    if (!gw_id_get(&req->job_id, &job)) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed job id");
        return NULL;
    }
    if ((j = disp_find(disp_of(ep), &job)) == NULL)
        rpc_call_fail(call, SPATE_ENOENT, "job %s not found", id_str(&job).s);
    return j;
}

static void
dh_request_job(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    Cluster__JobInfo info;
    struct disp_job *j;

    if ((j = disp_lookup(ep, req, call)) == NULL)
        return;
    disp_job_info(j, &info);
    rpc_call_reply(call, &info.base);
}

/* The vertices the REST API shows: from the ExecutionGraph of a running
 * job, from the archive of a finished one. */
static void
dh_request_job_vertices(struct rpc_endpoint *ep, const Cluster__JobVertexQuery *req,
                        struct rpc_call *call)
{
    Cluster__JobVertices out = CLUSTER__JOB_VERTICES__INIT, *archived;
    const struct execution_graph *eg;
    spate_id job, vertex;
    bool one = req->vertex_id.len > 0;
    struct disp_job *j;

    if (!disp_check_leader(disp_of(ep), call))
        return;
    if (!gw_id_get(&req->job_id, &job) || (one && !gw_id_get(&req->vertex_id, &vertex))) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed job or vertex id");
        return;
    }
    if ((j = disp_find(disp_of(ep), &job)) == NULL) {
        rpc_call_fail(call, SPATE_ENOENT, "job %s not found", id_str(&job).s);
        return;
    }
    if (j->jm != NULL) {
        eg = job_master_execution_graph(j->jm);
        if (job_vertices_build(eg, one ? &vertex : NULL, &out) != 0) {
            rpc_call_fail(call, SPATE_ENOENT, "vertex %s of job %s not found", id_str(&vertex).s,
                          id_str(&job).s);
            return;
        }
        rpc_call_reply(call, &out.base);
        job_vertices_release(&out);
        return;
    }
    archived = j->vertices != NULL
                   ? cluster__job_vertices__unpack(NULL, j->vertices_len, j->vertices)
                   : NULL;
    if (archived != NULL && !one) {
        out.vertices = archived->vertices;
        out.n_vertices = archived->n_vertices;
    }
    for (size_t v = 0; archived != NULL && one && v < archived->n_vertices; v++) {
        spate_id id;

        if (gw_id_get(&archived->vertices[v]->vertex_id, &id) && id_equal(&id, &vertex)) {
            out.vertices = &archived->vertices[v];
            out.n_vertices = 1;
            break;
        }
    }
    if (one && out.n_vertices == 0)
        rpc_call_fail(call, SPATE_ENOENT, "vertex %s of job %s not found", id_str(&vertex).s,
                      id_str(&job).s);
    else
        rpc_call_reply(call, &out.base);
    if (archived != NULL)
        cluster__job_vertices__free_unpacked(archived, NULL);
}

static void
dh_request_job_details(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    struct disp_job *j;

    if ((j = disp_lookup(ep, req, call)) == NULL)
        return;
    if (j->jm != NULL) {
        Cluster__JobDetails *live;
        uint8_t *packed;
        size_t len;

        job_master_details_pack(j->jm, &packed, &len);
        live = cluster__job_details__unpack(NULL, len, packed);
        free(packed);
        rpc_call_reply(call, &live->base);
        cluster__job_details__free_unpacked(live, NULL);
        return;
    }
    rpc_call_reply(call, &j->archived->base);
}

/* ---- checkpoints (REST's /jobs/:jobid/checkpoints...) ---------------------------------- */

static struct disp_job *
disp_lookup_bytes(struct rpc_endpoint *ep, ProtobufCBinaryData job_id, struct rpc_call *call)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;

    req.job_id = job_id;
    return disp_lookup(ep, &req, call);
}

static void
dh_request_checkpoint_stats(struct rpc_endpoint *ep, const Ckstats__StatsRequest *req,
                            struct rpc_call *call)
{
    Ckstats__CheckpointingStats *s, view;
    Ckstats__CheckpointStats **one = NULL;
    struct disp_job *j;

    if ((j = disp_lookup_bytes(ep, req->job_id, call)) == NULL)
        return;
    if (j->jm != NULL) {
        s = job_master_checkpoint_stats(j->jm, req->checkpoint_id);
        rpc_call_reply(call, &s->base);
        ckstats__checkpointing_stats__free_unpacked(s, NULL);
        return;
    }
    if (j->checkpoints == NULL) {
        rpc_call_fail(call, SPATE_ENOENT, "no checkpoint statistics of job %s",
                      id_str(&j->job_id).s);
        return;
    }
    /* The archive's, with the history cut to the checkpoint asked for. */
    view = *j->checkpoints;
    if (req->checkpoint_id > 0) {
        one = xcalloc(1, sizeof *one);
        view.n_history = 0;
        view.history = one;
        for (size_t i = 0; i < j->checkpoints->n_history; i++)
            if (j->checkpoints->history[i]->id == req->checkpoint_id)
                one[view.n_history++] = j->checkpoints->history[i];
    }
    rpc_call_reply(call, &view.base);
    free(one);
}

/* The running job a trigger request is for, and its trigger id (the
 * client's, or a new one); NULL after failing the call. */
static struct disp_job *
disp_trigger_job(struct rpc_endpoint *ep, ProtobufCBinaryData job_id,
                 ProtobufCBinaryData trigger_id, spate_id *trigger, struct rpc_call *call)
{
    struct disp_job *j;

    if ((j = disp_lookup_bytes(ep, job_id, call)) == NULL)
        return NULL;
    if (trigger_id.len == 0) {
        id_random(trigger);
    } else if (!gw_id_get(&trigger_id, trigger)) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed trigger id");
        return NULL;
    }
    if (j->jm == NULL) {
        rpc_call_fail(call, SPATE_ESTATE, "job %s has ended", id_str(&j->job_id).s);
        return NULL;
    }
    return j;
}

static void
dh_trigger_checkpoint(struct rpc_endpoint *ep, const Ckstats__TriggerRequest *req,
                      struct rpc_call *call)
{
    Ckstats__TriggerReply reply = CKSTATS__TRIGGER_REPLY__INIT;
    spate_error err = { 0 };
    struct disp_job *j;
    spate_id trigger;

    if ((j = disp_trigger_job(ep, req->job_id, req->trigger_id, &trigger, call)) == NULL)
        return;
    if (job_master_trigger_checkpoint(j->jm, &trigger, &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    reply.trigger_id = gw_id_bytes(&trigger);
    rpc_call_reply(call, &reply.base);
}

static void
dh_checkpoint_trigger_status(struct rpc_endpoint *ep, const Ckstats__TriggerStatusRequest *req,
                             struct rpc_call *call)
{
    Ckstats__TriggerStatus status;
    spate_error err = { 0 };
    struct disp_job *j;
    spate_id trigger;

    if ((j = disp_lookup_bytes(ep, req->job_id, call)) == NULL)
        return;
    if (!gw_id_get(&req->trigger_id, &trigger)) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed trigger id");
        return;
    }
    if (j->jm == NULL) {
        /* The archive's: a stop's savepoint is looked at after the job
         * finished. */
        for (size_t i = 0; j->triggers != NULL && i < j->triggers->n_statuses; i++) {
            const Ckstats__TriggerStatus *st = j->triggers->statuses[i];
            spate_id t;

            if (gw_id_get(&st->trigger_id, &t) && id_equal(&t, &trigger)) {
                rpc_call_reply(call, &st->base);
                return;
            }
        }
        rpc_call_fail(call, SPATE_ENOENT, "job %s has ended; no trigger %s was made of it",
                      id_str(&j->job_id).s, id_str(&trigger).s);
        return;
    }
    if (job_master_checkpoint_status(j->jm, &trigger, &status, &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    rpc_call_reply(call, &status.base);
}

static void
dh_trigger_savepoint(struct rpc_endpoint *ep, const Ckstats__SavepointRequest *req,
                     struct rpc_call *call)
{
    Ckstats__TriggerReply reply = CKSTATS__TRIGGER_REPLY__INIT;
    spate_error err = { 0 };
    struct disp_job *j;
    spate_id trigger;
    enum job_savepoint_mode mode;

    if ((j = disp_trigger_job(ep, req->job_id, req->trigger_id, &trigger, call)) == NULL)
        return;
    mode = req->mode == CKSTATS__SAVEPOINT_MODE__SAVEPOINT_STOP     ? JOB_SAVEPOINT_STOP
           : req->mode == CKSTATS__SAVEPOINT_MODE__SAVEPOINT_CANCEL ? JOB_SAVEPOINT_CANCEL
                                                                    : JOB_SAVEPOINT_ONLY;
    if (job_master_trigger_savepoint(j->jm, &trigger, req->target_directory, mode, req->drain,
                                     &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    reply.trigger_id = gw_id_bytes(&trigger);
    rpc_call_reply(call, &reply.base);
}

/* ---- savepoint disposal (POST /savepoint-disposal) ------------------------------------ */

static void
disp_disposal_work(void *arg)
{
    struct disp_disposal *x = arg;

    x->rc = checkpoint_storage_dispose_savepoint(x->path, &x->err);
}

static void
disp_disposal_done(void *arg)
{
    struct disp_disposal *x = arg;

    x->done = true;
    if (x->rc != 0)
        SPATE_LOG_WARN(DISP_LOG, "cannot dispose of savepoint '%s': %s", x->path, x->err.message);
    else
        SPATE_LOG_INFO(DISP_LOG, "disposed of savepoint '%s'", x->path);
}

static void
disp_disposal_free(struct disp_disposal *x)
{
    free(x->path);
    free(x);
}

static void
dh_dispose_savepoint(struct rpc_endpoint *ep, const Ckstats__DisposeRequest *req,
                     struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Ckstats__TriggerReply reply = CKSTATS__TRIGGER_REPLY__INIT;
    struct disp_disposal *x;
    struct list_node *n, *tmp;
    spate_error err = { 0 };
    char *path;

    if (checkpoint_storage_path(req->path, NULL, &path, &err) != 0) {
        rpc_call_fail(call, SPATE_EINVAL, "cannot dispose of savepoint: %s", err.message);
        return;
    }
    x = xcalloc(1, sizeof *x);
    x->d = d;
    x->path = path;
    id_random(&x->trigger_id);
    /* Forget the oldest finished ones beyond what is kept. */
    list_for_each_safe(n, tmp, &d->disposals)
    {
        struct disp_disposal *old = container_of(n, struct disp_disposal, node);

        if (d->ndisposals < DISP_DISPOSALS_KEPT)
            break;
        if (!old->done)
            continue;
        list_remove(n);
        disp_disposal_free(old);
        d->ndisposals--;
    }
    list_push_back(&d->disposals, &x->node);
    d->ndisposals++;
    if (rpc_endpoint_run_blocking(ep, disp_disposal_work, disp_disposal_done, x) != 0) {
        disp_disposal_work(x);
        disp_disposal_done(x);
    }
    reply.trigger_id = gw_id_bytes(&x->trigger_id);
    rpc_call_reply(call, &reply.base);
}

static void
dh_dispose_status(struct rpc_endpoint *ep, const Ckstats__DisposeStatusRequest *req,
                  struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Ckstats__TriggerStatus st = CKSTATS__TRIGGER_STATUS__INIT;
    struct list_node *n;
    spate_id trigger;

    if (!gw_id_get(&req->trigger_id, &trigger)) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed trigger id");
        return;
    }
    list_for_each(n, &d->disposals)
    {
        struct disp_disposal *x = container_of(n, struct disp_disposal, node);

        if (!id_equal(&x->trigger_id, &trigger))
            continue;
        st.done = x->done;
        st.trigger_id = req->trigger_id;
        st.savepoint = true;
        st.failure = x->done && x->rc != 0 ? x->err.message : "";
        rpc_call_reply(call, &st.base);
        return;
    }
    rpc_call_fail(call, SPATE_ENOENT, "no savepoint disposal was triggered with id %s",
                  id_str(&trigger).s);
}

static void
dh_cancel_job(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct disp_job *j;

    if ((j = disp_lookup(ep, req, call)) == NULL)
        return;
    if (j->jm != NULL)
        job_master_cancel(j->jm, "cancelled by the user");
    rpc_call_reply(call, &ack.base);
}

struct overview_call {
    struct dispatcher *d;
    struct rpc_call *call;
};

static void
disp_overview_done(struct rpc_future *f, void *arg)
{
    struct overview_call *oc = arg;
    Cluster__ClusterOverview o = CLUSTER__CLUSTER_OVERVIEW__INIT;
    struct hmap_node *n;

    if (rpc_future_code(f) != 0) {
        rpc_call_fail(oc->call, rpc_future_code(f), "%s", rpc_future_message(f));
        free(oc);
        return;
    }
    {
        Cluster__ResourceOverview *r = rpc_future_value(f);

        o.taskmanagers = r->taskmanagers;
        o.slots_total = r->slots_total;
        o.slots_free = r->slots_free;
    }
    HMAP_FOR_EACH(n, &oc->d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);
        Cluster__JobInfo info;

        disp_job_info(j, &info);
        switch (job_status_parse(info.state)) {
        case JOB_FINISHED:
            o.jobs_finished++;
            break;
        case JOB_CANCELED:
            o.jobs_cancelled++;
            break;
        case JOB_FAILED:
            o.jobs_failed++;
            break;
        default:
            o.jobs_running++;
            break;
        }
    }
    rpc_call_reply(oc->call, &o.base);
    free(oc);
}

static void
dh_request_cluster_overview(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    struct overview_call *oc;
    struct rpc_future *f;

    if (!disp_check_leader(d, call))
        return;
    oc = xmalloc(sizeof *oc);
    oc->d = d;
    oc->call = call;
    f = rm_request_overview(d->rm, req, 0);
    rpc_future_then(f, ep, disp_overview_done, oc);
    rpc_future_unref(f);
}

struct shutdown_call {
    struct dispatcher *d;
    struct rpc_call *call; /* NULL from SIGTERM */
    char *reason;
};

static void
disp_shutdown_done(struct rpc_future *f, void *arg)
{
    struct shutdown_call *sc = arg;
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    if (rpc_future_code(f) != 0)
        SPATE_LOG_WARN(DISP_LOG, "the ResourceManager did not stop the cluster: %s",
                       rpc_future_message(f));
    if (sc->call != NULL)
        rpc_call_reply(sc->call, &ack.base);
    if (sc->d->o.on_shutdown != NULL)
        sc->d->o.on_shutdown(sc->d->o.arg, sc->reason);
    free(sc->reason);
    free(sc);
}

static void
disp_shutdown(struct dispatcher *d, struct rpc_call *call, const char *reason)
{
    Cluster__StopCluster msg = CLUSTER__STOP_CLUSTER__INIT;
    struct shutdown_call *sc = xmalloc(sizeof *sc);
    struct hmap_node *n;
    struct rpc_future *f;

    SPATE_LOG_INFO(DISP_LOG, "shutting the cluster down: %s", reason);
    d->shutting_down = true;
    HMAP_FOR_EACH(n, &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);

        if (j->jm != NULL)
            job_master_cancel(j->jm, "the cluster is shutting down");
    }
    sc->d = d;
    sc->call = call;
    sc->reason = xstrdup(reason);
    msg.reason = (char *)reason;
    f = rm_stop_cluster(d->rm, &msg, 0);
    rpc_future_then(f, &d->ep, disp_shutdown_done, sc);
    rpc_future_unref(f);
}

static void
dh_shutdown_cluster(struct rpc_endpoint *ep, const Cluster__StopCluster *req, struct rpc_call *call)
{
    disp_shutdown(disp_of(ep), call, req->reason && *req->reason ? req->reason : "requested");
}

static const struct dispatcher_handlers disp_handlers = {
    .submit_job = dh_submit_job,
    .request_jobs = dh_request_jobs,
    .request_job = dh_request_job,
    .shutdown_cluster = dh_shutdown_cluster,
    .request_cluster_overview = dh_request_cluster_overview,
    .cancel_job = dh_cancel_job,
    .request_job_details = dh_request_job_details,
    .request_job_vertices = dh_request_job_vertices,
    .request_checkpoint_stats = dh_request_checkpoint_stats,
    .trigger_checkpoint = dh_trigger_checkpoint,
    .checkpoint_trigger_status = dh_checkpoint_trigger_status,
    .trigger_savepoint = dh_trigger_savepoint,
    .dispose_savepoint = dh_dispose_savepoint,
    .dispose_status = dh_dispose_status,
};

static void
disp_on_stop(struct rpc_endpoint *ep)
{
    struct dispatcher *d = disp_of(ep);
    struct hmap_node *n;

    while ((n = hmap_first(&d->jobs)) != NULL) {
        struct disp_job *j = container_of(n, struct disp_job, node);

        hmap_remove(&d->jobs, n);
        if (j->jm != NULL)
            rpc_future_unref(job_master_stop(j->jm));
        disp_job_free(d, j);
    }
    d->recovering = 0;
    disp_release_held(d, "the Dispatcher is stopping");
    rpc_gateway_free(d->rm);
    d->rm = NULL;
}

static void
disp_destroy(struct rpc_endpoint *ep)
{
    struct dispatcher *d = container_of(ep, struct dispatcher, ep); /* no context: last reference */

    /* Here, not in on_stop: blocking work in flight may still use them. */
    if (d->jgs != NULL)
        d->jgs->ops->free(d->jgs);
    if (d->jrs != NULL)
        d->jrs->ops->free(d->jrs);
    hmap_release(&d->jobs);
    while (!list_empty(&d->disposals))
        disp_disposal_free(container_of(list_pop_front(&d->disposals), struct disp_disposal, node));
    free(d);
}

static const struct rpc_endpoint_ops disp_ops = { NULL, disp_on_stop, disp_destroy };

int
dispatcher_options_from_config(const struct config *conf, struct dispatcher_options *o,
                               spate_error *err)
{
    int rc;

    int64_t capacity;

    memset(o, 0, sizeof *o);
    if ((rc = config_get_int(conf, CFG(JOBSTORE_MAX_CAPACITY), &capacity, err)) != 0)
        return rc;
    o->archive_capacity = (size_t)capacity;
    o->conf = conf;
    if ((rc = heartbeat_options_from_config(conf, &o->heartbeat, err)) != 0 ||
        (rc = registration_options_from_config(conf, &o->registration, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(SLOT_REQUEST_TIMEOUT), &o->slot_request_timeout_ms,
                                     err)) != 0)
        return rc;
    return 0;
}

int
dispatcher_start(struct rpc_service *svc, const struct dispatcher_options *o,
                 struct dispatcher **out, spate_error *err)
{
    struct dispatcher *d = xcalloc(1, sizeof *d);
    char addr[300];
    int rc;

    d->o = *o;
    if (d->o.archive_capacity == 0)
        d->o.archive_capacity = 1;
    hmap_init(&d->jobs);
    list_init(&d->disposals);
    list_init(&d->held);
    if ((rc = disp_open_stores(d, err)) != 0) {
        free(d);
        return rc;
    }
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(svc), RPC_ENDPOINT_RESOURCE_MANAGER);
    if ((rc = rpc_gateway_new(svc, addr, NULL, &d->rm, err)) != 0 ||
        (rc = rpc_endpoint_init(&d->ep, svc, RPC_ENDPOINT_DISPATCHER, &disp_ops, err)) != 0) {
        rpc_gateway_free(d->rm);
        if (d->jgs != NULL)
            d->jgs->ops->free(d->jgs);
        if (d->jrs != NULL)
            d->jrs->ops->free(d->jrs);
        free(d);
        return rc;
    }
    rpc_endpoint_bind(&d->ep, &dispatcher_protocol, &disp_handlers);
    if ((rc = rpc_endpoint_start(&d->ep, err)) != 0) {
        rpc_future_unref(rpc_endpoint_stop(&d->ep));
        return rc;
    }
    *out = d;
    return 0;
}

struct rpc_future *
dispatcher_stop(struct dispatcher *d)
{
    return rpc_endpoint_stop(&d->ep);
}

/* ---- high availability: leadership, the job graph and job result stores ---------------- */

static int
disp_open_stores(struct dispatcher *d, spate_error *err)
{
    struct ha_services *ha = d->o.ha;
    int rc;

    if (ha == NULL || ha->ops->job_graph_store == NULL)
        return 0;
    if ((rc = ha->ops->job_graph_store(ha, &d->jgs, err)) != 0)
        return rc;
    if ((rc = ha->ops->job_result_store(ha, &d->jrs, err)) != 0) {
        d->jgs->ops->free(d->jgs);
        d->jgs = NULL;
    }
    return rc;
}

static bool
disp_check_leader(struct dispatcher *d, struct rpc_call *call)
{
    if (d->leader)
        return true;
    rpc_call_fail(call, SPATE_ESTATE, "the Dispatcher at %s is not the leader",
                  rpc_service_address(d->ep.svc));
    return false;
}

/* The JobMaster's leader information (component: the job id), which the
 * TaskExecutors' JobLeaderServices watch. */
static void
disp_publish_job_master(struct dispatcher *d, struct disp_job *j)
{
    char addr[300];

    if (d->le == NULL)
        return;
    snprintf(addr, sizeof addr, "%s/jobmaster_%s", rpc_service_address(d->ep.svc),
             id_str(&j->job_id).s);
    leader_election_confirm(d->le, id_str(&j->job_id).s, &d->session,
                            addr); /* session: the JobMasterId */
}

/* -- persisting a submission before its JobMaster starts -- */

struct disp_persist {
    struct list_node node; /* in d->held while a recovery runs */
    struct dispatcher *d;
    struct rpc_call *call;
    struct job_graph_record rec;
    struct blob_server *blobs; /* with a library to keep in the HA blob store, else NULL */
    uint8_t library_key[SHA256_BYTES];
    int rc;
    spate_error err;
};

static void
disp_persist_work(void *arg)
{
    struct disp_persist *p = arg;

    if (p->blobs != NULL && (p->rc = blob_server_persist_job_blob(p->blobs, &p->rec.job_id,
                                                                  p->library_key, &p->err)) != 0)
        return;
    p->rc = p->d->jgs->ops->put(p->d->jgs, &p->rec, &p->err);
}

/* Starts a stored job; NULL with err set when it cannot. */
static struct disp_job *
disp_start_record(struct dispatcher *d, const struct job_graph_record *rec, spate_error *err)
{
    Cluster__JobSubmission *req;
    struct disp_job *j;

    if (strcmp(rec->kind, DISP_KIND_JOB_GRAPH) != 0) {
        spate_error_set(err, SPATE_ENOTSUP, "jobs of kind '%s' cannot be run", rec->kind);
        return NULL;
    }
    if ((req = cluster__job_submission__unpack(NULL, rec->len, rec->data)) == NULL) {
        spate_error_set(err, SPATE_EPROTO, "undecodable job submission");
        return NULL;
    }
    j = disp_start_job(d, &rec->job_id, req, err);
    cluster__job_submission__free_unpacked(req, NULL);
    if (j != NULL)
        j->persisted = true;
    return j;
}

static void
disp_persist_done(void *arg)
{
    struct disp_persist *p = arg;
    struct dispatcher *d = p->d;
    Cluster__JobId reply = CLUSTER__JOB_ID__INIT;
    spate_error err = { 0 };
    struct disp_job *j;

    if (p->rc != 0) {
        SPATE_LOG_ERROR(DISP_LOG, "cannot store job %s in the job graph store: %s",
                        id_str(&p->rec.job_id).s, p->err.message);
        rpc_call_fail(p->call, p->rc, "cannot store the job: %s", p->err.message);
    } else if (!d->leader || d->shutting_down) {
        rpc_call_fail(p->call, SPATE_ESTATE, "the Dispatcher lost leadership meanwhile");
    } else if (disp_find(d, &p->rec.job_id) != NULL) {
        rpc_call_fail(p->call, SPATE_EEXIST, "job %s was submitted already",
                      id_str(&p->rec.job_id).s);
    } else if ((j = disp_start_record(d, &p->rec, &err)) == NULL) {
        rpc_call_fail(p->call, err.code ? err.code : SPATE_EPROTO, "%s", err.message);
    } else {
        reply.job_id = gw_id_bytes(&j->job_id);
        rpc_call_reply(p->call, &reply.base);
    }
    job_graph_record_release(&p->rec);
    free(p);
}

/* Stores a submission in the job graph store on a worker; the job starts
 * once it is stored (Flink persists before it runs). */
static void
disp_persist_start(struct disp_persist *p)
{
    if (rpc_endpoint_run_blocking(&p->d->ep, disp_persist_work, disp_persist_done, p) != 0) {
        rpc_call_fail(p->call, SPATE_EAGAIN, "cannot store the job now");
        job_graph_record_release(&p->rec);
        free(p);
    }
}

static void
disp_persist(struct dispatcher *d, const spate_id *job_id, const char *kind,
             const ProtobufCMessage *msg, const uint8_t *library_key, struct rpc_call *call)
{
    struct disp_persist *p = xcalloc(1, sizeof *p);

    p->d = d;
    p->call = call;
    if (library_key != NULL && d->o.blobs != NULL) {
        p->blobs = d->o.blobs;
        memcpy(p->library_key, library_key, SHA256_BYTES);
    }
    p->rec.job_id = *job_id;
    p->rec.kind = xstrdup(kind);
    p->rec.len = protobuf_c_message_get_packed_size(msg);
    p->rec.data = xmalloc(p->rec.len ? p->rec.len : 1);
    protobuf_c_message_pack(msg, p->rec.data);
    if (d->recovering > 0)
        list_push_back(&d->held, &p->node);
    else
        disp_persist_start(p);
}

/* Stores the held submissions, once no recovery runs; fails them when this
 * Dispatcher no longer leads or stops. */
static void
disp_release_held(struct dispatcher *d, const char *why)
{
    while (d->recovering == 0 && !list_empty(&d->held)) {
        struct disp_persist *p = container_of(list_pop_front(&d->held), struct disp_persist, node);

        if (why == NULL && d->leader && !d->shutting_down && rpc_endpoint_is_running(&d->ep)) {
            disp_persist_start(p);
            continue;
        }
        rpc_call_fail(p->call, SPATE_ESTATE, "%s",
                      why != NULL ? why : "the Dispatcher lost leadership meanwhile");
        job_graph_record_release(&p->rec);
        free(p);
    }
}

/* -- a job ended: its result, then its clean-up (Flink's order) -- */

struct disp_cleanup {
    struct job_graph_store *jgs;
    struct job_result_store *jrs;
    struct blob_server *blobs;  /* may be NULL */
    struct leader_election *le; /* NULL without high availability */
    spate_id session;           /* the leadership the job ended under */
    struct job_result r;
};

static void
disp_cleanup_work(void *arg)
{
    struct disp_cleanup *c = arg;
    spate_error err = { 0 };

    /* A JobManager that lost leadership while it was paused or cut off
     * may learn that only after its job ended here: then the job runs on
     * at the next leader, whose job graph, library and checkpoints these
     * stores hold. Nothing fences these writes, so leadership is proven
     * first (Flink's JobMasterServiceLeadershipRunner forwards a result
     * only while it leads). */
    if (c->le != NULL && leader_election_verify(c->le, &c->session, &err) != 0) {
        SPATE_LOG_WARN(DISP_LOG,
                       "job %s ended %s after this JobManager lost leadership (%s): its result "
                       "and HA data are left to the leader",
                       id_str(&c->r.job_id).s, c->r.state, err.message);
        return;
    }
    if (c->jrs->ops->create_dirty(c->jrs, &c->r, &err) != 0 && err.code != SPATE_EEXIST) {
        SPATE_LOG_ERROR(DISP_LOG, "cannot record the result of job %s: %s", id_str(&c->r.job_id).s,
                        err.message);
        return;
    }
    /* Flink's global clean-up: the job graph, the library's copy in the HA
     * blob store (checkpoints: the JobMaster's stores), then the result
     * is clean. */
    if (c->jgs->ops->remove(c->jgs, &c->r.job_id, &err) != 0 ||
        (c->blobs != NULL && blob_server_cleanup_job(c->blobs, &c->r.job_id, &err) != 0) ||
        c->jrs->ops->mark_clean(c->jrs, &c->r.job_id, &err) != 0)
        SPATE_LOG_WARN(DISP_LOG, "clean-up of job %s failed: %s", id_str(&c->r.job_id).s,
                       err.message);
}

static void
disp_cleanup_done(void *arg)
{
    struct disp_cleanup *c = arg;

    job_result_release(&c->r);
    free(c);
}

static void
disp_job_ended(struct dispatcher *d, struct disp_job *j)
{
    struct disp_cleanup *c;

    if (d->le != NULL)
        leader_election_withdraw(d->le, id_str(&j->job_id).s);
    if (!j->persisted || d->jgs == NULL)
        return;
    c = xcalloc(1, sizeof *c);
    c->jgs = d->jgs;
    c->jrs = d->jrs;
    c->blobs = j->holds_blob ? d->o.blobs : NULL;
    c->le = d->le;
    c->session = d->session;
    c->r.job_id = j->job_id;
    {
        const Cluster__JobInfo *info = j->archived->info;

        snprintf(c->r.state, sizeof c->r.state, "%s", info->state ? info->state : "");
        c->r.end_time = info->end_time;
        c->r.failure = info->failure && *info->failure ? xstrdup(info->failure) : NULL;
    }
    if (rpc_endpoint_run_blocking(&d->ep, disp_cleanup_work, disp_cleanup_done, c) != 0)
        disp_cleanup_done(c);
}

/* -- RecoverAllJobs: a new leader reads the stores -- */

struct disp_recovery {
    struct dispatcher *d;
    spate_id session;
    struct job_graph_record *recs;
    enum job_result_entry *results;
    size_t n;
    int rc;
    spate_error err;
};

static void
disp_recovery_work(void *arg)
{
    struct disp_recovery *r = arg;
    spate_id *ids = NULL;
    size_t n = 0;

    if ((r->rc = r->d->jgs->ops->job_ids(r->d->jgs, &ids, &n, &r->err)) != 0)
        return;
    r->recs = xcalloc(n ? n : 1, sizeof *r->recs);
    r->results = xcalloc(n ? n : 1, sizeof *r->results);
    for (size_t i = 0; i < n; i++) {
        spate_error err = { 0 };

        /* RecoverJob: one entry; an unreadable one is skipped and logged. */
        if (r->d->jgs->ops->get(r->d->jgs, &ids[i], &r->recs[r->n], &err) != 0) {
            SPATE_LOG_ERROR(DISP_LOG, "cannot recover job %s: %s", id_str(&ids[i]).s, err.message);
            continue;
        }
        if (r->d->jrs->ops->lookup(r->d->jrs, &ids[i], &r->results[r->n], &err) != 0)
            r->results[r->n] = JOB_RESULT_NONE;
        r->n++;
    }
    free(ids);
}

static void
disp_recover_one(struct dispatcher *d, const struct job_graph_record *rec)
{
    spate_error err = { 0 };

    disp_start_record(d, rec, &err);
    if (err.code != 0)
        SPATE_LOG_ERROR(DISP_LOG, "cannot recover job %s: %s", id_str(&rec->job_id).s, err.message);
    else
        SPATE_LOG_INFO(DISP_LOG, "recovered job %s from the job graph store",
                       id_str(&rec->job_id).s);
}

static void
disp_recovery_done(void *arg)
{
    struct disp_recovery *r = arg;
    struct dispatcher *d = r->d;

    if (d->recovering > 0)
        d->recovering--;
    if (r->rc != 0) {
        SPATE_LOG_ERROR(DISP_LOG, "cannot recover the jobs: %s", r->err.message);
    } else if (!d->leader || !id_equal(&d->session, &r->session) ||
               (d->le != NULL && !leader_election_has_leadership(d->le, &r->session))) {
        SPATE_LOG_WARN(DISP_LOG, "lost leadership during recovery: not recovering %zu jobs", r->n);
    } else {
        SPATE_LOG_INFO(DISP_LOG, "recovering %zu jobs from the job graph store", r->n);
        for (size_t i = 0; i < r->n; i++) {
            const struct job_graph_record *rec = &r->recs[i];

            if (disp_find(d, &rec->job_id) != NULL)
                SPATE_LOG_INFO(DISP_LOG, "ignoring the recovery of job %s: it runs already",
                               id_str(&rec->job_id).s);
            else if (r->results[i] != JOB_RESULT_NONE)
                SPATE_LOG_INFO(DISP_LOG,
                               "not running job %s again: the job result store has its "
                               "result",
                               id_str(&rec->job_id).s);
            else
                disp_recover_one(d, rec);
        }
    }
    for (size_t i = 0; i < r->n; i++)
        job_graph_record_release(&r->recs[i]);
    free(r->recs);
    free(r->results);
    free(r);
    disp_release_held(d, NULL);
}

struct disp_leadership {
    struct dispatcher *d;
    bool grant;
    spate_id session;
    struct leader_election *le;
};

static void
disp_apply_leadership(void *arg)
{
    struct disp_leadership *l = arg;
    struct dispatcher *d = l->d;
    struct hmap_node *n, *next;
    char addr[300];

    if (!rpc_endpoint_is_running(&d->ep))
        goto out;
    if (l->grant) {
        struct disp_recovery *r;

        d->leader = true;
        d->session = l->session;
        d->le = l->le;
        SPATE_LOG_INFO(DISP_LOG, "Dispatcher granted leadership (session %s)",
                       id_str(&l->session).s);
        if (d->le != NULL)
            leader_election_confirm(d->le, HA_COMPONENT_DISPATCHER, &l->session,
                                    rpc_endpoint_address(&d->ep, addr, sizeof addr));
        if (d->jgs == NULL)
            goto out;
        r = xcalloc(1, sizeof *r);
        r->d = d;
        r->session = l->session;
        if (rpc_endpoint_run_blocking(&d->ep, disp_recovery_work, disp_recovery_done, r) != 0) {
            SPATE_LOG_ERROR(DISP_LOG, "cannot start recovering the jobs");
            free(r);
        } else {
            d->recovering++;
        }
        goto out;
    }
    if (!d->leader)
        goto out;
    d->leader = false;
    memset(&d->session, 0, sizeof d->session);
    /* Suspend the running jobs: out of the table first, so that stopping
     * their JobMasters records no result; the next leader recovers them. */
    for (n = hmap_first(&d->jobs); n != NULL; n = next) {
        struct disp_job *j = container_of(n, struct disp_job, node);

        next = hmap_next(&d->jobs, n);
        if (j->jm == NULL)
            continue;
        SPATE_LOG_WARN(DISP_LOG, "job %s suspended: the Dispatcher lost leadership",
                       id_str(&j->job_id).s);
        hmap_remove(&d->jobs, n);
        rpc_future_unref(job_master_stop(j->jm));
        j->jm = NULL;
        disp_job_free(d, j); /* its blob reference: the next leader has the HA copy */
    }
    SPATE_LOG_WARN(DISP_LOG, "Dispatcher lost leadership");
out:
    free(l);
}

void
dispatcher_grant_leadership(struct dispatcher *d, const spate_id *session,
                            struct leader_election *le)
{
    struct disp_leadership *l = xcalloc(1, sizeof *l);

    l->d = d;
    l->grant = true;
    l->session = *session;
    l->le = le;
    rpc_endpoint_run_async(&d->ep, disp_apply_leadership, l);
}

void
dispatcher_revoke_leadership(struct dispatcher *d)
{
    struct disp_leadership *l = xcalloc(1, sizeof *l);

    l->d = d;
    rpc_endpoint_run_async(&d->ep, disp_apply_leadership, l);
}

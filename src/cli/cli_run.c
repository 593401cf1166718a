/* `spate run` (cli_run.h): the client side of running a job. The job
 * library's main runs here; its spate_execute reaches one of two executors:
 * the mini cluster's (starts it, submits over in-process RPC) or a
 * cluster's (submits over REST, as Flink's CLI). Both follow the job with
 * the same live status line and print the same result; SIGINT/SIGTERM
 * cancel the job. */
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint/checkpoint_storage.h"
#include "cli/cli_run.h"
#include "cli/mini_cluster.h"
#include "cli/rest_client.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/job_status.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_env.h"
#include "rpc/gateways.h"
#include "streaming/job_graph.h"
#include "streaming/job_graph_codec.h"
#include "streaming/packaged_program.h"

struct run_options {
    bool local;
    bool detached;   /* -d: submit and return */
    int parallelism; /* -p; 0: parallelism.default */
    const char *json_path;
    const char *target;      /* -m host:port */
    const char *savepoint;   /* -s: resume from it */
    bool allow_non_restored; /* -n */
    int job;                 /* index of JOB.so in argv */
};

/* What the live status line shows, from either executor. */
struct job_progress {
    const char *state;
    uint32_t running, finished, total;
};

/* One run: what the executor needs and what it found out. */
struct local_run {
    const struct config *conf;
    const struct run_options *ro;
    char *library_path; /* absolute, for the TaskExecutors */
    int sfd;            /* SIGINT/SIGTERM */
    bool tty;
    /* the result */
    spate_id job_id;
    char *status;
    char *failure;
    int64_t start_time, end_time, submitted_at_us;
    int64_t cluster_start_us; /* how long the mini cluster took to start */
    json_t *accumulators;     /* name → value */
    json_t *plan;
    bool have_slots;      /* the mini cluster's slots, as the run ended */
    json_t *taskmanagers; /* their data planes' connections */
    uint32_t slots_total, slots_free;
};

/* -s and -n into the JobGraph: the savepoint's path made absolute (the
 * JobManager reads it; a relative one is the client's, a `file:` URI its
 * path, another scheme an error), and the warning that operators without a
 * uid match their state by ids that change with the graph. */
static int
apply_resume(const struct run_options *ro, struct job_graph *jg, spate_error *err)
{
    char cwd[PATH_MAX], *path;

    if (ro->savepoint == NULL)
        return 0;
    if (checkpoint_storage_path(ro->savepoint, getcwd(cwd, sizeof cwd), &path, err) != 0)
        return spate_error_wrap(err, "-s");
    free(jg->savepoint_path);
    jg->savepoint_path = path;
    jg->allow_non_restored_state = ro->allow_non_restored;
    if (jg->derived_uids > 0)
        fprintf(stderr,
                "spate run: warning: %d operators have no uid; their ids are derived from the "
                "graph and change when it changes, so that their state in the savepoint may not "
                "be found (give them one with spate_uid())\n",
                jg->derived_uids);
    return 0;
}

static const char *
job_state_or(const char *s)
{
    return s != NULL && *s != '\0' ? s : "UNKNOWN";
}

/* Globally terminal, or SUSPENDED: nothing more to wait for here. */
static bool
job_state_terminal(const char *s)
{
    int st = job_status_parse(s);

    return st == JOB_SUSPENDED || (st >= 0 && job_status_is_terminal((enum job_status)st));
}

/* Slots the job needs: per slot sharing group, its largest parallelism. */
static int
slots_needed(const struct job_graph *jg)
{
    int total = 0;

    for (int v = 0; v < jg->nvertices; v++) {
        const char *group = jg->vertices[v].slot_sharing_group;
        int max = 0;
        bool seen = false;

        for (int u = 0; u < v && !seen; u++)
            seen = strcmp(jg->vertices[u].slot_sharing_group, group) == 0;
        if (seen)
            continue;
        for (int u = v; u < jg->nvertices; u++)
            if (strcmp(jg->vertices[u].slot_sharing_group, group) == 0 &&
                jg->vertices[u].parallelism > max)
                max = jg->vertices[u].parallelism;
        total += max;
    }
    return total;
}

static void
status_line(struct local_run *r, const struct job_progress *p, const char **last, uint64_t t0_ms)
{
    const char *state = job_state_or(p->state);

    if (r->tty) {
        fprintf(stderr, "\r\033[K%-12s %u/%u tasks running, %u finished  %.1f s", state, p->running,
                p->total, p->finished, (double)(clock_mono_ms() - t0_ms) / 1000.0);
        if (job_state_terminal(state))
            fputc('\n', stderr);
        fflush(stderr);
    } else if (*last == NULL || strcmp(*last, state) != 0) {
        fprintf(stderr, "Job %s is %s\n", id_str(&r->job_id).s, state);
    }
    free((char *)*last);
    *last = xstrdup(state);
}

/* A SIGINT or SIGTERM within wait_ms: true once, when the job should be
 * cancelled. */
static bool
cancel_signal(struct local_run *r, int wait_ms, bool *cancelled)
{
    struct pollfd pfd = { .fd = r->sfd, .events = POLLIN };
    struct signalfd_siginfo si;

    if (poll(&pfd, 1, wait_ms) <= 0 || !(pfd.revents & POLLIN) ||
        read(r->sfd, &si, sizeof si) != sizeof si || *cancelled)
        return false;
    fprintf(stderr, "%sCancelling job %s (signal %u)\n", r->tty ? "\n" : "", id_str(&r->job_id).s,
            si.ssi_signo);
    *cancelled = true;
    return true;
}

static void
keep_result(struct local_run *r, const Cluster__JobInfo *info)
{
    r->status = xstrdup(job_state_or(info->state));
    r->failure = info->failure != NULL && *info->failure ? xstrdup(info->failure) : NULL;
    r->start_time = info->start_time;
    r->end_time = info->end_time;
    r->accumulators = json_object();
    for (size_t i = 0; i < info->n_accumulators; i++)
        json_object_set_new(r->accumulators, info->accumulators[i]->name,
                            json_integer(info->accumulators[i]->value));
}

/* The slots as the ResourceManager sees them once the job has let go of
 * them (their release reaches it shortly after the job ends). */
static void
wait_slots_free(struct local_run *r, struct rpc_gateway *gw)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    uint64_t until = clock_mono_ms() + 2000;

    for (;;) {
        struct rpc_future *f = dispatcher_request_cluster_overview(gw, &ack, 0);
        spate_error err = { 0 };

        if (rpc_future_wait(f, -1, &err) == 0) {
            const Cluster__ClusterOverview *o = rpc_future_value(f);

            r->slots_total = o->slots_total;
            r->slots_free = o->slots_free;
        }
        rpc_future_unref(f);
        r->have_slots = r->have_slots || err.code == 0;
        if (err.code != 0 || r->slots_free == r->slots_total || clock_mono_ms() >= until)
            return;
        usleep(1000);
    }
}

/* Follows the job until it ends: polls the Dispatcher (1 ms, doubling up to
 * 100 ms) and cancels it on SIGINT/SIGTERM. */
static int
follow_job(struct local_run *r, struct rpc_gateway *gw, spate_error *err)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;
    const char *last = NULL;
    uint64_t t0 = clock_mono_ms();
    int interval = 1;
    bool cancelled = false;

    req.job_id = gw_id_bytes(&r->job_id);
    for (;;) {
        struct job_progress p;
        struct rpc_future *f;
        const Cluster__JobInfo *info;

        if (cancel_signal(r, interval, &cancelled))
            rpc_future_unref(dispatcher_cancel_job(gw, &req, 0));
        f = dispatcher_request_job(gw, &req, 0);
        if (rpc_future_wait(f, -1, err) != 0) {
            rpc_future_unref(f);
            free((char *)last);
            return spate_error_wrap(err, "following the job");
        }
        info = rpc_future_value(f);
        p.state = info->state;
        p.running = info->tasks_running;
        p.finished = info->tasks_finished;
        p.total = info->tasks_total;
        status_line(r, &p, &last, t0);
        if (job_state_terminal(job_state_or(info->state))) {
            keep_result(r, info);
            rpc_future_unref(f);
            free((char *)last);
            return 0;
        }
        rpc_future_unref(f);
        if (interval < 100)
            interval *= 2;
    }
}

static void
print_result(const struct local_run *r)
{
    const char *name;
    json_t *v;

    printf("Job with JobID %s has %s.\n", id_str(&r->job_id).s,
           strcmp(r->status, "FINISHED") == 0   ? "finished"
           : strcmp(r->status, "CANCELED") == 0 ? "been cancelled"
                                                : "failed");
    if (r->end_time >= r->start_time && r->start_time > 0)
        printf("Job Runtime: %lld ms\n", (long long)(r->end_time - r->start_time));
    if (json_object_size(r->accumulators) > 0) {
        printf("Accumulator Results:\n");
        json_object_foreach(r->accumulators, name, v)
        {
            printf("- %s: %lld\n", name, (long long)json_integer_value(v));
        }
    }
    if (r->have_slots)
        printf("Slots free: %u of %u\n", r->slots_free, r->slots_total);
    fflush(stdout);
}

/* Prints the result; 0 only for a finished job. */
static int
job_outcome(struct local_run *r, spate_error *err)
{
    print_result(r);
    if (strcmp(r->status, "FINISHED") == 0)
        return 0;
    if (strcmp(r->status, "CANCELED") == 0)
        return spate_error_set(err, SPATE_ECANCELED, "job %s was cancelled", id_str(&r->job_id).s);
    return spate_error_set(err, SPATE_EUSER, "job %s failed: %s", id_str(&r->job_id).s,
                           r->failure != NULL ? r->failure : "(no reason given)");
}

static int
local_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct local_run *r = data;
    Cluster__JobSubmission sub = CLUSTER__JOB_SUBMISSION__INIT;
    struct mini_cluster_options mo = { 0 };
    struct mini_cluster *mc = NULL;
    struct rpc_gateway *gw = NULL;
    struct rpc_future *f = NULL;
    uint8_t *graph = NULL, key[SHA256_BYTES];
    size_t graph_len = 0;
    bool have_key = false;
    int64_t tms;
    int slots, rc;

    if (r->status != NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "spate_execute was called twice: a job runs one dataflow");
    if ((rc = apply_resume(r->ro, jg, err)) != 0)
        return rc;
    if ((rc = job_graph_encode(jg, env->library, &graph, &graph_len, err)) != 0)
        return rc;
    r->plan = job_graph_plan_json(jg);
    if ((rc = config_get_int(r->conf, CFG(LOCAL_NUMBER_TASKMANAGER), &tms, err)) != 0)
        goto out;
    /* -p N slots (default: the cores), but never fewer than the job needs. */
    slots = r->ro->parallelism > 0 ? r->ro->parallelism : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (slots < slots_needed(jg))
        slots = slots_needed(jg);
    mo.taskmanagers = (int)tms;
    mo.slots_per_tm = (slots + mo.taskmanagers - 1) / mo.taskmanagers;
    mo.print_out = stdout;
    r->cluster_start_us = clock_wall_us();
    rc = mini_cluster_start(r->conf, &mo, &mc, err);
    r->cluster_start_us = clock_wall_us() - r->cluster_start_us;
    if (rc != 0 || (rc = rpc_gateway_new(mini_cluster_service(mc),
                                         mini_cluster_dispatcher_address(mc), NULL, &gw, err)) != 0)
        goto out;
    sub.job_graph.data = graph;
    sub.job_graph.len = graph_len;
    if (r->library_path != NULL) {
        if ((rc = blob_server_put_file(mini_cluster_blob_server(mc), r->library_path, false, key,
                                       err)) != 0)
            goto out;
        have_key = true; /* the client's reference, until the job holds its own */
        sub.library_key.data = key;
        sub.library_key.len = sizeof key;
    } /* else built-in operators only (a SQL job): no library */
    r->submitted_at_us = clock_wall_us();
    f = dispatcher_submit_job(gw, &sub, 0);
    if ((rc = rpc_future_wait(f, -1, err)) != 0) {
        spate_error_wrap(err, "submitting the job");
        goto out;
    }
    gw_id_get(&((const Cluster__JobId *)rpc_future_value(f))->job_id, &r->job_id);
    printf("Job has been submitted with JobID %s\n", id_str(&r->job_id).s);
    fflush(stdout);
    if ((rc = follow_job(r, gw, err)) != 0)
        goto out;
    wait_slots_free(r, gw);
    r->taskmanagers = json_array();
    for (int i = 0; i < mo.taskmanagers; i++) {
        struct net_env_stats st;

        mini_cluster_network_stats(mc, i, &st);
        json_array_append_new(r->taskmanagers,
                              json_pack("{s:i, s:I, s:I}", "slots", mo.slots_per_tm,
                                        "data_connections_out", (json_int_t)st.client_connections,
                                        "data_connections_in", (json_int_t)st.server_connections));
    }
    rc = job_outcome(r, err);
out:
    rpc_future_unref(f);
    rpc_gateway_free(gw);
    if (have_key)
        blob_server_unref(mini_cluster_blob_server(mc), key);
    mini_cluster_stop(mc);
    free(graph);
    return rc;
}

/* ---- a cluster, over REST ------------------------------------------------------------ */

/* A REST call that must answer 2xx; the body (or NULL) in *out. */
static int
remote_call(struct rest_client *rc, const char *method, const char *path, json_t **out,
            spate_error *err)
{
    char buf[64];
    int status = 0, code;

    if ((code = rest_client_call(rc, method, path, NULL, &status, out, err)) != 0)
        return code;
    if (status / 100 == 2)
        return 0;
    code = spate_error_set(err, status == 404 ? SPATE_ENOENT : SPATE_EREMOTE, "%s %s: %s", method,
                           path, rest_client_error_text(*out, status, buf, sizeof buf));
    json_decref(*out);
    *out = NULL;
    return code;
}

/* The job's result from GET /jobs/:jobid/execution-result. */
static void
remote_result(struct local_run *r, struct rest_client *rc, const char *state)
{
    char path[128];
    json_t *body = NULL, *res, *accs, *v;
    spate_error err = { 0 };
    const char *name, *failure;

    r->status = xstrdup(state);
    r->accumulators = json_object();
    snprintf(path, sizeof path, "/jobs/%s/execution-result", id_str(&r->job_id).s);
    if (remote_call(rc, "GET", path, &body, &err) != 0) {
        fprintf(stderr, "spate run: cannot read the job's result: %s\n", err.message);
        return;
    }
    res = json_object_get(body, "job-execution-result");
    r->start_time = json_integer_value(json_object_get(res, "start-time"));
    r->end_time = json_integer_value(json_object_get(res, "end-time"));
    accs = json_object_get(res, "accumulator-results");
    json_object_foreach(accs, name, v)
    {
        json_object_set_new(r->accumulators, name, json_integer(json_integer_value(v)));
    }
    failure =
        json_string_value(json_object_get(json_object_get(res, "failure-cause"), "stack-trace"));
    if (failure != NULL && *failure)
        r->failure = xstrdup(failure);
    json_decref(body);
}

/* Follows the job over GET /jobs/:jobid (1 ms, doubling up to 200 ms);
 * SIGINT/SIGTERM cancel it (PATCH). */
static int
remote_follow(struct local_run *r, struct rest_client *rc, spate_error *err)
{
    const char *last = NULL;
    uint64_t t0 = clock_mono_ms();
    int interval = 1, rcode;
    bool cancelled = false;
    char path[128];

    snprintf(path, sizeof path, "/jobs/%s", id_str(&r->job_id).s);
    for (;;) {
        struct job_progress p;
        json_t *job = NULL, *tasks;

        if (cancel_signal(r, interval, &cancelled)) {
            char cancel[160];
            json_t *ignored = NULL;
            spate_error cerr = { 0 };

            snprintf(cancel, sizeof cancel, "%s?mode=cancel", path);
            if (remote_call(rc, "PATCH", cancel, &ignored, &cerr) != 0)
                fprintf(stderr, "spate run: cancelling failed: %s\n", cerr.message);
            json_decref(ignored);
        }
        if ((rcode = remote_call(rc, "GET", path, &job, err)) != 0) {
            free((char *)last);
            return spate_error_wrap(err, "following job %s", id_str(&r->job_id).s);
        }
        tasks = json_object_get(job, "tasks");
        p.state = json_string_value(json_object_get(job, "state"));
        p.running = (uint32_t)json_integer_value(json_object_get(tasks, "running"));
        p.finished = (uint32_t)json_integer_value(json_object_get(tasks, "finished"));
        p.total = (uint32_t)json_integer_value(json_object_get(tasks, "total"));
        status_line(r, &p, &last, t0);
        if (job_state_terminal(job_state_or(p.state))) {
            char *state = xstrdup(job_state_or(p.state));

            json_decref(job);
            free((char *)last);
            remote_result(r, rc, state);
            free(state);
            return 0;
        }
        json_decref(job);
        if (interval < 200)
            interval *= 2;
    }
}

/* Submits the JobGraph and the library as Flink's CLI does (POST /jobs,
 * multipart), then follows the job unless detached. */
static int
remote_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct local_run *r = data;
    struct rest_client rc;
    struct rest_client_part parts[3];
    const char *lib_name = r->library_path == NULL         ? NULL
                           : strrchr(r->library_path, '/') ? strrchr(r->library_path, '/') + 1
                                                           : r->library_path;
    const char *url;
    json_t *request, *body = NULL;
    uint8_t *graph = NULL;
    size_t graph_len = 0;
    char *request_text, buf[64];
    int status = 0, rcode;

    if (r->status != NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "spate_execute was called twice: a job runs one dataflow");
    if ((rcode = apply_resume(r->ro, jg, err)) != 0)
        return rcode;
    if ((rcode = rest_client_init(&rc, r->conf, r->ro->target, err)) != 0 ||
        (rcode = job_graph_encode(jg, env->library, &graph, &graph_len, err)) != 0)
        return rcode;
    r->plan = job_graph_plan_json(jg);
    if (lib_name != NULL)
        request = json_pack("{s:s, s:[s], s:[]}", "jobGraphFileName", "job.graph",
                            "jobJarFileNames", lib_name, "jobArtifactFileNames");
    else
        request = json_pack("{s:s, s:[], s:[]}", "jobGraphFileName", "job.graph", "jobJarFileNames",
                            "jobArtifactFileNames");
    request_text = json_dumps(request, JSON_COMPACT);
    json_decref(request);
    parts[0] =
        (struct rest_client_part){ "request", NULL, NULL, request_text, strlen(request_text) };
    parts[1] = (struct rest_client_part){ "file_0", "job.graph", NULL, graph, graph_len };
    parts[2] = (struct rest_client_part){ "file_1", lib_name, r->library_path, NULL, 0 };
    r->submitted_at_us = clock_wall_us();
    rcode = rest_client_upload(&rc, "/jobs", parts, lib_name != NULL ? 3 : 2, &status, &body, err);
    free(request_text);
    free(graph);
    if (rcode == SPATE_ECONNREFUSED && r->ro->target == NULL) {
        /* A first run without a cluster: say how to run without one. */
        char why[sizeof err->message];

        snprintf(why, sizeof why, "%s", err->message);
        spate_error_set(err, rcode,
                        "%s; or run the job on a mini cluster of its own: spate run --local", why);
    }
    if (rcode != 0)
        return spate_error_wrap(err, "submitting the job");
    url = json_string_value(json_object_get(body, "jobUrl"));
    if (status != 202 || url == NULL || strncmp(url, "/jobs/", 6) != 0 ||
        id_parse(url + 6, &r->job_id, NULL) != 0) {
        rcode = spate_error_set(err, SPATE_EREMOTE, "the JobManager at %s refused the job: %s",
                                rc.url, rest_client_error_text(body, status, buf, sizeof buf));
        json_decref(body);
        return rcode;
    }
    json_decref(body);
    printf("Job has been submitted with JobID %s\n", id_str(&r->job_id).s);
    fflush(stdout);
    if (r->ro->detached) {
        r->status = xstrdup("SUBMITTED");
        return 0;
    }
    if ((rcode = remote_follow(r, &rc, err)) != 0)
        return rcode;
    return job_outcome(r, err);
}

static int
parse_run_args(int argc, char **argv, struct run_options *ro)
{
    int i = 1;

    memset(ro, 0, sizeof *ro);
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];

        if (strcmp(a, "--local") == 0) {
            ro->local = true;
        } else if (strcmp(a, "-d") == 0 || strcmp(a, "--detached") == 0) {
            ro->detached = true;
        } else if ((strcmp(a, "-m") == 0 || strcmp(a, "--jobmanager") == 0) && i + 1 < argc) {
            ro->target = argv[++i];
        } else if ((strcmp(a, "-p") == 0 || strcmp(a, "--parallelism") == 0) && i + 1 < argc) {
            char *end;
            long p = strtol(argv[++i], &end, 10);

            if (*end != '\0' || p < 1 || p > 32768) {
                fprintf(stderr, "spate run: parallelism '%s' is not a number from 1 to 32768\n",
                        argv[i]);
                return 2;
            }
            ro->parallelism = (int)p;
        } else if (strcmp(a, "--json") == 0 && i + 1 < argc) {
            ro->json_path = argv[++i];
        } else if ((strcmp(a, "-s") == 0 || strcmp(a, "--fromSavepoint") == 0) && i + 1 < argc) {
            ro->savepoint = argv[++i];
        } else if (strcmp(a, "-n") == 0 || strcmp(a, "--allowNonRestoredState") == 0) {
            ro->allow_non_restored = true;
        } else {
            fprintf(stderr, "spate run: unknown option '%s'\n", a);
            return 2;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "spate run: which job? usage: spate run [--local | -m HOST:PORT] [-d] "
                        "[-p N] [-s SAVEPOINT [-n]] [--json FILE] JOB.so [ARGS]\n");
        return 2;
    }
    ro->job = i;
    return 0;
}

/* As `flink run`: on a cluster — -m's, else the configured one
 * (rest.address and rest.port, by default localhost:8081, or the leader a
 * ZooKeeper quorum names) — unless --local or execution.target: local ask
 * for the mini cluster. */
static bool
runs_locally(const struct config *conf, const struct run_options *ro)
{
    int target;

    if (ro->local)
        return true;
    if (ro->target != NULL)
        return false;
    /* execution.target is an enum: "local|remote" (0 is local). */
    return config_is_set(conf, CFG(EXECUTION_TARGET)) &&
           config_get_enum(conf, CFG(EXECUTION_TARGET), &target, NULL) == 0 && target == 0;
}

static void
write_json(const struct local_run *r, const char *path, int rc, const spate_error *err)
{
    json_t *o = json_object();
    char id[64] = "";

    if (r->status != NULL)
        snprintf(id, sizeof id, "%s", id_str(&r->job_id).s);
    json_object_set_new(o, "jid", json_string(id));
    json_object_set_new(o, "state", json_string(r->status != NULL ? r->status : "NOT_RUN"));
    json_object_set_new(o, "error", rc != 0 ? json_string(err->message) : json_null());
    json_object_set_new(o, "minicluster_start_us", json_integer(r->cluster_start_us));
    json_object_set_new(o, "submitted_at_us", json_integer(r->submitted_at_us));
    json_object_set_new(o, "start_time", json_integer(r->start_time));
    json_object_set_new(o, "end_time", json_integer(r->end_time));
    json_object_set_new(o, "duration_ms", json_integer(r->end_time - r->start_time));
    json_object_set_new(o, "accumulators",
                        r->accumulators != NULL ? json_incref(r->accumulators) : json_object());
    json_object_set_new(o, "slots_total", json_integer(r->slots_total));
    json_object_set_new(o, "slots_free", json_integer(r->slots_free));
    json_object_set_new(o, "taskmanagers",
                        r->taskmanagers != NULL ? json_incref(r->taskmanagers) : json_array());
    json_object_set_new(o, "plan", r->plan != NULL ? json_incref(r->plan) : json_null());
    if (json_dump_file(o, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        fprintf(stderr, "spate run: cannot write '%s'\n", path);
    json_decref(o);
}

int
cli_run(const struct config *conf, int argc, char **argv)
{
    struct run_options ro;
    struct local_run r = { 0 };
    struct executor ex = { "mini cluster", local_execute, &r };
    struct executor remote = { "cluster over REST", remote_execute, &r };
    spate_error err = { 0 };
    char resolved[PATH_MAX];
    sigset_t set;
    int rc;

    if ((rc = parse_run_args(argc, argv, &ro)) != 0)
        return rc;
    if (ro.local && (ro.detached || ro.target != NULL)) {
        fprintf(stderr, "spate run: --local runs the job in this process: it takes neither -d "
                        "nor -m\n");
        return 2;
    }
    /* A client's log is for trouble: the job's own output and status come
     * first, unless a level was asked for. */
    if (getenv("SPATE_LOG_LEVEL") == NULL && !config_is_set(conf, CFG(LOG_LEVEL)))
        log_set_level(LOG_LEVEL_WARN);
    /* Before any thread starts, so that only the signalfd sees them. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    r.sfd = signalfd(-1, &set, SFD_CLOEXEC);
    r.conf = conf;
    r.ro = &ro;
    r.tty = isatty(STDERR_FILENO);
    r.library_path = xstrdup(realpath(argv[ro.job], resolved) ? resolved : argv[ro.job]);
    rc = packaged_program_run(argv[ro.job], conf, ro.parallelism, argc - ro.job, argv + ro.job,
                              runs_locally(conf, &ro) ? &ex : &remote, &err);
    if (rc != 0)
        fprintf(stderr, "spate run: %s\n", err.message);
    if (ro.json_path != NULL)
        write_json(&r, ro.json_path, rc, &err);
    json_decref(r.accumulators);
    json_decref(r.plan);
    json_decref(r.taskmanagers);
    free(r.status);
    free(r.failure);
    free(r.library_path);
    close(r.sfd);
    return rc == 0 ? 0 : 1;
}

/* ---- jobs without a library (spate sql) ---------------------------------------------- */

struct cli_job_executor {
    struct run_options ro;
    struct local_run r;
    bool remote;
};

/* Runs one job: the result of the previous one is dropped first, since a
 * session runs one job per INSERT. */
static int
job_executor_execute(void *data, struct spate_env *env, struct job_graph *jg, spate_error *err)
{
    struct cli_job_executor *x = data;
    struct local_run *r = &x->r;
    const char *sync, *unclaimed;

    free(r->status);
    free(r->failure);
    json_decref(r->accumulators);
    json_decref(r->plan);
    json_decref(r->taskmanagers);
    r->status = r->failure = NULL;
    r->accumulators = r->plan = r->taskmanagers = NULL;
    r->have_slots = false;
    /* On a cluster an INSERT is submitted and left running, as Flink's SQL
     * client does, unless 'table.dml-sync' = 'true'; the session's SET
     * 'execution.savepoint.path' resumes it from a savepoint. */
    sync = config_lookup(env->conf, "table.dml-sync");
    x->ro.detached = x->remote && !(sync != NULL && strcmp(sync, "true") == 0);
    x->ro.savepoint = config_lookup(env->conf, "execution.savepoint.path");
    unclaimed = config_lookup(env->conf, "execution.savepoint.ignore-unclaimed-state");
    x->ro.allow_non_restored = unclaimed != NULL && strcmp(unclaimed, "true") == 0;
    return x->remote ? remote_execute(r, env, jg, err) : local_execute(r, env, jg, err);
}

struct cli_job_executor *
cli_job_executor_new(const struct config *conf, bool local, const char *target, int parallelism)
{
    struct cli_job_executor *x = xcalloc(1, sizeof *x);
    sigset_t set;

    x->ro.local = local;
    x->ro.target = target;
    x->ro.parallelism = parallelism;
    x->r.conf = conf;
    x->r.ro = &x->ro;
    x->r.tty = isatty(STDERR_FILENO);
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    x->r.sfd = signalfd(-1, &set, SFD_CLOEXEC);
    x->remote = !runs_locally(conf, &x->ro);
    return x;
}

bool
cli_job_executor_remote(const struct cli_job_executor *x)
{
    return x->remote;
}

struct executor
cli_job_executor_get(struct cli_job_executor *x)
{
    struct executor e = { x->remote ? "cluster over REST" : "mini cluster", job_executor_execute,
                          x };

    return e;
}

void
cli_job_executor_free(struct cli_job_executor *x)
{
    if (x == NULL)
        return;
    free(x->r.status);
    free(x->r.failure);
    json_decref(x->r.accumulators);
    json_decref(x->r.plan);
    json_decref(x->r.taskmanagers);
    close(x->r.sfd);
    free(x);
}

/* `spate list`, `spate cancel`, `spate stop`, `spate savepoint` and
 * `spate stop-cluster` (cli_jobs.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "checkpoint/checkpoint_storage.h"
#include "cli/cli_jobs.h"
#include "cli/rest_client.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/id.h"
#include "core/job_status.h"

static bool
jobs_terminal(const char *s)
{
    int st = job_status_parse(s);

    return st >= 0 && job_status_is_terminal((enum job_status)st);
}

static bool
jobs_scheduled(const char *s)
{
    int st = job_status_parse(s);

    return st == JOB_CREATED || st == JOB_INITIALIZING;
}

/* Flink's line: "29.11.2026 17:32:09 : <jid> : <name> (<state>)". */
static void
jobs_print(json_t *jobs, bool (*want)(const char *), bool negate, const char *title,
           const char *none)
{
    size_t i, shown = 0;
    json_t *j;

    json_array_foreach(jobs, i, j)
    {
        const char *state = json_string_value(json_object_get(j, "state"));
        time_t start = (time_t)(json_integer_value(json_object_get(j, "start-time")) / 1000);
        char when[32];
        struct tm tm;

        if (state == NULL || want(state) == negate)
            continue;
        if (shown++ == 0)
            printf("------------------ %s ------------------\n", title);
        strftime(when, sizeof when, "%d.%m.%Y %H:%M:%S", localtime_r(&start, &tm));
        printf("%s : %s : %s (%s)\n", when, json_string_value(json_object_get(j, "jid")),
               json_string_value(json_object_get(j, "name")), state);
    }
    if (shown == 0)
        printf("%s\n", none);
    else
        printf("--------------------------------------------------------------\n");
}

static bool
jobs_running(const char *s)
{
    return !jobs_terminal(s) && !jobs_scheduled(s);
}

/* -m HOST:PORT at argv[*i]; false for an unknown option. */
static bool
jobs_target_option(int argc, char **argv, int *i, const char **target)
{
    if ((strcmp(argv[*i], "-m") == 0 || strcmp(argv[*i], "--jobmanager") == 0) && *i + 1 < argc) {
        *target = argv[++*i];
        return true;
    }
    return false;
}

int
cli_list(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL;
    spate_error err = { 0 };
    json_t *body = NULL, *jobs;
    bool all = false;
    int status = 0;
    char buf[64];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-a") == 0 || strcmp(argv[i], "--all") == 0) {
            all = true;
        } else if (!jobs_target_option(argc, argv, &i, &target)) {
            fprintf(stderr,
                    "spate list: unknown argument '%s' (usage: spate list [-a] [-m "
                    "HOST:PORT])\n",
                    argv[i]);
            return 2;
        }
    }
    if (rest_client_init(&rc, conf, target, &err) != 0 ||
        rest_client_call(&rc, "GET", "/jobs/overview", NULL, &status, &body, &err) != 0) {
        fprintf(stderr, "spate list: %s\n", err.message);
        return 1;
    }
    if (status != 200 || !json_is_array(jobs = json_object_get(body, "jobs"))) {
        fprintf(stderr, "spate list: %s: %s\n", rc.url,
                rest_client_error_text(body, status, buf, sizeof buf));
        json_decref(body);
        return 1;
    }
    jobs_print(jobs, jobs_running, false, "Running/Restarting Jobs", "No running jobs.");
    jobs_print(jobs, jobs_scheduled, false, "Scheduled Jobs", "No scheduled jobs.");
    if (all)
        jobs_print(jobs, jobs_terminal, false, "Terminated Jobs", "No terminated jobs.");
    json_decref(body);
    return 0;
}

/* An absolute path for the cluster: relative ones are the client's,
 * "file:" URIs their path (malloc'd); one of another scheme goes as it is,
 * and the JobManager's answer says what is wrong with it. */
static char *
jobs_absolute(const char *p)
{
    char cwd[PATH_MAX], *path;

    if (checkpoint_storage_path(p, getcwd(cwd, sizeof cwd), &path, NULL) != 0)
        return xstrdup(p);
    return path;
}

/* method path with body (may be NULL); the answer when its status is
 * `want`, else NULL after printing the error as "spate cmd: ...". */
static json_t *
jobs_call(struct rest_client *rc, const char *cmd, const char *method, const char *path,
          const char *body, int want)
{
    spate_error err = { 0 };
    json_t *answer = NULL;
    char buf[64];
    int status = 0;

    if (rest_client_call(rc, method, path, body, &status, &answer, &err) != 0) {
        fprintf(stderr, "spate %s: %s\n", cmd, err.message);
        return NULL;
    }
    if (status != want) {
        fprintf(stderr, "spate %s: %s\n", cmd,
                rest_client_error_text(answer, status, buf, sizeof buf));
        json_decref(answer);
        return NULL;
    }
    if (answer == NULL)
        answer = json_object();
    return answer;
}

/* Posts body to path (an asynchronous operation), then polls
 * status_prefix/<request-id> until it is COMPLETED (1 ms, doubling up to
 * 200 ms). 0 with *location (malloc'd, may be NULL) on success; 1 after
 * printing the failure. */
static int
jobs_async(struct rest_client *rc, const char *cmd, const char *path, json_t *body,
           const char *status_prefix, char **location)
{
    char *text = json_dumps(body, JSON_COMPACT), status_path[300];
    json_t *answer = jobs_call(rc, cmd, "POST", path, text, 202);
    const char *rid;
    int interval = 1;

    free(text);
    *location = NULL;
    if (answer == NULL)
        return 1;
    rid = json_string_value(json_object_get(answer, "request-id"));
    if (rid == NULL) {
        fprintf(stderr, "spate %s: the answer to POST %s has no request-id\n", cmd, path);
        json_decref(answer);
        return 1;
    }
    snprintf(status_path, sizeof status_path, "%s/%s", status_prefix, rid);
    json_decref(answer);
    for (;;) {
        json_t *op, *cause;
        const char *id;

        if ((answer = jobs_call(rc, cmd, "GET", status_path, NULL, 200)) == NULL)
            return 1;
        id = json_string_value(json_object_get(json_object_get(answer, "status"), "id"));
        if (id != NULL && strcmp(id, "COMPLETED") == 0) {
            op = json_object_get(answer, "operation");
            cause = json_object_get(op, "failure-cause");
            if (cause != NULL) {
                fprintf(stderr, "spate %s: %s\n", cmd,
                        json_string_value(json_object_get(cause, "stack-trace")));
                json_decref(answer);
                return 1;
            }
            if (json_string_value(json_object_get(op, "location")) != NULL)
                *location = xstrdup(json_string_value(json_object_get(op, "location")));
            json_decref(answer);
            return 0;
        }
        json_decref(answer);
        usleep((useconds_t)interval * 1000);
        if (interval < 200)
            interval *= 2;
    }
}

static int
jobs_parse_id(const char *cmd, const char *jid, spate_id *id)
{
    spate_error err = { 0 };

    if (id_parse(jid, id, &err) != 0) {
        fprintf(stderr, "spate %s: '%s' is not a job id: %s\n", cmd, jid, err.message);
        return 2;
    }
    return 0;
}

/* A savepoint of job id into dir (NULL: state.savepoints.dir); with
 * cancel_job the job is cancelled once it completed. */
static int
jobs_savepoint(struct rest_client *rc, const char *cmd, const spate_id *id, const char *dir,
               bool cancel_job)
{
    char path[160], *location = NULL, *abs = dir ? jobs_absolute(dir) : NULL;
    json_t *body = json_object();
    int rc_;

    if (abs != NULL)
        json_object_set_new(body, "target-directory", json_string(abs));
    json_object_set_new(body, "cancel-job", json_boolean(cancel_job));
    snprintf(path, sizeof path, "/jobs/%s/savepoints", id_str(id).s);
    rc_ = jobs_async(rc, cmd, path, body, path, &location);
    if (rc_ == 0) {
        printf("Savepoint completed. Path: %s\n", location ? location : "");
        if (cancel_job)
            printf("Cancelled job %s.\n", id_str(id).s);
        else
            printf("You can resume your program from this savepoint with the run command.\n");
    }
    json_decref(body);
    free(location);
    free(abs);
    return rc_;
}

int
cli_cancel(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL, *jid = NULL, *dir = NULL;
    spate_error err = { 0 };
    json_t *body;
    bool with_savepoint = false;
    char path[160];
    spate_id id;
    int r;

    for (int i = 1; i < argc; i++) {
        if (jobs_target_option(argc, argv, &i, &target))
            continue;
        if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "--withSavepoint") == 0) {
            with_savepoint = true;
            /* Flink's optional folder: taken when a job id follows it. */
            if (i + 2 < argc && argv[i + 1][0] != '-') {
                dir = argv[++i];
            }
            continue;
        }
        if (argv[i][0] == '-' || jid != NULL) {
            fprintf(stderr,
                    "spate cancel: unexpected argument '%s' (usage: spate cancel [-m "
                    "HOST:PORT] [-s [DIR]] JOBID)\n",
                    argv[i]);
            return 2;
        }
        jid = argv[i];
    }
    if (jid == NULL) {
        fprintf(stderr, "spate cancel: which job? usage: spate cancel [-m HOST:PORT] [-s [DIR]] "
                        "JOBID\n");
        return 2;
    }
    if ((r = jobs_parse_id("cancel", jid, &id)) != 0)
        return r;
    if (rest_client_init(&rc, conf, target, &err) != 0) {
        fprintf(stderr, "spate cancel: %s\n", err.message);
        return 1;
    }
    if (with_savepoint) {
        printf("Cancelling job %s with a savepoint to %s.\n", id_str(&id).s,
               dir ? dir : "the default folder");
        fflush(stdout);
        return jobs_savepoint(&rc, "cancel", &id, dir, true);
    }
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", id_str(&id).s);
    if ((body = jobs_call(&rc, "cancel", "PATCH", path, NULL, 202)) == NULL)
        return 1;
    json_decref(body);
    printf("Cancelling job %s.\nCancelled job %s.\n", id_str(&id).s, id_str(&id).s);
    return 0;
}

int
cli_stop(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL, *jid = NULL, *dir = NULL;
    spate_error err = { 0 };
    char path[160], *location = NULL, *abs = NULL;
    bool drain = false;
    json_t *body;
    spate_id id;
    int r;

    for (int i = 1; i < argc; i++) {
        if (jobs_target_option(argc, argv, &i, &target))
            continue;
        if (strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--drain") == 0) {
            drain = true;
        } else if ((strcmp(argv[i], "-p") == 0 || strcmp(argv[i], "--savepointPath") == 0) &&
                   i + 1 < argc) {
            dir = argv[++i];
        } else if (argv[i][0] == '-' || jid != NULL) {
            fprintf(stderr,
                    "spate stop: unexpected argument '%s' (usage: spate stop [-m HOST:PORT] "
                    "[--drain] [-p DIR] JOBID)\n",
                    argv[i]);
            return 2;
        } else {
            jid = argv[i];
        }
    }
    if (jid == NULL) {
        fprintf(stderr, "spate stop: which job? usage: spate stop [-m HOST:PORT] [--drain] [-p "
                        "DIR] JOBID\n");
        return 2;
    }
    if ((r = jobs_parse_id("stop", jid, &id)) != 0)
        return r;
    if (rest_client_init(&rc, conf, target, &err) != 0) {
        fprintf(stderr, "spate stop: %s\n", err.message);
        return 1;
    }
    printf("Suspending job %s with a savepoint%s.\n", id_str(&id).s,
           drain ? " (draining: every event-time window and timer fires first)" : "");
    fflush(stdout);
    body = json_object();
    if (dir != NULL)
        json_object_set_new(body, "targetDirectory", json_string(abs = jobs_absolute(dir)));
    json_object_set_new(body, "drain", json_boolean(drain));
    snprintf(path, sizeof path, "/jobs/%s/stop", id_str(&id).s);
    {
        char status_prefix[160];

        snprintf(status_prefix, sizeof status_prefix, "/jobs/%s/savepoints", id_str(&id).s);
        r = jobs_async(&rc, "stop", path, body, status_prefix, &location);
    }
    if (r == 0)
        printf("Savepoint completed. Path: %s\n", location ? location : "");
    json_decref(body);
    free(location);
    free(abs);
    return r;
}

int
cli_savepoint(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL, *dispose = NULL, *args[2] = { NULL, NULL };
    spate_error err = { 0 };
    int nargs = 0, r;
    spate_id id;

    for (int i = 1; i < argc; i++) {
        if (jobs_target_option(argc, argv, &i, &target))
            continue;
        if ((strcmp(argv[i], "-d") == 0 || strcmp(argv[i], "--dispose") == 0) && i + 1 < argc) {
            dispose = argv[++i];
        } else if (argv[i][0] == '-' || nargs == 2) {
            fprintf(stderr,
                    "spate savepoint: unexpected argument '%s' (usage: spate savepoint [-m "
                    "HOST:PORT] JOBID [DIR] | -d PATH)\n",
                    argv[i]);
            return 2;
        } else {
            args[nargs++] = argv[i];
        }
    }
    if ((dispose == NULL) == (nargs == 0)) {
        fprintf(stderr, "spate savepoint: usage: spate savepoint [-m HOST:PORT] JOBID [DIR], or "
                        "spate savepoint -d PATH\n");
        return 2;
    }
    if (rest_client_init(&rc, conf, target, &err) != 0) {
        fprintf(stderr, "spate savepoint: %s\n", err.message);
        return 1;
    }
    if (dispose != NULL) {
        char *abs = jobs_absolute(dispose), *location = NULL;
        json_t *body = json_pack("{s:s}", "savepoint-path", abs);

        r = jobs_async(&rc, "savepoint", "/savepoint-disposal", body, "/savepoint-disposal",
                       &location);
        if (r == 0)
            printf("Savepoint '%s' disposed.\n", abs);
        json_decref(body);
        free(location);
        free(abs);
        return r;
    }
    if ((r = jobs_parse_id("savepoint", args[0], &id)) != 0)
        return r;
    printf("Triggering savepoint for job %s.\nWaiting for response...\n", id_str(&id).s);
    fflush(stdout);
    return jobs_savepoint(&rc, "savepoint", &id, args[1], false);
}

int
cli_stop_cluster(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL;
    spate_error err = { 0 };
    json_t *answer;

    for (int i = 1; i < argc; i++) {
        if (!jobs_target_option(argc, argv, &i, &target)) {
            fprintf(stderr,
                    "spate stop-cluster: unknown argument '%s' (usage: spate stop-cluster [-m "
                    "HOST:PORT])\n",
                    argv[i]);
            return 2;
        }
    }
    if (rest_client_init(&rc, conf, target, &err) != 0) {
        fprintf(stderr, "spate stop-cluster: %s\n", err.message);
        return 1;
    }
    if ((answer = jobs_call(&rc, "stop-cluster", "DELETE", "/cluster", NULL, 200)) == NULL)
        return 1;
    json_decref(answer);
    printf("Stopping the cluster at %s: its JobManager and TaskManagers shut down.\n", rc.url);
    return 0;
}

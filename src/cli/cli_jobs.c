/* `spate list` and `spate cancel` (cli_jobs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli/cli_jobs.h"
#include "cli/rest_client.h"
#include "core/id.h"

static bool
jobs_terminal(const char *s)
{
    return strcmp(s, "FINISHED") == 0 || strcmp(s, "FAILED") == 0 || strcmp(s, "CANCELED") == 0;
}

static bool
jobs_scheduled(const char *s)
{
    return strcmp(s, "CREATED") == 0 || strcmp(s, "INITIALIZING") == 0;
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

int
cli_cancel(const struct config *conf, int argc, char **argv)
{
    struct rest_client rc;
    const char *target = NULL, *jid = NULL;
    spate_error err = { 0 };
    json_t *body = NULL;
    char path[160], buf[64];
    int status = 0;
    spate_id id;

    for (int i = 1; i < argc; i++) {
        if (jobs_target_option(argc, argv, &i, &target))
            continue;
        if (argv[i][0] == '-' || jid != NULL) {
            fprintf(stderr,
                    "spate cancel: unexpected argument '%s' (usage: spate cancel [-m "
                    "HOST:PORT] JOBID)\n",
                    argv[i]);
            return 2;
        }
        jid = argv[i];
    }
    if (jid == NULL) {
        fprintf(stderr, "spate cancel: which job? usage: spate cancel [-m HOST:PORT] JOBID\n");
        return 2;
    }
    if (id_parse(jid, &id, &err) != 0) {
        fprintf(stderr, "spate cancel: '%s' is not a job id: %s\n", jid, err.message);
        return 2;
    }
    snprintf(path, sizeof path, "/jobs/%s?mode=cancel", id_str(&id).s);
    if (rest_client_init(&rc, conf, target, &err) != 0 ||
        rest_client_call(&rc, "PATCH", path, NULL, &status, &body, &err) != 0) {
        fprintf(stderr, "spate cancel: %s\n", err.message);
        return 1;
    }
    if (status != 202) {
        fprintf(stderr, "spate cancel: %s\n",
                rest_client_error_text(body, status, buf, sizeof buf));
        json_decref(body);
        return 1;
    }
    json_decref(body);
    printf("Cancelling job %s.\nCancelled job %s.\n", id_str(&id).s, id_str(&id).s);
    return 0;
}

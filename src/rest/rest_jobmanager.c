/* The JobManager's own resources of the REST API and the cluster's odds
 * and ends, in Flink's JSON: its configuration and environment (also
 * job-scoped), its log files, the log URLs of the history server's
 * patterns, and the cluster data sets (spate keeps none: an empty list, and
 * deletions that complete at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log_files.h"
#include "rest/rest_int.h"

/* Flink's ConfigurationUtils hides the values of keys that look secret. */
static bool
rest_key_is_secret(const char *key)
{
    static const char *const words[] = { "password", "secret",      "fs.azure.account.key",
                                         "apikey",   "auth-params", "service-key",
                                         "token",    "basic-auth",  "jaas.config" };

    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasestr(key, words[i]) != NULL)
            return true;
    return false;
}

/* GET /jobmanager/config, /jobs/:jobid/jobmanager/config: every key set,
 * [{"key", "value"}] (ClusterConfigurationInfo). */
static enum MHD_Result
rest_jm_config(struct rest_request *rq)
{
    json_t *out = json_array();

    for (size_t i = 0; i < config_count(rq->rs->conf); i++) {
        const char *key, *value, *origin;

        config_entry(rq->rs->conf, i, &key, &value, &origin);
        json_array_append_new(out, json_pack("{s:s, s:s}", "key", key, "value",
                                             rest_key_is_secret(key) ? "******" : value));
    }
    return rest_send(rq->c, MHD_HTTP_OK, out);
}

/* The process's command line, its "JVM options" in Flink's EnvironmentInfo. */
static json_t *
rest_cmdline(void)
{
    json_t *out = json_array();
    char buf[8192];
    size_t n = 0;
    FILE *f = fopen("/proc/self/cmdline", "re");

    if (f != NULL) {
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        json_array_append_new(out, json_string(buf + i));
    return out;
}

/* GET /jobmanager/environment (EnvironmentInfo): where Flink names its JVM,
 * spate names itself, the machine and its command line; no classpath. */
static enum MHD_Result
rest_jm_environment(struct rest_request *rq)
{
    struct utsname u;
    char version[300];

    if (uname(&u) != 0)
        snprintf(u.machine, sizeof u.machine, "unknown");
    snprintf(version, sizeof version, "spate %s (native, %s %s)", SPATE_VERSION, u.sysname,
             u.release);
    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:{s:s, s:s, s:o}, s:[]}", "jvm", "version", version, "arch",
                               u.machine, "options", rest_cmdline(), "classpath"));
}

/* GET /jobmanager/logs (LogListInfo): the files of the log folder. */
static enum MHD_Result
rest_jm_logs(struct rest_request *rq)
{
    json_t *logs = json_array();
    struct log_file *f = NULL;
    char dir[4096];
    size_t n = 0;

    if (log_files_dir(rq->rs->conf, dir, sizeof dir, NULL) == 0)
        n = log_files_list(dir, &f);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(logs,
                              json_pack("{s:s, s:I, s:I}", "name", f[i].name, "size",
                                        (json_int_t)f[i].size, "mtime", (json_int_t)f[i].mtime_ms));
    log_files_free(f, n);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "logs", logs));
}

enum MHD_Result
rest_send_text(struct MHD_Connection *c, unsigned status, char *text, size_t len)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret;

    MHD_add_response_header(r, "Content-Type", "text/plain; charset=UTF-8");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* GET /jobmanager/logs/:filename: the file as text (its last
 * REST_LOG_MAX_BYTES). */
static enum MHD_Result
rest_jm_log_file(struct rest_request *rq)
{
    spate_error err = { 0 };
    char dir[4096], *data;
    size_t len;

    if (log_files_dir(rq->rs->conf, dir, sizeof dir, &err) != 0)
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND, "%s", err.message);
    if (log_files_read(dir, rq->params[0], REST_LOG_MAX_BYTES, &data, &len, &err) != 0)
        return rest_error(rq->c,
                          err.code == SPATE_EINVAL ? MHD_HTTP_BAD_REQUEST : MHD_HTTP_NOT_FOUND,
                          "%s", err.message);
    return rest_send_text(rq->c, MHD_HTTP_OK, data, len);
}

/* The job's id from :jobid, known to the Dispatcher; false after an answer. */
static bool
rest_known_job(struct rest_request *rq, spate_id *id, enum MHD_Result *ret)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;
    struct rpc_future *f;

    if (!rest_job_id(rq, id, ret))
        return false;
    req.job_id = gw_id_bytes(id);
    f = rest_ask(rq->c, dispatcher_request_job_details(rq->rs->dispatcher, &req, REST_ASK_MS), ret);
    if (f == NULL)
        return false;
    rpc_future_unref(f);
    return true;
}

static enum MHD_Result
rest_job_jm_config(struct rest_request *rq)
{
    enum MHD_Result ret;
    spate_id id;

    return rest_known_job(rq, &id, &ret) ? rest_jm_config(rq) : ret;
}

static enum MHD_Result
rest_job_jm_environment(struct rest_request *rq)
{
    enum MHD_Result ret;
    spate_id id;

    return rest_known_job(rq, &id, &ret) ? rest_jm_environment(rq) : ret;
}

/* Flink's GeneratedLogUrlHandler: the pattern of
 * historyserver.log.{jobmanager,taskmanager}.url-pattern with <jobid> and
 * <tmid> filled in; 404 when it is not configured. */
static enum MHD_Result
rest_log_url(struct rest_request *rq, const struct config_option *opt, const char *tm)
{
    const char *pattern = NULL;
    enum MHD_Result ret;
    spate_id id;
    char url[2048];
    size_t n = 0;

    if (!rest_known_job(rq, &id, &ret))
        return ret;
    if (config_get_string(rq->rs->conf, opt, &pattern, NULL) != 0 || pattern == NULL)
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND, "Log url pattern (%s) is not configured.",
                          opt->key);
    for (const char *p = pattern; *p != '\0' && n < sizeof url - 1;) {
        const char *sub = NULL;

        if (strncmp(p, "<jobid>", 7) == 0) {
            sub = id_str(&id).s;
            p += 7;
        } else if (tm != NULL && strncmp(p, "<tmid>", 6) == 0) {
            sub = tm;
            p += 6;
        }
        if (sub != NULL)
            n += (size_t)snprintf(url + n, sizeof url - n, "%s", sub);
        else
            url[n++] = *p++;
        if (n >= sizeof url)
            n = sizeof url - 1;
    }
    url[n] = '\0';
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:s}", "url", url));
}

static enum MHD_Result
rest_jm_log_url(struct rest_request *rq)
{
    return rest_log_url(rq, CFG(HISTORYSERVER_LOG_JOBMANAGER_URL_PATTERN), NULL);
}

static enum MHD_Result
rest_tm_log_url(struct rest_request *rq)
{
    spate_id tm;

    if (id_parse(rq->params[1], &tm, NULL) != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s' is not a TaskManager id",
                          rq->params[1]);
    return rest_log_url(rq, CFG(HISTORYSERVER_LOG_TASKMANAGER_URL_PATTERN), id_str(&tm).s);
}

/* ---- cluster data sets: spate keeps no intermediate results ------------- */

static enum MHD_Result
rest_datasets(struct rest_request *rq)
{
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:[]}", "dataSets"));
}

/* DELETE /datasets/:datasetid: Flink releases the partitions of the set,
 * none here, so the deletion is complete at once; its trigger id is the
 * data set's, which GET /datasets/delete/:triggerid accepts. */
static enum MHD_Result
rest_dataset_delete(struct rest_request *rq)
{
    spate_id id;

    if (id_parse(rq->params[0], &id, NULL) != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: '%s' is not an IntermediateDataSetID", rq->params[0]);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED, json_pack("{s:s}", "request-id", id_str(&id).s));
}

static enum MHD_Result
rest_dataset_delete_status(struct rest_request *rq)
{
    spate_id id;

    if (id_parse(rq->params[0], &id, NULL) != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s' is not a trigger id",
                          rq->params[0]);
    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:{s:s}, s:{}}", "status", "id", "COMPLETED", "operation"));
}

const struct rest_route rest_jobmanager_routes[] = {
    { "GET", "/jobmanager/config", rest_jm_config, REST_BODY_NONE, 0 },
    { "GET", "/jobmanager/environment", rest_jm_environment, REST_BODY_NONE, 0 },
    { "GET", "/jobmanager/logs", rest_jm_logs, REST_BODY_NONE, 0 },
    { "GET", "/jobmanager/logs/:filename", rest_jm_log_file, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/jobmanager/config", rest_job_jm_config, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/jobmanager/environment", rest_job_jm_environment, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/jobmanager/log-url", rest_jm_log_url, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/taskmanagers/:taskmanagerid/log-url", rest_tm_log_url, REST_BODY_NONE,
      0 },
    { "GET", "/datasets", rest_datasets, REST_BODY_NONE, 0 },
    { "DELETE", "/datasets/:datasetid", rest_dataset_delete, REST_BODY_NONE, 0 },
    { "GET", "/datasets/delete/:triggerid", rest_dataset_delete_status, REST_BODY_NONE, 0 },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};

/* Unit tests of src/metrics/prometheus_reporter.c: Flink's Prometheus
 * names and labels in the text format, each family once, and the HTTP
 * server on a port range. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "metrics/prometheus_reporter.h"

static size_t
count(const char *text, const char *what)
{
    size_t n = 0;

    for (const char *p = text; (p = strstr(p, what)) != NULL; p++)
        n++;
    return n;
}

Test(prometheus, flink_names_labels_and_one_family_each)
{
    struct metric_registry *r = metric_registry_new();
    const char *l0[] = { "job_name", "say \"hi\"\\now\n", "subtask_index", "0", NULL };
    const char *l1[] = { "job_name", "j", "subtask_index", "1", NULL };
    struct metric_group *a = metric_group_new_scoped(r, "a", "taskmanager_job_task", l0);
    struct metric_group *tm = metric_group_new_scoped(r, "tm", "taskmanager", NULL);
    struct metric_group *b = metric_group_new_scoped(r, "b", "taskmanager_job_task", l1);
    struct metric_counter ca = { 0 }, cb = { 0 };
    struct metric_gauge g = { 0 };
    size_t len;
    char *text;

    metric_group_counter(a, "numRecordsIn", &ca);
    metric_group_counter(b, "numRecordsIn", &cb);
    metric_group_gauge(tm, "Status.Process.Memory.RSS", &g);
    metric_group_meter(a, "numRecordsInPerSecond", &ca);
    metric_counter_add(&ca, 42);
    metric_counter_add(&cb, 7);
    metric_gauge_set(&g, -5);
    text = prometheus_text(&r, 1, &len);
    cr_assert_eq(strlen(text), len);
    cr_assert_eq(count(text, "# TYPE flink_taskmanager_job_task_numRecordsIn gauge\n"), 1, "%s",
                 text);
    cr_assert_eq(count(text, "# HELP flink_taskmanager_job_task_numRecordsIn numRecordsIn (scope: "
                             "taskmanager_job_task)\n"),
                 1);
    cr_assert_not_null(strstr(text, "flink_taskmanager_job_task_numRecordsIn{job_name=\"say "
                                    "\\\"hi\\\"\\\\now\\n\",subtask_index=\"0\"} 42\n"),
                       "%s", text);
    cr_assert_not_null(strstr(
        text, "flink_taskmanager_job_task_numRecordsIn{job_name=\"j\",subtask_index=\"1\"} 7\n"));
    /* Dots are not allowed in Prometheus names: Flink's filter makes them '_'. */
    cr_assert_not_null(strstr(text, "flink_taskmanager_Status_Process_Memory_RSS -5\n"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "flink_taskmanager_job_task_numRecordsInPerSecond{"));
    /* A family's series stand together. */
    {
        const char *first = strstr(text, "flink_taskmanager_job_task_numRecordsIn{");
        const char *next = strstr(first + 1, "\n") + 1;

        cr_assert(strncmp(next, "flink_taskmanager_job_task_numRecordsIn{", 40) == 0, "%s", text);
    }
    free(text);
    metric_group_free(a);
    metric_group_free(b);
    metric_group_free(tm);
    metric_registry_free(r);
}

Test(prometheus, operator_groups_and_histograms_as_flinks_reporter)
{
    struct metric_registry *r = metric_registry_new();
    const char *tl[] = { "task_name", "Map", "subtask_index", "0", NULL };
    const char *ol[] = { "operator_id", "ab", "operator_name", "Map", NULL };
    struct metric_group *task = metric_group_new_scoped(r, "t", "taskmanager_job_task", tl);
    struct metric_group *op =
        metric_group_new_child(task, "taskmanager_job_task_operator", ol, "Map.");
    struct metric_histogram h;
    struct metric_value v = { 0 };
    size_t len;
    char *text;
    double x;

    metric_histogram_init(&h, 10);
    for (int i = 1; i <= 14; i++) /* holds 5..14 */
        metric_histogram_update(&h, i);
    metric_value_set(&v, 2.5);
    metric_group_histogram(op, "lat", &h);
    metric_group_value(op, "MyGroup.ratio", &v);
    text = prometheus_text(&r, 1, &len);
    /* The operator's variables after its task's; the name without its
     * group's prefix; a summary with Flink's quantiles and a count. */
    cr_assert_not_null(strstr(text, "# TYPE flink_taskmanager_job_task_operator_lat summary\n"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "flink_taskmanager_job_task_operator_lat{task_name=\"Map\","
                                    "subtask_index=\"0\",operator_id=\"ab\",operator_name=\"Map\","
                                    "quantile=\"0.5\"} 9.5\n"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "quantile=\"0.999\"} 14\n"), "%s", text);
    cr_assert_not_null(strstr(text, "flink_taskmanager_job_task_operator_lat_count{task_name="),
                       "%s", text);
    cr_assert_not_null(strstr(text, "\"} 14\n"), "%s", text);
    cr_assert_null(strstr(text, "lat_min"), "%s", text);
    cr_assert_eq(count(text, "# TYPE flink_taskmanager_job_task_operator_lat"), 1, "%s", text);
    cr_assert_not_null(strstr(text, "flink_taskmanager_job_task_operator_MyGroup_ratio{"), "%s",
                       text);
    free(text);
    /* Where the scope names them (dumps, REST): the prefix and the parts. */
    cr_assert_eq(metric_registry_get(r, "t", "Map.lat_min", &x), 0);
    cr_assert_eq(x, 5.0);
    cr_assert_eq(metric_registry_get(r, "t", "Map.lat_max", &x), 0);
    cr_assert_eq(x, 14.0);
    cr_assert_eq(metric_registry_get(r, "t", "Map.lat_median", &x), 0);
    cr_assert_eq(x, 9.5);
    cr_assert_eq(metric_registry_get(r, "t", "Map.lat_p90", &x), 0);
    cr_assert_float_eq(x, 13.9, 1e-9);
    cr_assert_eq(metric_registry_get(r, "t", "Map.MyGroup.ratio", &x), 0);
    cr_assert_eq(x, 2.5);
    cr_assert_eq(metric_registry_get(r, "t", "Map.lat_count", &x), SPATE_ENOENT);
    cr_assert_eq(metric_registry_get(r, "t", "lat_min", &x), SPATE_ENOENT);
    metric_group_free(op);
    metric_group_free(task);
    metric_histogram_release(&h);
    metric_registry_free(r);
}

/* GET path on 127.0.0.1:port: the status code and the body into buf. */
static int
http_get(int port, const char *method, const char *path, char *buf, size_t cap)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0), code = -1;
    size_t n = 0;
    ssize_t k;
    char req[256];

    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    cr_assert(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: x\r\n\r\n", method, path);
    cr_assert(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = '\0';
    close(fd);
    sscanf(buf, "HTTP/1.%*d %d", &code);
    return code;
}

static int refreshed;

static void
refresh(void *arg)
{
    metric_gauge_set(arg, ++refreshed);
}

Test(prometheus, serves_on_the_first_free_port_of_a_range)
{
    struct metric_registry *r = metric_registry_new();
    struct metric_group *g = metric_group_new_scoped(r, "jm", "jobmanager", NULL);
    struct metric_gauge v = { 0 };
    struct prometheus_reporter *p1, *p2;
    struct prometheus_reporter_options o = { .bind_host = "127.0.0.1", .port = "0" };
    spate_error err = { 0 };
    char range[32], buf[8192];

    metric_group_gauge(g, "numRunningJobs", &v);
    cr_assert_eq(prometheus_reporter_start(&r, 1, &o, &p1, &err), 0, "%s", err.message);
    /* A range that starts at p1's port: the second takes the next one. */
    snprintf(range, sizeof range, "%d-%d", prometheus_reporter_port(p1),
             prometheus_reporter_port(p1) + 40 > 65535 ? 65535 : prometheus_reporter_port(p1) + 40);
    o.port = range;
    o.refresh = refresh;
    o.arg = &v;
    cr_assert_eq(prometheus_reporter_start(&r, 1, &o, &p2, &err), 0, "%s", err.message);
    cr_assert_gt(prometheus_reporter_port(p2), prometheus_reporter_port(p1));
    cr_assert_eq(http_get(prometheus_reporter_port(p2), "GET", "/metrics", buf, sizeof buf), 200);
    cr_assert_not_null(strstr(buf, "Content-Type: text/plain; version=0.0.4"), "%s", buf);
    cr_assert_not_null(strstr(buf, "\r\n\r\n# HELP flink_jobmanager_numRunningJobs"), "%s", buf);
    cr_assert_not_null(strstr(buf, "flink_jobmanager_numRunningJobs 1\n"), "refreshed: %s", buf);
    cr_assert_eq(http_get(prometheus_reporter_port(p2), "GET", "/other", buf, sizeof buf), 404);
    cr_assert_eq(http_get(prometheus_reporter_port(p2), "POST", "/metrics", buf, sizeof buf), 405);
    prometheus_reporter_stop(p2);
    prometheus_reporter_stop(p1);

    /* A range with no free port, a bad range: errors that say so. */
    cr_assert_eq(prometheus_reporter_start(
                     &r, 1, &(struct prometheus_reporter_options){ .port = "9-x" }, &p1, &err),
                 SPATE_EINVAL);
    cr_assert_not_null(strstr(err.message, "metrics.reporter.prom.port"), "%s", err.message);
    cr_assert_neq(prometheus_reporter_start(
                      &r, 1,
                      &(struct prometheus_reporter_options){ .bind_host = "nowhere", .port = "0" },
                      &p1, &err),
                  0);
    cr_assert_not_null(strstr(err.message, "nowhere"), "%s", err.message);
    metric_group_free(g);
    metric_registry_free(r);
}

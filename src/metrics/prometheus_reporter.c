/* The Prometheus reporter (prometheus_reporter.h): libmicrohttpd with one
 * internal thread, which formats the registry's snapshot on each scrape. */
#include <arpa/inet.h>
#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/log.h"
#include "metrics/prometheus_reporter.h"

#define PROM_LOG "metrics"

struct prometheus_reporter {
    struct metric_registry **registries;
    size_t nregistries;
    struct MHD_Daemon *daemon;
    void (*refresh)(void *arg);
    void *arg;
    int port;
};

/* ---- the text format ---- */

struct text {
    char *buf;
    size_t len, cap;
};

static void
text_add(struct text *t, const char *s, size_t n)
{
    xgrow((void **)&t->buf, &t->cap, t->len + n + 1, 1);
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void
text_str(struct text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* Flink's CHARACTER_FILTER: [^a-zA-Z0-9:_] -> '_'. */
static void
text_name(struct text *t, const char *s)
{
    for (; *s != '\0'; s++) {
        char c = *s;

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == ':'))
            c = '_';
        text_add(t, &c, 1);
    }
}

/* HELP text: Prometheus escapes backslash and newline. */
static void
text_help(struct text *t, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\')
            text_str(t, "\\\\");
        else if (*s == '\n')
            text_str(t, "\\n");
        else
            text_add(t, s, 1);
    }
}

static void
text_family(struct text *t, const struct metric_sample *s)
{
    text_str(t, "flink_");
    if (s->kind[0] != '\0') {
        text_name(t, s->kind);
        text_str(t, "_");
    }
    text_name(t, s->family);
}

static void
text_value(struct text *t, const struct metric_sample *s)
{
    char v[40];

    if (s->integral)
        snprintf(v, sizeof v, "%lld", (long long)s->int_value);
    else if (isnan(s->value))
        snprintf(v, sizeof v, "NaN");
    else if (isinf(s->value))
        snprintf(v, sizeof v, "%s", s->value > 0 ? "+Inf" : "-Inf");
    else
        snprintf(v, sizeof v, "%.17g", s->value);
    text_str(t, v);
}

/* Orders pointers into one sample array by family (kind, then name), then
 * by place in the array (registration order). */
static int
family_cmp(const void *a, const void *b)
{
    const struct metric_sample *x = *(const struct metric_sample *const *)a;
    const struct metric_sample *y = *(const struct metric_sample *const *)b;
    int c = strcmp(x->kind, y->kind);

    if (c == 0)
        c = strcmp(x->family, y->family);
    if (c == 0)
        c = x < y ? -1 : x > y;
    return c;
}

static bool
same_family(const struct metric_sample *x, const struct metric_sample *y)
{
    return strcmp(x->kind, y->kind) == 0 && strcmp(x->family, y->family) == 0;
}

char *
prometheus_text(struct metric_registry *const *rs, size_t nr, size_t *len)
{
    struct metric_sample **s = xcalloc(nr > 0 ? nr : 1, sizeof *s);
    size_t *ns = xcalloc(nr > 0 ? nr : 1, sizeof *ns), n = 0;
    const struct metric_sample **order;
    struct text t = { 0 };

    for (size_t i = 0; i < nr; i++)
        n += ns[i] = metric_registry_snapshot(rs[i], &s[i]);
    order = xmalloc((n > 0 ? n : 1) * sizeof *order);
    n = 0;
    for (size_t i = 0; i < nr; i++)
        for (size_t j = 0; j < ns[i]; j++)
            if (s[i][j].audience & METRIC_FOR_REPORTER)
                order[n++] = &s[i][j];
    text_add(&t, "", 0);
    qsort(order, n, sizeof *order, family_cmp);
    for (size_t k = 0; k < n; k++) {
        const struct metric_sample *m = order[k];

        if (k == 0 || !same_family(order[k - 1], m)) {
            text_str(&t, "# HELP ");
            text_family(&t, m);
            text_str(&t, " ");
            text_help(&t, m->family);
            text_str(&t, " (scope: ");
            text_str(&t, m->kind);
            text_str(&t, ")\n# TYPE ");
            text_family(&t, m);
            /* a histogram is a summary, as Flink's reporter exports it */
            text_str(&t, m->part != NULL ? " summary\n" : " gauge\n");
        }
        text_family(&t, m);
        if (m->part != NULL)
            text_str(&t, m->part);
        if (m->labels[0] != '\0' || m->quantile > 0) {
            text_str(&t, "{");
            text_str(&t, m->labels);
            if (m->quantile > 0) {
                char q[32];

                snprintf(q, sizeof q, "%squantile=\"%g\"", m->labels[0] != '\0' ? "," : "",
                         m->quantile);
                text_str(&t, q);
            }
            text_str(&t, "}");
        }
        text_str(&t, " ");
        text_value(&t, m);
        text_str(&t, "\n");
    }
    free(order);
    for (size_t i = 0; i < nr; i++)
        metric_samples_free(s[i], ns[i]);
    free(s);
    free(ns);
    *len = t.len;
    return t.buf;
}

/* ---- the HTTP server ---- */

static enum MHD_Result
prom_answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
            const char *version, const char *upload_data, size_t *upload_size, void **state)
{
    struct prometheus_reporter *p = cls;
    struct MHD_Response *resp;
    enum MHD_Result ret;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    char *body;
    size_t len;

    (void)version;
    (void)upload_data;
    if (*state == NULL) { /* the headers: answer once the (empty) body is in */
        *state = p;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        *upload_size = 0; /* a scrape has no body: drop what comes */
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        body = xasprintf("%s is not allowed: the Prometheus reporter answers GET\n", method);
        len = strlen(body);
    } else if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
        status = MHD_HTTP_NOT_FOUND;
        body = xasprintf("no %s here: metrics are at /metrics\n", url);
        len = strlen(body);
    } else {
        if (p->refresh != NULL)
            p->refresh(p->arg);
        body = prometheus_text(p->registries, p->nregistries, &len);
    }
    resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
                            status == MHD_HTTP_OK ? type : "text/plain; charset=utf-8");
    ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static void prom_log(void *arg, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void
prom_log(void *arg, const char *fmt, va_list ap)
{
    char msg[256];

    (void)arg;
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    SPATE_LOG_DEBUG(PROM_LOG, "prometheus reporter: %s", msg);
}

int
prometheus_reporter_start(struct metric_registry *const *rs, size_t n,
                          const struct prometheus_reporter_options *o,
                          struct prometheus_reporter **out, spate_error *err)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    const union MHD_DaemonInfo *info;
    struct prometheus_reporter *p;
    const char *host = o->bind_host != NULL ? o->bind_host : "127.0.0.1";
    int lo, hi;

    if (config_parse_port_range(o->port, &lo, &hi, err) != 0)
        return spate_error_wrap(err, "metrics.reporter.prom.port");
    if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &sa.sin_addr) != 1)
        return spate_error_set(err, SPATE_ECONFIG,
                               "the Prometheus reporter's bind host '%s' is not an IPv4 address",
                               host);
    p = xcalloc(1, sizeof *p);
    p->registries = xmalloc((n > 0 ? n : 1) * sizeof *p->registries);
    memcpy(p->registries, rs, n * sizeof *rs);
    p->nregistries = n;
    p->refresh = o->refresh;
    p->arg = o->arg;
    for (int port = lo; port <= hi && p->daemon == NULL; port++) {
        sa.sin_port = htons((uint16_t)port);
        /* One thread that polls: scrapes are short and few. */
        p->daemon = MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG, (uint16_t)port,
            NULL, NULL, prom_answer, p, MHD_OPTION_EXTERNAL_LOGGER, prom_log, NULL,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_TIMEOUT,
            (unsigned)30, MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    }
    if (p->daemon == NULL) {
        free(p->registries);
        free(p);
        return spate_error_set(err, SPATE_EADDRINUSE,
                               "cannot start the Prometheus reporter on %s:%s (no free port)", host,
                               o->port);
    }
    info = MHD_get_daemon_info(p->daemon, MHD_DAEMON_INFO_BIND_PORT);
    p->port = info != NULL ? info->port : lo;
    *out = p;
    return 0;
}

int
prometheus_reporter_from_config(const struct config *conf, struct metric_registry *const *rs,
                                size_t n, const struct prometheus_reporter_options *o,
                                struct prometheus_reporter **out, spate_error *err)
{
    struct prometheus_reporter_options po = *o;
    const char *factory = NULL, *names = NULL;
    int rc;

    *out = NULL;
    if (!config_is_set(conf, CFG(METRICS_REPORTER_PROM_FACTORY_CLASS)))
        return 0;
    if ((rc = config_get_string(conf, CFG(METRICS_REPORTER_PROM_FACTORY_CLASS), &factory, err)) !=
            0 ||
        (rc = config_get_string(conf, CFG(METRICS_REPORTER_PROM_PORT), &po.port, err)) != 0)
        return rc;
    if (config_is_set(conf, CFG(METRICS_REPORTERS)) &&
        (rc = config_get_string(conf, CFG(METRICS_REPORTERS), &names, err)) != 0)
        return rc;
    if (strcmp(factory, "org.apache.flink.metrics.prometheus.PrometheusReporterFactory") != 0 &&
        strcmp(factory, "org.apache.flink.metrics.prometheus.PrometheusReporter") != 0 &&
        strcasecmp(factory, "prometheus") != 0)
        return spate_error_set(err, SPATE_ECONFIG,
                               "metrics.reporter.prom.factory.class: unknown reporter '%s' "
                               "(expected "
                               "org.apache.flink.metrics.prometheus.PrometheusReporterFactory or "
                               "prometheus)",
                               factory);
    if (names != NULL) {
        bool listed = false;

        for (const char *w = names; *w != '\0';) {
            size_t len;

            w += strspn(w, " ,;");
            len = strcspn(w, " ,;");
            if (len == 4 && strncmp(w, "prom", 4) == 0)
                listed = true;
            w += len;
        }
        if (!listed)
            return 0;
    }
    if ((rc = prometheus_reporter_start(rs, n, &po, out, err)) != 0)
        return rc;
    SPATE_LOG_INFO(PROM_LOG, "Prometheus reporter serving http://%s:%d/metrics",
                   po.bind_host != NULL ? po.bind_host : "127.0.0.1", (*out)->port);
    return 0;
}

int
prometheus_reporter_port(const struct prometheus_reporter *p)
{
    return p->port;
}

void
prometheus_reporter_stop(struct prometheus_reporter *p)
{
    if (p == NULL)
        return;
    MHD_stop_daemon(p->daemon);
    free(p->registries);
    free(p);
}

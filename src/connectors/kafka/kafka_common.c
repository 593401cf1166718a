/* What the Kafka source and sink share (kafka_int.h), and the plugin's
 * entry point. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/kafka/kafka_int.h"

static const struct connector_plugin kafka_plugin = {
    .abi_version = CONNECTOR_ABI_VERSION,
    .name = "kafka",
    .source = &kafka_source_ops,
    .sink = &kafka_sink_ops,
};

__attribute__((visibility("default"))) const struct connector_plugin *
spate_connector_plugin(void)
{
    return &kafka_plugin;
}

int
kafka_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

const char *
kafka_option(const struct connector_context *ctx, const char *key)
{
    for (size_t i = 0; i < ctx->noptions; i++)
        if (strcmp(ctx->options[2 * i], key) == 0)
            return ctx->options[2 * i + 1];
    return NULL;
}

int
kafka_check_options(const struct connector_context *ctx, const char *const *known, char *err,
                    size_t errlen)
{
    for (size_t i = 0; i < ctx->noptions; i++) {
        const char *key = ctx->options[2 * i];
        bool ok = strncmp(key, "properties.", 11) == 0 && key[11] != '\0';

        for (const char *const *k = known; !ok && *k != NULL; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return kafka_fail(err, errlen,
                              "kafka connector: unsupported option '%s' (supported: %s%s "
                              "properties.*)",
                              key, known[0], known[1] ? ", ..." : ",");
    }
    if (kafka_option(ctx, "properties.bootstrap.servers") == NULL)
        return kafka_fail(err, errlen,
                          "kafka connector: the option 'properties.bootstrap.servers' is required");
    return 0;
}

static void
kafka_log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    const struct connector_context *ctx = rd_kafka_opaque(rk);
    char line[1024];

    if (ctx == NULL || ctx->log == NULL)
        return;
    snprintf(line, sizeof line, "librdkafka %s: %s", fac, buf);
    /* syslog levels: 3 error, 4 warning, the rest information. */
    ctx->log(ctx->log_arg,
             level <= 3   ? CONNECTOR_LOG_ERROR
             : level == 4 ? CONNECTOR_LOG_WARN
                          : CONNECTOR_LOG_INFO,
             line);
}

rd_kafka_conf_t *
kafka_conf_new(const struct connector_context *ctx, const char *const *extra, char *err,
               size_t errlen)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char why[512];

    for (const char *const *e = extra; e != NULL && *e != NULL; e += 2)
        if (rd_kafka_conf_set(conf, e[0], e[1], why, sizeof why) != RD_KAFKA_CONF_OK) {
            kafka_fail(err, errlen, "kafka connector: librdkafka refuses '%s': %s", e[0], why);
            goto fail;
        }
    for (size_t i = 0; i < ctx->noptions; i++) {
        const char *key = ctx->options[2 * i];

        if (strncmp(key, "properties.", 11) != 0)
            continue;
        if (rd_kafka_conf_set(conf, key + 11, ctx->options[2 * i + 1], why, sizeof why) !=
            RD_KAFKA_CONF_OK) {
            kafka_fail(err, errlen, "kafka connector: option '%s' = '%s': %s", key,
                       ctx->options[2 * i + 1], why);
            goto fail;
        }
    }
    rd_kafka_conf_set_log_cb(conf, kafka_log_cb);
    rd_kafka_conf_set_opaque(conf, (void *)ctx);
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

int
kafka_check_properties(const struct connector_context *ctx, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = kafka_conf_new(ctx, NULL, err, errlen);

    if (conf == NULL)
        return -1;
    rd_kafka_conf_destroy(conf);
    return 0;
}

int64_t
kafka_parse_duration_ms(const char *s)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = { { "ms", 1 },          { "milli", 1 },   { "millis", 1 },
                  { "s", 1000 },        { "sec", 1000 },  { "second", 1000 },
                  { "seconds", 1000 },  { "min", 60000 }, { "minute", 60000 },
                  { "minutes", 60000 }, { "h", 3600000 }, { "hour", 3600000 },
                  { "hours", 3600000 } };
    char *end;
    long long v;

    if (s == NULL || !isdigit((unsigned char)*s))
        return -1;
    v = strtoll(s, &end, 10);
    while (*end == ' ')
        end++;
    if (*end == '\0')
        return v;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].unit) == 0)
            return v * units[i].ms;
    return -1;
}

int
kafka_split_owner(const char *topic, int32_t partition, int n)
{
    /* Java's String.hashCode of the (ASCII) topic name. */
    int32_t h = 0;

    for (const char *c = topic; *c; c++)
        h = (int32_t)((uint32_t)h * 31u + (uint8_t)*c);
    return (int)(((((uint32_t)h * 31u) & 0x7FFFFFFFu) % (uint32_t)n + (uint32_t)partition) %
                 (uint32_t)n);
}

int64_t
kafka_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The coordinator moving, not there yet, or loading the group's offsets. */
static bool
coordinator_busy(rd_kafka_resp_err_t e)
{
    return e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
           e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           e == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS;
}

rd_kafka_resp_err_t
kafka_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l, int timeout_ms)
{
    int64_t deadline = kafka_now_ms() + timeout_ms, left = timeout_ms;
    int backoff_ms = 50;

    for (;;) {
        rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, (int)left);

        for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < l->cnt; i++)
            e = l->elems[i].err;
        left = deadline - kafka_now_ms();
        if (!coordinator_busy(e) || left <= backoff_ms)
            return e;
        nanosleep(&(struct timespec){ 0, backoff_ms * 1000000L }, NULL);
        left -= backoff_ms;
        backoff_ms = backoff_ms < 500 ? backoff_ms * 2 : 1000;
    }
}

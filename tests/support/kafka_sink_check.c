/* kafka_sink_check: the Kafka sink's two-phase commit recovery, driven
 * through the plugin's interface (connector_plugin.h) against a real broker
 * (tests/e2e/test_kafka.py), for the failure no kill can time: the task
 * dies after its checkpoint completed but before its commit.
 *   kafka_sink_check BROKERS TOPIC PREFIX lost|committed N
 * writes N records "r0".."rN-1" in the transaction of checkpoint 1, then
 * drops the writer without committing (lost) or after committing
 * (committed), and gives its committable to a new writer, as a restore
 * does. A read_committed reader must then see each record once. Exit 0, or
 * 1 with a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/kafka/kafka_int.h"

struct committable {
    unsigned char *bytes;
    size_t len;
};

static void
keep(void *arg, const void *bytes, size_t len)
{
    struct committable *c = arg;

    c->bytes = malloc(len);
    memcpy(c->bytes, bytes, len);
    c->len = len;
}

static void
log_line(void *arg, enum connector_log_level level, const char *msg)
{
    (void)arg;
    fprintf(stderr, "kafka_sink_check: [%d] %s\n", (int)level, msg);
}

int
main(int argc, char **argv)
{
    const struct connector_sink_ops *ops = spate_connector_plugin()->sink;
    struct committable c = { NULL, 0 };
    char err[512], value[32];
    struct connector_context ctx;
    const char *options[10];
    void *w;
    int n;

    if (argc != 6) {
        fprintf(stderr, "usage: kafka_sink_check BROKERS TOPIC PREFIX lost|committed N\n");
        return 1;
    }
    n = atoi(argv[5]);
    options[0] = "properties.bootstrap.servers";
    options[1] = argv[1];
    options[2] = "topic";
    options[3] = argv[2];
    options[4] = "sink.delivery-guarantee";
    options[5] = "exactly-once";
    options[6] = "sink.transactional-id-prefix";
    options[7] = argv[3];
    options[8] = NULL;
    ctx = (struct connector_context){ .options = options,
                                      .noptions = 4,
                                      .operator_name = "check",
                                      .parallelism = 1,
                                      .checkpointing = true,
                                      .log = log_line };
    if ((w = ops->open(&ctx, err, sizeof err)) == NULL)
        goto fail;
    for (int i = 0; i < n; i++) {
        int len = snprintf(value, sizeof value, "r%d", i);

        if (ops->write(w, NULL, 0, value, (size_t)len, INT64_MIN, err, sizeof err) != 0)
            goto fail;
    }
    if (ops->prepare_commit(w, 1, keep, &c, err, sizeof err) != 0)
        goto fail;
    if (strcmp(argv[4], "committed") == 0 && ops->commit(w, 1, err, sizeof err) != 0)
        goto fail;
    ops->close(w); /* as a killed task: what was not committed stays open */
    ctx.attempt = 1;
    if ((w = ops->open(&ctx, err, sizeof err)) == NULL ||
        ops->recover(w, c.bytes, c.len, err, sizeof err) != 0)
        goto fail;
    ops->close(w);
    free(c.bytes);
    return 0;
fail:
    fprintf(stderr, "kafka_sink_check: %s\n", err);
    return 1;
}

/* The Kafka sink's writer and committer (Flink's KafkaWriter and
 * KafkaCommitter) by `sink.delivery-guarantee`: none (records handed to
 * librdkafka), at-least-once (each barrier waits until the brokers have
 * every record written so far) and exactly-once (Kafka transactions: the
 * records between two barriers go in one transaction of its own
 * transactional producer, `<prefix>-<subtask>-<n>` with n one past the
 * last barrier's checkpoint id; the barrier flushes it, marks it with the
 * checkpoint's id as an offset of the group `<prefix>-<subtask>`, committed
 * with the transaction, and makes it a committable that holds its records;
 * the checkpoint's completion commits it). On restore each committable's
 * transaction is finished (initializing its id completes a commit that had
 * begun and aborts one that had not: librdkafka cannot resume another
 * producer's transaction, as Flink's Java producer does by reflection);
 * when its mark is not in the group, the commit never happened and its
 * records are written again in a transaction of their own, with the mark.
 * The transactions earlier attempts may have left open after the
 * checkpoint are aborted, so that read_committed readers never wait for
 * them. Task thread only. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connectors/kafka/kafka_int.h"

/* How many transactional ids past the restored checkpoint's an earlier
 * attempt may have opened (one per barrier that passed the sink while its
 * checkpoint did not complete), aborted on restore. */
#define KAFKA_LINGERING_IDS 5
/* How long a flush or commit waits for the brokers before it tries again
 * (logging), while the task has nothing else to do. */
#define KAFKA_FLUSH_STEP_MS 1000
/* How long the abort of an open transaction, before its producer goes,
 * waits for the brokers (a cancelled task must not block). */
#define KAFKA_ABORT_TIMEOUT_MS 2000

enum guarantee { GUARANTEE_NONE, GUARANTEE_AT_LEAST_ONCE, GUARANTEE_EXACTLY_ONCE };
enum partitioner { PARTITIONER_DEFAULT, PARTITIONER_FIXED, PARTITIONER_ROUND_ROBIN };

/* A transaction prepared at a barrier, committed when its checkpoint
 * completes. */
struct txn {
    rd_kafka_t *rk;
    char *id;
    int64_t checkpoint_id;
};

struct kwriter {
    struct connector_context ctx; /* first: librdkafka's opaque is the writer */
    enum guarantee guarantee;
    enum partitioner partitioner;
    const char *topic;
    const char *prefix;
    const char *bootstrap;
    int32_t npartitions;
    uint32_t round_robin;
    rd_kafka_t *rk; /* the producer now written to (exactly-once: its transaction) */
    rd_kafka_topic_t *rkt;
    char *txn_id;
    int64_t last_checkpoint; /* the last barrier's, or the restored one's */
    bool restored;
    bool aborted_lingering;
    struct txn *pending;
    int npending;
    uint64_t writes;
    /* Exactly-once: the records of the open transaction (key length or
     * UINT32_MAX for none, key, value length or UINT32_MAX for a
     * tombstone, value, timestamp), kept in
     * its committable so that a restore can write them again. */
    uint8_t *log;
    size_t log_len, log_cap;
    bool failed; /* a delivery failed: the message is in failure */
    char failure[512];
};

static const char *const sink_options[] = {
    "topic", "sink.delivery-guarantee", "sink.transactional-id-prefix", "sink.partitioner", NULL,
};

static void kw_log(struct kwriter *w, enum connector_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
kw_log(struct kwriter *w, enum connector_log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (w->ctx.log != NULL)
        w->ctx.log(w->ctx.log_arg, level, line);
}

static void
delivery_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    struct kwriter *w = opaque;

    (void)rk;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && !w->failed) {
        w->failed = true;
        snprintf(w->failure, sizeof w->failure,
                 "kafka sink: a record to topic '%s' was not delivered: %s", w->topic,
                 rd_kafka_err2str(m->err));
    }
}

/* A producer (transactional with id txn_id when not NULL). */
static rd_kafka_t *
producer_new(struct kwriter *w, const char *txn_id, char *err, size_t errlen)
{
    /* Delivery reports of failures only (delivery_cb keeps the first):
     * one of every record delivered would cost a callback each, for
     * nothing; flush still waits until the brokers have every record.
     * Without txn_id the list ends before transactional.id. */
    const char *const extra[] = { "partitioner",
                                  "murmur2_random",
                                  "delivery.report.only.error",
                                  "true",
                                  txn_id != NULL ? "transactional.id" : NULL,
                                  txn_id,
                                  NULL };
    rd_kafka_conf_t *conf = kafka_conf_new(&w->ctx, extra, err, errlen);
    rd_kafka_t *rk;
    char why[512];

    if (conf == NULL)
        return NULL;
    rd_kafka_conf_set_dr_msg_cb(conf, delivery_cb);
    if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why)) == NULL) {
        rd_kafka_conf_destroy(conf);
        kafka_fail(err, errlen, "kafka sink: cannot make a producer: %s", why);
    }
    return rk;
}

/* Initializes the transactions of txn_id on rk: fences every earlier
 * producer of the id, completing a commit it had begun, aborting a
 * transaction it had left open. */
static int
init_transactions(struct kwriter *w, rd_kafka_t *rk, const char *txn_id, char *err, size_t errlen)
{
    rd_kafka_error_t *e = rd_kafka_init_transactions(rk, KAFKA_REQUEST_TIMEOUT_MS * 3);

    if (e == NULL)
        return 0;
    kafka_fail(err, errlen,
               "kafka sink: cannot initialize the transactions of '%s' on the brokers '%s': %s",
               txn_id, w->bootstrap, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return -1;
}

/* Destroys rk, whose transaction txn_id is open (begun, never committed),
 * aborting the transaction first. librdkafka 2.0.2 must not be destroyed
 * while a partition of an open transaction waits for its registration on
 * the coordinator (due 1 ms after the partition's first record, or once
 * the coordinator answers): the destroy stops the broker threads while
 * the main thread, in its last turn, sends AddPartitionsToTxn; the
 * coordinator's thread fails the request at once and runs its handler,
 * which asserts that the request was counted (txn_req_cnt > 0) before
 * the main thread counts it, and the process aborts. The abort's first
 * step, local and at once, takes the transaction out of InTransaction and
 * drops the partitions waiting, so that nothing registers any more, even
 * when the brokers do not answer the rest of the abort in time (then the
 * next attempt's fencing aborts the transaction, as before). */
static void
destroy_open(struct kwriter *w, rd_kafka_t *rk, const char *txn_id)
{
    rd_kafka_error_t *e = rd_kafka_abort_transaction(rk, KAFKA_ABORT_TIMEOUT_MS);

    if (e != NULL) {
        kw_log(w, CONNECTOR_LOG_INFO,
               "abort of transaction '%s' before its producer goes: %s (its id's next "
               "producer aborts it)",
               txn_id, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_destroy(rk);
}

static int
parse_options(struct kwriter *w, char *err, size_t errlen)
{
    const char *g = kafka_option(&w->ctx, "sink.delivery-guarantee");
    const char *p = kafka_option(&w->ctx, "sink.partitioner");

    if (kafka_check_options(&w->ctx, sink_options, err, errlen) != 0)
        return -1;
    w->bootstrap = kafka_option(&w->ctx, "properties.bootstrap.servers");
    if ((w->topic = kafka_option(&w->ctx, "topic")) == NULL || !*w->topic ||
        strchr(w->topic, ';') != NULL)
        return kafka_fail(err, errlen, "kafka sink: the option 'topic' (one topic) is required");
    w->guarantee = GUARANTEE_AT_LEAST_ONCE; /* Flink's default */
    if (g == NULL || strcmp(g, "at-least-once") == 0)
        w->guarantee = GUARANTEE_AT_LEAST_ONCE;
    else if (strcmp(g, "none") == 0)
        w->guarantee = GUARANTEE_NONE;
    else if (strcmp(g, "exactly-once") == 0)
        w->guarantee = GUARANTEE_EXACTLY_ONCE;
    else
        return kafka_fail(err, errlen,
                          "kafka sink: 'sink.delivery-guarantee' '%s' is not one of none, "
                          "at-least-once, exactly-once",
                          g);
    w->prefix = kafka_option(&w->ctx, "sink.transactional-id-prefix");
    if (w->guarantee == GUARANTEE_EXACTLY_ONCE && (w->prefix == NULL || !*w->prefix))
        return kafka_fail(err, errlen,
                          "kafka sink: exactly-once needs 'sink.transactional-id-prefix' (unique "
                          "to this sink across every job writing to these brokers)");
    if (w->guarantee == GUARANTEE_EXACTLY_ONCE && !w->ctx.checkpointing)
        return kafka_fail(err, errlen,
                          "kafka sink: exactly-once commits at checkpoints: enable "
                          "checkpointing, or use at-least-once");
    if (p == NULL || strcmp(p, "default") == 0)
        w->partitioner = PARTITIONER_DEFAULT;
    else if (strcmp(p, "fixed") == 0)
        w->partitioner = PARTITIONER_FIXED;
    else if (strcmp(p, "round-robin") == 0)
        w->partitioner = PARTITIONER_ROUND_ROBIN;
    else
        return kafka_fail(err, errlen,
                          "kafka sink: 'sink.partitioner' '%s' is not one of default, fixed, "
                          "round-robin%s",
                          p,
                          strchr(p, '.') != NULL ? " (a partitioner class of Flink's is Java, "
                                                   "which spate cannot load)"
                                                 : "");
    return 0;
}

/* The options checked at submission: parse_options on a writer that is
 * never opened, and the properties.* that librdkafka would refuse. */
static int
kw_check(const struct connector_context *ctx, char *err, size_t errlen)
{
    struct kwriter w = { .ctx = *ctx };

    if (parse_options(&w, err, errlen) != 0)
        return -1;
    return kafka_check_properties(ctx, err, errlen);
}

/* Checks that the topic is there and counts its partitions. */
static int
read_topic(struct kwriter *w, rd_kafka_t *rk, char *err, size_t errlen)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, w->topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, KAFKA_REQUEST_TIMEOUT_MS);
    int rc = 0;

    rd_kafka_topic_destroy(rkt);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return kafka_fail(err, errlen,
                          "kafka sink: cannot reach the Kafka brokers '%s' in %d "
                          "ms: %s",
                          w->bootstrap, KAFKA_REQUEST_TIMEOUT_MS, rd_kafka_err2str(e));
    if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR ||
        md->topics[0].partition_cnt == 0)
        rc =
            kafka_fail(err, errlen, "kafka sink: topic '%s' does not exist on the brokers '%s'%s%s",
                       w->topic, w->bootstrap, md->topic_cnt == 1 ? ": " : "",
                       md->topic_cnt == 1 ? rd_kafka_err2str(md->topics[0].err) : "");
    else
        w->npartitions = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return rc;
}

static void kw_close(void *writer);

static void *
kw_open(const struct connector_context *ctx, char *err, size_t errlen)
{
    struct kwriter *w = calloc(1, sizeof *w);
    rd_kafka_t *probe;

    if (w == NULL) {
        kafka_fail(err, errlen, "kafka sink: out of memory");
        return NULL;
    }
    w->ctx = *ctx;
    if (parse_options(w, err, errlen) != 0)
        goto fail;
    /* The exactly-once producers come with their transactions; the plain
     * one now. Either way the topic must be there. */
    if ((probe = producer_new(w, NULL, err, errlen)) == NULL)
        goto fail;
    if (read_topic(w, probe, err, errlen) != 0) {
        rd_kafka_destroy(probe);
        goto fail;
    }
    if (w->guarantee == GUARANTEE_EXACTLY_ONCE) {
        rd_kafka_destroy(probe);
    } else {
        w->rk = probe;
        w->rkt = rd_kafka_topic_new(w->rk, w->topic, NULL);
    }
    return w;
fail:
    kw_close(w);
    return NULL;
}

static void
kw_close(void *writer)
{
    struct kwriter *w = writer;

    if (w == NULL)
        return;
    if (w->rkt != NULL)
        rd_kafka_topic_destroy(w->rkt);
    if (w->rk != NULL && w->guarantee == GUARANTEE_EXACTLY_ONCE) {
        /* An open transaction: aborted within KAFKA_ABORT_TIMEOUT_MS (a
         * task that is cancelled must not block), else left to the next
         * attempt's abort or the broker's timeout. */
        destroy_open(w, w->rk, w->txn_id);
    } else if (w->rk != NULL) {
        rd_kafka_flush(w->rk, KAFKA_FLUSH_STEP_MS);
        rd_kafka_destroy(w->rk);
    }
    free(w->txn_id);
    for (int i = 0; i < w->npending; i++) {
        rd_kafka_destroy(w->pending[i].rk);
        free(w->pending[i].id);
    }
    free(w->pending);
    free(w->log);
    free(w);
}

/* Aborts what the transactional ids id_from .. id_from+n-1 of subtask s
 * left open (initializing an id fences and aborts). */
static int
abort_ids(struct kwriter *w, int subtask, int64_t id_from, int n, char *err, size_t errlen)
{
    for (int64_t k = id_from; k < id_from + n; k++) {
        char id[512];
        rd_kafka_t *rk;
        int rc;

        snprintf(id, sizeof id, "%s-%d-%" PRId64, w->prefix, subtask, k);
        if ((rk = producer_new(w, id, err, errlen)) == NULL)
            return -1;
        rc = init_transactions(w, rk, id, err, errlen);
        rd_kafka_destroy(rk);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Exactly-once: a producer and an open transaction to write to. */
static int
ensure_transaction(struct kwriter *w, char *err, size_t errlen)
{
    rd_kafka_error_t *e;
    char id[512];

    if (w->rk != NULL)
        return 0;
    if (!w->aborted_lingering) {
        /* The first transaction of a restarted attempt: its own id fences
         * the earlier attempt's; the ids after it are aborted here. */
        if ((w->restored || w->ctx.attempt > 0) &&
            abort_ids(w, w->ctx.subtask, w->last_checkpoint + 1, KAFKA_LINGERING_IDS, err,
                      errlen) != 0)
            return -1;
        w->aborted_lingering = true;
    }
    snprintf(id, sizeof id, "%s-%d-%" PRId64, w->prefix, w->ctx.subtask, w->last_checkpoint + 1);
    if ((w->rk = producer_new(w, id, err, errlen)) == NULL)
        return -1;
    if (init_transactions(w, w->rk, id, err, errlen) != 0)
        goto fail;
    if ((e = rd_kafka_begin_transaction(w->rk)) != NULL) {
        kafka_fail(err, errlen, "kafka sink: cannot begin a transaction of '%s': %s", id,
                   rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        goto fail;
    }
    w->txn_id = strdup(id);
    w->rkt = rd_kafka_topic_new(w->rk, w->topic, NULL);
    return 0;
fail:
    rd_kafka_destroy(w->rk);
    w->rk = NULL;
    return -1;
}

static int32_t
partition_of(struct kwriter *w)
{
    switch (w->partitioner) {
    case PARTITIONER_FIXED:
        return w->ctx.subtask % w->npartitions;
    case PARTITIONER_ROUND_ROBIN:
        return (int32_t)(w->round_robin++ % (uint32_t)w->npartitions);
    default:
        return RD_KAFKA_PARTITION_UA;
    }
}

static void
log_put(struct kwriter *w, const void *p, size_t n)
{
    if (w->log_len + n > w->log_cap) {
        size_t cap = w->log_cap ? w->log_cap : 4096;

        while (cap < w->log_len + n)
            cap *= 2;
        if ((w->log = realloc(w->log, cap)) == NULL)
            abort(); /* control-plane sized: out of memory ends the process */
        w->log_cap = cap;
    }
    memcpy(w->log + w->log_len, p, n);
    w->log_len += n;
}

static void
log_record(struct kwriter *w, const void *key, size_t key_len, const void *value, size_t value_len,
           int64_t timestamp_ms)
{
    uint32_t kl = key ? (uint32_t)key_len : UINT32_MAX;
    uint32_t vl = value ? (uint32_t)value_len : UINT32_MAX;

    log_put(w, &kl, 4);
    if (key)
        log_put(w, key, key_len);
    log_put(w, &vl, 4);
    if (value)
        log_put(w, value, value_len);
    log_put(w, &timestamp_ms, 8);
}

static int
kw_write(void *writer, const void *key, size_t key_len, const void *value, size_t value_len,
         int64_t timestamp_ms, char *err, size_t errlen)
{
    struct kwriter *w = writer;
    int64_t ts = timestamp_ms == INT64_MIN ? 0 : timestamp_ms; /* 0: librdkafka's now */
    int32_t partition;
    rd_kafka_resp_err_t e;

    if (w->guarantee == GUARANTEE_EXACTLY_ONCE && ensure_transaction(w, err, errlen) != 0)
        return -1;
    partition = partition_of(w);
    if ((++w->writes & 255) == 0)
        rd_kafka_poll(w->rk, 0); /* delivery reports */
    if (w->failed)
        return kafka_fail(err, errlen, "%s", w->failure);
    for (;;) {
        if (key == NULL && partition == RD_KAFKA_PARTITION_UA)
            /* A keyless record to the partitioner: librdkafka's defaults,
             * not passed (producev parses every argument it is given). */
            e = rd_kafka_producev(w->rk, RD_KAFKA_V_RKT(w->rkt),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE((void *)value, value_len),
                                  RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_END);
        else
            e = rd_kafka_producev(w->rk, RD_KAFKA_V_RKT(w->rkt), RD_KAFKA_V_PARTITION(partition),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE((void *)value, value_len),
                                  RD_KAFKA_V_KEY((void *)key, key ? key_len : 0),
                                  RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            break;
        /* librdkafka's queue is full: wait for the brokers (backpressure). */
        rd_kafka_poll(w->rk, 10);
        if (w->failed)
            return kafka_fail(err, errlen, "%s", w->failure);
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return kafka_fail(err, errlen, "kafka sink: cannot write to topic '%s': %s", w->topic,
                          rd_kafka_err2str(e));
    if (w->guarantee == GUARANTEE_EXACTLY_ONCE)
        log_record(w, key, key_len, value, value_len, timestamp_ms);
    return 0;
}

/* Waits until the brokers have every record of rk, or one failed. */
static int
flush_all(struct kwriter *w, rd_kafka_t *rk, char *err, size_t errlen)
{
    int waited_ms = 0;

    while (rd_kafka_flush(rk, KAFKA_FLUSH_STEP_MS) == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        waited_ms += KAFKA_FLUSH_STEP_MS;
        if (waited_ms % 10000 == 0)
            kw_log(w, CONNECTOR_LOG_WARN,
                   "waiting %d s for the brokers '%s' to take %d records of topic '%s'",
                   waited_ms / 1000, w->bootstrap, rd_kafka_outq_len(rk), w->topic);
        if (w->failed)
            break;
    }
    if (w->failed)
        return kafka_fail(err, errlen, "%s", w->failure);
    return 0;
}

/* A committable: u8 version 1, i32 subtask, i64 checkpoint id, the
 * transactional id's bytes. */
/* Adds the mark of checkpoint_id to rk's transaction: the offset
 * checkpoint_id of the output topic's partition 0 in the group
 * `<prefix>-<subtask>`, which Kafka commits with the transaction. */
static int
mark_transaction(struct kwriter *w, rd_kafka_t *rk, int32_t subtask, int64_t checkpoint_id,
                 char *err, size_t errlen)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_consumer_group_metadata_t *g;
    rd_kafka_error_t *e;
    char group[600];

    snprintf(group, sizeof group, "%s-%d", w->prefix, subtask);
    g = rd_kafka_consumer_group_metadata_new(group);
    rd_kafka_topic_partition_list_add(l, w->topic, 0)->offset = checkpoint_id;
    e = rd_kafka_send_offsets_to_transaction(rk, l, g, KAFKA_REQUEST_TIMEOUT_MS);
    rd_kafka_consumer_group_metadata_destroy(g);
    rd_kafka_topic_partition_list_destroy(l);
    if (e == NULL)
        return 0;
    kafka_fail(err, errlen,
               "kafka sink: cannot mark the transaction of checkpoint %" PRId64
               " in group '%s': %s",
               checkpoint_id, group, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return -1;
}

/* A committable: u8 version 2, i32 subtask, i64 checkpoint id, u16 length
 * and bytes of the transactional id (empty: nothing was written since the
 * last barrier), then the transaction's records (log_record's form). */
static int
kw_prepare_commit(void *writer, int64_t checkpoint_id, connector_add_fn *add, void *arg, char *err,
                  size_t errlen)
{
    struct kwriter *w = writer;
    int32_t subtask = w->ctx.subtask;
    uint8_t *buf;
    uint16_t idlen;

    if (w->guarantee == GUARANTEE_NONE)
        return 0;
    if (w->guarantee == GUARANTEE_AT_LEAST_ONCE)
        return flush_all(w, w->rk, err, errlen);
    w->last_checkpoint = checkpoint_id;
    if (w->rk != NULL && (flush_all(w, w->rk, err, errlen) != 0 ||
                          mark_transaction(w, w->rk, subtask, checkpoint_id, err, errlen) != 0))
        return -1;
    /* A committable at every barrier, an empty id when nothing was written
     * since the last one: a restored subtask learns the checkpoint's id
     * from it, and so which transactional ids come next. */
    idlen = (uint16_t)(w->rk != NULL ? strlen(w->txn_id) : 0);
    buf = malloc(15 + idlen + w->log_len);
    if (buf == NULL)
        abort();
    buf[0] = 2;
    memcpy(buf + 1, &subtask, 4);
    memcpy(buf + 5, &checkpoint_id, 8);
    memcpy(buf + 13, &idlen, 2);
    if (idlen)
        memcpy(buf + 15, w->txn_id, idlen);
    if (w->log_len)
        memcpy(buf + 15 + idlen, w->log, w->log_len);
    add(arg, buf, 15 + idlen + w->log_len);
    free(buf);
    w->log_len = 0;
    if (w->rk == NULL)
        return 0;
    w->pending = realloc(w->pending, (size_t)(w->npending + 1) * sizeof *w->pending);
    w->pending[w->npending++] = (struct txn){ w->rk, w->txn_id, checkpoint_id };
    rd_kafka_topic_destroy(w->rkt);
    w->rk = NULL;
    w->rkt = NULL;
    w->txn_id = NULL;
    return 0;
}

static int
commit_one(struct kwriter *w, struct txn *t, char *err, size_t errlen)
{
    rd_kafka_error_t *e;

    for (int tries = 0;; tries++) {
        if ((e = rd_kafka_commit_transaction(t->rk, KAFKA_REQUEST_TIMEOUT_MS)) == NULL)
            return 0;
        if (!rd_kafka_error_is_retriable(e) || tries >= 30)
            break;
        kw_log(w, CONNECTOR_LOG_WARN,
               "commit of transaction '%s' (checkpoint %" PRId64 "): %s; trying again", t->id,
               t->checkpoint_id, rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    kafka_fail(err, errlen,
               "kafka sink: cannot commit transaction '%s' of checkpoint %" PRId64 ": %s", t->id,
               t->checkpoint_id, rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return -1;
}

static int
kw_commit(void *writer, int64_t checkpoint_id, char *err, size_t errlen)
{
    struct kwriter *w = writer;
    int keep = 0, rc = 0;

    for (int i = 0; i < w->npending; i++) {
        struct txn *t = &w->pending[i];

        if (t->checkpoint_id > checkpoint_id || rc != 0) {
            w->pending[keep++] = *t;
            continue;
        }
        rc = commit_one(w, t, err, errlen);
        rd_kafka_destroy(t->rk);
        free(t->id);
    }
    w->npending = keep;
    return rc;
}

/* The mark of group `<prefix>-<subtask>`: the last checkpoint id whose
 * transaction committed, -1 for none; -2 with err set on failure. */
static int64_t
committed_mark(struct kwriter *w, int32_t subtask, char *err, size_t errlen)
{
    char group[600], why[512];
    const char *const extra[] = {
        "group.id", group, "isolation.level", "read_committed", "enable.auto.commit", "false", NULL
    };
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_conf_t *conf;
    rd_kafka_resp_err_t e;
    int64_t mark = -1;
    rd_kafka_t *rk;

    snprintf(group, sizeof group, "%s-%d", w->prefix, subtask);
    if ((conf = kafka_conf_new(&w->ctx, extra, err, errlen)) == NULL)
        return -2;
    if ((rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why)) == NULL) {
        rd_kafka_conf_destroy(conf);
        kafka_fail(err, errlen, "kafka sink: cannot make a consumer: %s", why);
        return -2;
    }
    l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, w->topic, 0);
    e = kafka_committed(rk, l, KAFKA_REQUEST_TIMEOUT_MS * 3);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        mark = l->elems[0].offset >= 0 ? l->elems[0].offset : -1;
    else
        kafka_fail(err, errlen, "kafka sink: cannot read the commits of group '%s': %s", group,
                   rd_kafka_err2str(e));
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return e == RD_KAFKA_RESP_ERR_NO_ERROR && mark >= -1 ? mark : -2;
}

/* Writes the records of a committable whose transaction never committed
 * again, in a transaction of the same id with its mark. */
static int
rewrite(struct kwriter *w, const char *id, int32_t subtask, int64_t checkpoint_id, const uint8_t *p,
        const uint8_t *end, char *err, size_t errlen)
{
    rd_kafka_topic_t *rkt;
    rd_kafka_error_t *e;
    rd_kafka_t *rk;
    struct txn t;
    uint64_t n = 0;
    bool open = false;
    int rc = -1;

    if ((rk = producer_new(w, id, err, errlen)) == NULL)
        return -1;
    if (init_transactions(w, rk, id, err, errlen) != 0)
        goto out;
    if ((e = rd_kafka_begin_transaction(rk)) != NULL) {
        kafka_fail(err, errlen, "kafka sink: cannot begin a transaction of '%s': %s", id,
                   rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        goto out;
    }
    open = true;
    rkt = rd_kafka_topic_new(rk, w->topic, NULL);
    while (p < end) {
        uint32_t kl, vl;
        const uint8_t *key = NULL, *value;
        int64_t ts;
        rd_kafka_resp_err_t pe;

        if (end - p < 4)
            break;
        memcpy(&kl, p, 4);
        p += 4;
        if (kl != UINT32_MAX) {
            if ((size_t)(end - p) < kl)
                break;
            key = p;
            p += kl;
        }
        if (end - p < 4)
            break;
        memcpy(&vl, p, 4);
        p += 4;
        if (vl == UINT32_MAX) {
            value = NULL; /* a tombstone */
            vl = 0;
        } else {
            value = p;
        }
        if ((size_t)(end - p) < (size_t)vl + 8)
            break;
        p += vl;
        memcpy(&ts, p, 8);
        p += 8;
        do {
            pe = rd_kafka_producev(
                rk, RD_KAFKA_V_RKT(rkt), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_VALUE((void *)value, vl), RD_KAFKA_V_KEY((void *)key, key ? kl : 0),
                RD_KAFKA_V_TIMESTAMP(ts == INT64_MIN ? 0 : ts), RD_KAFKA_V_END);
            if (pe == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rk, 10);
        } while (pe == RD_KAFKA_RESP_ERR__QUEUE_FULL);
        if (pe != RD_KAFKA_RESP_ERR_NO_ERROR)
            break;
        n++;
    }
    rd_kafka_topic_destroy(rkt);
    if (p != end) {
        kafka_fail(err, errlen,
                   "kafka sink: the records of transaction '%s' in the restored "
                   "state are malformed or cannot be written",
                   id);
        goto out;
    }
    t = (struct txn){ rk, (char *)id, checkpoint_id };
    if (flush_all(w, rk, err, errlen) != 0 ||
        mark_transaction(w, rk, subtask, checkpoint_id, err, errlen) != 0 ||
        commit_one(w, &t, err, errlen) != 0)
        goto out;
    open = false;
    kw_log(w, CONNECTOR_LOG_WARN,
           "transaction '%s' of checkpoint %" PRId64 " had not committed: wrote its %" PRIu64
           " records again and committed them",
           id, checkpoint_id, n);
    rc = 0;
out:
    if (open)
        destroy_open(w, rk, id);
    else
        rd_kafka_destroy(rk);
    return rc;
}

static int
kw_recover(void *writer, const void *committable, size_t len, char *err, size_t errlen)
{
    struct kwriter *w = writer;
    const uint8_t *b = committable;
    int32_t subtask;
    int64_t checkpoint_id, mark;
    uint16_t idlen;
    char id[512];
    rd_kafka_t *rk;
    int rc = 0;

    if (w->guarantee != GUARANTEE_EXACTLY_ONCE)
        return 0; /* a committable of an exactly-once run: nothing to do now */
    if (len < 15 || b[0] != 2 || (memcpy(&idlen, b + 13, 2), (size_t)idlen + 15 > len) ||
        idlen >= sizeof id)
        return kafka_fail(err, errlen,
                          "kafka sink: a committable of the restored state is malformed (%zu "
                          "bytes)",
                          len);
    memcpy(&subtask, b + 1, 4);
    memcpy(&checkpoint_id, b + 5, 8);
    memcpy(id, b + 15, idlen);
    id[idlen] = '\0';
    w->restored = true;
    if (checkpoint_id > w->last_checkpoint)
        w->last_checkpoint = checkpoint_id;
    /* The transactions the subtask left open after the checkpoint hold
     * back read_committed readers, and the group's mark while they are
     * open: aborted first, where no subtask of this attempt writes with
     * those ids (its own index, or one the job no longer has; another
     * subtask's own it aborts itself). */
    if (subtask == w->ctx.subtask || subtask >= w->ctx.parallelism) {
        if (abort_ids(w, subtask, checkpoint_id + 1, KAFKA_LINGERING_IDS, err, errlen) != 0)
            return -1;
        if (subtask == w->ctx.subtask)
            w->aborted_lingering = true;
    }
    if (idlen > 0) {
        /* Finishes the transaction: committed if its commit had begun,
         * else aborted; the mark tells which. */
        if ((rk = producer_new(w, id, err, errlen)) == NULL)
            return -1;
        rc = init_transactions(w, rk, id, err, errlen);
        rd_kafka_destroy(rk);
        if (rc == 0 && (mark = committed_mark(w, subtask, err, errlen)) < -1)
            rc = -1;
        if (rc == 0 && mark < checkpoint_id)
            rc = rewrite(w, id, subtask, checkpoint_id, b + 15 + idlen, b + len, err, errlen);
        else if (rc == 0)
            kw_log(w, CONNECTOR_LOG_INFO,
                   "transaction '%s' of checkpoint %" PRId64 " had committed (mark %" PRId64 ")",
                   id, checkpoint_id, mark);
    }
    return rc;
}

static int
kw_finish(void *writer, char *err, size_t errlen)
{
    struct kwriter *w = writer;

    if (w->guarantee != GUARANTEE_EXACTLY_ONCE)
        return w->rk != NULL ? flush_all(w, w->rk, err, errlen) : 0;
    /* The end of the input commits everything: no checkpoint follows. */
    if (w->rk != NULL) {
        struct txn t = { w->rk, w->txn_id, w->last_checkpoint + 1 };
        int rc = flush_all(w, w->rk, err, errlen);

        if (rc == 0)
            rc = commit_one(w, &t, err, errlen);
        rd_kafka_topic_destroy(w->rkt);
        if (rc != 0)
            destroy_open(w, w->rk, w->txn_id);
        else
            rd_kafka_destroy(w->rk);
        free(w->txn_id);
        w->rk = NULL;
        w->rkt = NULL;
        w->txn_id = NULL;
        w->log_len = 0;
        if (rc != 0)
            return rc;
    }
    return kw_commit(w, INT64_MAX, err, errlen);
}

const struct connector_sink_ops kafka_sink_ops = {
    .check = kw_check,
    .open = kw_open,
    .recover = kw_recover,
    .write = kw_write,
    .prepare_commit = kw_prepare_commit,
    .commit = kw_commit,
    .finish = kw_finish,
    .close = kw_close,
};

/* kafka_tool: what the Kafka tests do to a broker besides running jobs,
 * over librdkafka (no Kafka client in Python here):
 *   kafka_tool BROKERS create TOPIC PARTITIONS
 *   kafka_tool BROKERS partitions TOPIC TOTAL      (adds partitions)
 *   kafka_tool BROKERS produce TOPIC [TS0 STEP]   (stdin lines, one record
 *       each; timestamps TS0, TS0+STEP, ... when given; "P<n><TAB>" before
 *       a line chooses its partition, "T<ms><TAB>" its timestamp)
 *   kafka_tool BROKERS consume TOPIC IDLE_MS [ISOLATION] (read_committed
 *       unless ISOLATION is read_uncommitted; from the
 *       start of every partition; each record "P OFFSET VALUE" a line;
 *       ends when no record came for IDLE_MS after reaching the end;
 *       with KEYS "keys": "P OFFSET K<key><TAB>V<value>", "NULL" for the
 *       value of a tombstone)
 *   kafka_tool BROKERS committed TOPIC GROUP  (the group's committed offset
 *       of each partition, "P OFFSET" a line, -1 when it has none)
 * Exit 0, or 1 with a message on stderr. */
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rd_kafka_t *
client(rd_kafka_type_t type, const char *brokers, const char *const *extra)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    rd_kafka_t *rk;

    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    for (; extra && *extra; extra += 2)
        if (rd_kafka_conf_set(conf, extra[0], extra[1], err, sizeof err) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "kafka_tool: %s\n", err);
            exit(1);
        }
    if ((rk = rd_kafka_new(type, conf, err, sizeof err)) == NULL) {
        fprintf(stderr, "kafka_tool: %s\n", err);
        exit(1);
    }
    return rk;
}

static int
admin_result(rd_kafka_queue_t *q, const char *what)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    int rc = 0;

    if (ev == NULL || rd_kafka_event_error(ev)) {
        fprintf(stderr, "kafka_tool: %s: %s\n", what,
                ev ? rd_kafka_event_error_string(ev) : "timed out");
        rc = 1;
    } else {
        const rd_kafka_topic_result_t **res = NULL;
        size_t n = 0;

        if (rd_kafka_event_type(ev) == RD_KAFKA_EVENT_CREATETOPICS_RESULT)
            res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
        else
            res = rd_kafka_CreatePartitions_result_topics(
                rd_kafka_event_CreatePartitions_result(ev), &n);
        for (size_t i = 0; i < n; i++)
            if (rd_kafka_topic_result_error(res[i])) {
                fprintf(stderr, "kafka_tool: %s: %s\n", what,
                        rd_kafka_topic_result_error_string(res[i]));
                rc = 1;
            }
    }
    if (ev)
        rd_kafka_event_destroy(ev);
    return rc;
}

static int
create(const char *brokers, const char *topic, int partitions, bool add)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, brokers, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    char err[512];
    int rc;

    if (!add) {
        rd_kafka_NewTopic_t *t = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);

        rd_kafka_CreateTopics(rk, &t, 1, NULL, q);
        rc = admin_result(q, "create topic");
        rd_kafka_NewTopic_destroy(t);
    } else {
        rd_kafka_NewPartitions_t *p =
            rd_kafka_NewPartitions_new(topic, (size_t)partitions, err, sizeof err);

        rd_kafka_CreatePartitions(rk, &p, 1, NULL, q);
        rc = admin_result(q, "add partitions");
        rd_kafka_NewPartitions_destroy(p);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
    return rc;
}

static int failed;

static void
dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    if (m->err) {
        fprintf(stderr, "kafka_tool: delivery: %s\n", rd_kafka_err2str(m->err));
        failed = 1;
    }
}

static int
produce(const char *brokers, const char *topic, long long ts0, long long step)
{
    const char *const extra[] = { "linger.ms", "20", "enable.idempotence", "true", NULL };
    rd_kafka_conf_t *conf;
    rd_kafka_t *rk;
    char *line = NULL, err[512];
    size_t cap = 0;
    ssize_t len;
    long long ts = ts0;

    conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    for (const char *const *e = extra; *e; e += 2)
        rd_kafka_conf_set(conf, e[0], e[1], err, sizeof err);
    rd_kafka_conf_set_dr_msg_cb(conf, dr);
    if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err)) == NULL) {
        fprintf(stderr, "kafka_tool: %s\n", err);
        return 1;
    }
    while ((len = getline(&line, &cap, stdin)) > 0) {
        int32_t partition = RD_KAFKA_PARTITION_UA;
        long long line_ts = step ? ts : 0;
        char *v = line, *tab;
        rd_kafka_resp_err_t e;

        if (line[len - 1] == '\n')
            line[--len] = '\0';
        while ((v[0] == 'P' || v[0] == 'T') && (tab = strchr(v, '\t')) != NULL) {
            if (v[0] == 'P')
                partition = atoi(v + 1);
            else
                line_ts = atoll(v + 1);
            v = tab + 1;
        }
        do {
            e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                  RD_KAFKA_V_VALUE(v, strlen(v)), RD_KAFKA_V_TIMESTAMP(line_ts),
                                  RD_KAFKA_V_END);
            if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(rk, 10);
        } while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
        if (e) {
            fprintf(stderr, "kafka_tool: produce: %s\n", rd_kafka_err2str(e));
            return 1;
        }
        ts += step;
        rd_kafka_poll(rk, 0);
    }
    free(line);
    if (rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "kafka_tool: flush timed out\n");
        return 1;
    }
    rd_kafka_destroy(rk);
    return failed;
}

/* The number of partitions of topic, or -1 with a message. */
static int
partition_count(rd_kafka_t *rk, const char *topic)
{
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    int np = -1;

    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (md->topic_cnt == 1 && !md->topics[0].err)
            np = md->topics[0].partition_cnt;
        rd_kafka_metadata_destroy(md);
    }
    rd_kafka_topic_destroy(rkt);
    if (np < 0)
        fprintf(stderr, "kafka_tool: no topic '%s'\n", topic);
    return np;
}

static int
consume(const char *brokers, const char *topic, int idle_ms, const char *isolation, bool keys)
{
    const char *const extra[] = { "group.id",
                                  "kafka-tool",
                                  "isolation.level",
                                  isolation,
                                  "enable.auto.commit",
                                  "false",
                                  "enable.partition.eof",
                                  "true",
                                  NULL };
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, extra);
    rd_kafka_topic_partition_list_t *l;
    int np = partition_count(rk, topic), at_end = 0, idle = 0;
    int *eof;

    if (np < 0)
        return 1;
    eof = calloc((size_t)np, sizeof *eof);
    l = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    while (at_end < np || idle < idle_ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);

        if (m == NULL) {
            if (at_end == np)
                idle += 100;
            continue;
        }
        idle = 0;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition < np && !eof[m->partition]) {
                eof[m->partition] = 1;
                at_end++;
            }
        } else if (m->err) {
            fprintf(stderr, "kafka_tool: consume: %s\n", rd_kafka_message_errstr(m));
        } else if (keys) {
            printf("%d %lld K%.*s\t%s%.*s\n", m->partition, (long long)m->offset, (int)m->key_len,
                   m->key ? (const char *)m->key : "", m->payload ? "V" : "NULL", (int)m->len,
                   m->payload ? (const char *)m->payload : "");
        } else {
            printf("%d %lld %.*s\n", m->partition, (long long)m->offset, (int)m->len,
                   (const char *)m->payload);
        }
        rd_kafka_message_destroy(m);
    }
    free(eof);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return 0;
}

static int
committed(const char *brokers, const char *topic, const char *group)
{
    const char *const extra[] = { "group.id", group, "enable.auto.commit", "false", NULL };
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, brokers, extra);
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_resp_err_t e;
    int np = partition_count(rk, topic);

    if (np < 0)
        return 1;
    l = rd_kafka_topic_partition_list_new(np);
    for (int p = 0; p < np; p++)
        rd_kafka_topic_partition_list_add(l, topic, p);
    if ((e = rd_kafka_committed(rk, l, 10000)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "kafka_tool: committed offsets of group '%s': %s\n", group,
                rd_kafka_err2str(e));
        return 1;
    }
    for (int i = 0; i < l->cnt; i++)
        printf("%d %lld\n", l->elems[i].partition,
               (long long)(l->elems[i].offset >= 0 ? l->elems[i].offset : -1));
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[2], "create") == 0)
        return create(argv[1], argv[3], atoi(argv[4]), false);
    if (argc >= 5 && strcmp(argv[2], "partitions") == 0)
        return create(argv[1], argv[3], atoi(argv[4]), true);
    if (argc >= 4 && strcmp(argv[2], "produce") == 0)
        return produce(argv[1], argv[3], argc >= 6 ? atoll(argv[4]) : 0,
                       argc >= 6 ? atoll(argv[5]) : 0);
    if (argc >= 5 && strcmp(argv[2], "consume") == 0)
        return consume(argv[1], argv[3], atoi(argv[4]), argc >= 6 ? argv[5] : "read_committed",
                       argc >= 7 && strcmp(argv[6], "keys") == 0);
    if (argc >= 5 && strcmp(argv[2], "committed") == 0)
        return committed(argv[1], argv[3], argv[4]);
    fprintf(stderr,
            "usage: kafka_tool BROKERS create|partitions|produce|consume|committed TOPIC ...\n");
    return 1;
}

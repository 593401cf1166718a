/* The Kafka source's split reader (Flink's KafkaSourceReader over
 * KafkaPartitionSplitReader): a topic partition is a split; each subtask
 * owns the partitions kafka_split_owner gives it, found by listing the
 * topics (`topic`, a list with ';', or `topic-pattern`) at start and every
 * `scan.topic-partition-discovery.interval`. A fresh start begins where
 * `scan.startup.mode` says, resolved to concrete offsets at once; a
 * restored one where its splits were, and a partition that no checkpointed
 * split names from its earliest offset, as Flink's. With `scan.bounded.mode`
 * latest-offset each split ends at the offset its partition had when the
 * reader started. Positions go into every checkpoint; its completion
 * commits them to the group (`properties.group.id`). One consumer per
 * reader, manually assigned (no group rebalancing); task thread only. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connectors/kafka/kafka_int.h"

enum startup_mode {
    STARTUP_EARLIEST,
    STARTUP_LATEST,
    STARTUP_GROUP,
    STARTUP_TIMESTAMP,
    STARTUP_SPECIFIC,
};

struct ksplit {
    char *topic;
    /* The topic's librdkafka handle, a reference held: a record is of
     * this split when its rkt is this one (no name compared per record),
     * and the handle outlives the split, so that no other topic's can
     * take its address. */
    rd_kafka_topic_t *rkt;
    char *where; /* "topic 't' partition p", for messages */
    int32_t partition;
    int64_t next; /* the next offset to read */
    int64_t stop; /* bounded: the split ends before it; -1 unbounded */
    bool done;
};

/* The positions of one snapshot, committed to the group on completion. */
struct pending_commit {
    int64_t checkpoint_id;
    rd_kafka_topic_partition_list_t *offsets;
};

/* A partition a restored checkpoint named (any subtask's): not new. */
struct known {
    char *topic;
    int32_t partition;
};

struct kreader {
    struct connector_context ctx; /* a copy: librdkafka's log callback reads it */
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    /* A pipe librdkafka writes a byte to when the empty queue gets
     * messages (rd_kafka_queue_io_event_enable): the task waits on its
     * read end, so that records are read as soon as they arrive. */
    int wake[2];
    char **topics;
    int ntopics;
    bool has_pattern;
    regex_t pattern;
    enum startup_mode startup;
    const char *specific;
    int64_t timestamp_ms;
    bool bounded;
    int64_t discovery_ms; /* <= 0: no periodic discovery */
    int64_t next_discovery_ms;
    const char *group;
    const char *bootstrap;
    struct ksplit *splits;
    int nsplits;
    struct known *known;
    int nknown;
    bool started;
    bool restored;
    struct pending_commit *pending;
    int npending;
    struct ksplit *last; /* the split of the last record: records come in runs */
    uint64_t warned_errors;
};

static const char *const source_options[] = {
    "topic",
    "topic-pattern",
    "scan.startup.mode",
    "scan.startup.specific-offsets",
    "scan.startup.timestamp-millis",
    "scan.bounded.mode",
    "scan.topic-partition-discovery.interval",
    NULL,
};

static void kr_log(struct kreader *r, enum connector_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
kr_log(struct kreader *r, enum connector_log_level level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (r->ctx.log != NULL)
        r->ctx.log(r->ctx.log_arg, level, line);
}

/* Whether spec is Flink's form of specific offsets: entries
 * partition:P,offset:O (numbers, none negative) separated by ';'. */
static bool
specific_offsets_valid(const char *spec)
{
    bool any = false;

    for (const char *s = spec; *s;) {
        long part;
        long long off;
        int used = -1;

        if (sscanf(s, " partition:%ld,offset:%lld %n", &part, &off, &used) != 2 || used < 0 ||
            part < 0 || off < 0 || (s[used] != ';' && s[used] != '\0'))
            return false;
        any = true;
        s += used;
        if (*s == ';')
            s++;
    }
    return any;
}

static int
parse_options(struct kreader *r, char *err, size_t errlen)
{
    const struct connector_context *ctx = &r->ctx;
    const char *topic = kafka_option(ctx, "topic");
    const char *pattern = kafka_option(ctx, "topic-pattern");
    const char *mode = kafka_option(ctx, "scan.startup.mode");
    const char *bounded = kafka_option(ctx, "scan.bounded.mode");
    const char *interval = kafka_option(ctx, "scan.topic-partition-discovery.interval");
    const char *ts = kafka_option(ctx, "scan.startup.timestamp-millis");
    int rc;

    if (kafka_check_options(ctx, source_options, err, errlen) != 0)
        return -1;
    r->bootstrap = kafka_option(ctx, "properties.bootstrap.servers");
    r->group = kafka_option(ctx, "properties.group.id");
    if ((topic == NULL) == (pattern == NULL))
        return kafka_fail(err, errlen,
                          "kafka source: give either 'topic' or 'topic-pattern', not %s",
                          topic ? "both" : "neither");
    if (topic != NULL) {
        char *copy = strdup(topic), *save = NULL;

        for (char *t = strtok_r(copy, ";", &save); t != NULL; t = strtok_r(NULL, ";", &save)) {
            while (*t == ' ')
                t++;
            if (!*t)
                continue;
            r->topics = realloc(r->topics, (size_t)(r->ntopics + 1) * sizeof *r->topics);
            r->topics[r->ntopics++] = strdup(t);
        }
        free(copy);
        if (r->ntopics == 0)
            return kafka_fail(err, errlen, "kafka source: 'topic' names no topic");
    } else {
        /* The whole name matches, as Java's Pattern.matches in Flink's. */
        char *whole;
        char why[256];

        if (asprintf(&whole, "^(%s)$", pattern) < 0)
            return kafka_fail(err, errlen, "kafka source: out of memory");
        rc = regcomp(&r->pattern, whole, REG_EXTENDED | REG_NOSUB);
        free(whole);
        if (rc != 0) {
            regerror(rc, &r->pattern, why, sizeof why);
            return kafka_fail(err, errlen, "kafka source: 'topic-pattern' '%s': %s", pattern, why);
        }
        r->has_pattern = true;
    }
    r->startup = STARTUP_GROUP;
    if (mode == NULL || strcmp(mode, "group-offsets") == 0)
        r->startup = STARTUP_GROUP;
    else if (strcmp(mode, "earliest-offset") == 0)
        r->startup = STARTUP_EARLIEST;
    else if (strcmp(mode, "latest-offset") == 0)
        r->startup = STARTUP_LATEST;
    else if (strcmp(mode, "timestamp") == 0)
        r->startup = STARTUP_TIMESTAMP;
    else if (strcmp(mode, "specific-offsets") == 0)
        r->startup = STARTUP_SPECIFIC;
    else
        return kafka_fail(err, errlen,
                          "kafka source: 'scan.startup.mode' '%s' is not one of earliest-offset, "
                          "latest-offset, group-offsets, timestamp, specific-offsets",
                          mode);
    if (r->startup == STARTUP_TIMESTAMP) {
        char *end;

        if (ts == NULL || (r->timestamp_ms = strtoll(ts, &end, 10), *end != '\0' || !*ts))
            return kafka_fail(err, errlen,
                              "kafka source: scan.startup.mode timestamp needs "
                              "'scan.startup.timestamp-millis' (milliseconds since the epoch)");
    }
    if (r->startup == STARTUP_SPECIFIC &&
        (r->specific = kafka_option(ctx, "scan.startup.specific-offsets")) == NULL)
        return kafka_fail(err, errlen,
                          "kafka source: scan.startup.mode specific-offsets needs "
                          "'scan.startup.specific-offsets' (partition:0,offset:42;...)");
    if (r->startup == STARTUP_SPECIFIC && !specific_offsets_valid(r->specific))
        return kafka_fail(err, errlen,
                          "kafka source: 'scan.startup.specific-offsets' '%s' is not of the form "
                          "partition:0,offset:42;partition:1,offset:300",
                          r->specific);
    if (bounded != NULL && strcmp(bounded, "latest-offset") == 0)
        r->bounded = true;
    else if (bounded != NULL && strcmp(bounded, "unbounded") != 0)
        return kafka_fail(err, errlen,
                          "kafka source: 'scan.bounded.mode' '%s' is not unbounded or "
                          "latest-offset",
                          bounded);
    r->discovery_ms = 5 * 60 * 1000; /* Flink's default: five minutes */
    if (interval != NULL && (r->discovery_ms = kafka_parse_duration_ms(interval)) < 0)
        return kafka_fail(err, errlen,
                          "kafka source: 'scan.topic-partition-discovery.interval' '%s' is not "
                          "a duration (e.g. '10 s', '500 ms')",
                          interval);
    if (r->bounded)
        r->discovery_ms = 0; /* bounded: the partitions of the start only */
    return 0;
}

/* Frees what parse_options made. */
static void
options_release(struct kreader *r)
{
    for (int i = 0; i < r->ntopics; i++)
        free(r->topics[i]);
    free(r->topics);
    if (r->has_pattern)
        regfree(&r->pattern);
}

/* The options checked at submission: parse_options on a reader that is
 * never opened, and the properties.* that librdkafka would refuse. */
static int
ks_check(const struct connector_context *ctx, char *err, size_t errlen)
{
    struct kreader r = { .ctx = *ctx };
    int rc = parse_options(&r, err, errlen);

    if (rc == 0)
        rc = kafka_check_properties(ctx, err, errlen);
    options_release(&r);
    return rc;
}

static void *
ks_open(const struct connector_context *ctx, char *err, size_t errlen)
{
    struct kreader *r = calloc(1, sizeof *r);
    /* Manual assignment, offsets stored and committed by the reader only. */
    const char *const extra[] = { "enable.auto.commit",
                                  "false",
                                  "enable.auto.offset.store",
                                  "false",
                                  "enable.partition.eof",
                                  "false",
                                  NULL };
    rd_kafka_conf_t *conf;
    char why[512];

    if (r == NULL) {
        kafka_fail(err, errlen, "kafka source: out of memory");
        return NULL;
    }
    r->ctx = *ctx;
    r->wake[0] = r->wake[1] = -1;
    if (parse_options(r, err, errlen) != 0)
        goto fail;
    if ((conf = kafka_conf_new(&r->ctx, extra, err, errlen)) == NULL)
        goto fail;
    /* librdkafka assigns partitions only to a consumer with a group; one
     * that is never committed to when the job gives none. */
    if (r->group == NULL && rd_kafka_conf_set(conf, "group.id", "spate-kafka-source", why,
                                              sizeof why) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        kafka_fail(err, errlen, "kafka source: %s", why);
        goto fail;
    }
    if ((r->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why)) == NULL) {
        rd_kafka_conf_destroy(conf);
        kafka_fail(err, errlen, "kafka source: cannot make a consumer: %s", why);
        goto fail;
    }
    /* Logs and errors come with the records, on the consumer's queue. */
    rd_kafka_poll_set_consumer(r->rk);
    r->queue = rd_kafka_queue_get_consumer(r->rk);
    if (pipe2(r->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        r->wake[0] = r->wake[1] = -1;
        kafka_fail(err, errlen, "kafka source: cannot make a pipe: %s", strerror(errno));
        goto fail;
    }
    rd_kafka_queue_io_event_enable(r->queue, r->wake[1], "1", 1);
    return r;
fail:
    kafka_source_ops.close(r);
    return NULL;
}

static void
ks_close(void *reader)
{
    struct kreader *r = reader;

    if (r == NULL)
        return;
    if (r->queue != NULL) {
        rd_kafka_queue_io_event_enable(r->queue, -1, NULL, 0);
        rd_kafka_queue_destroy(r->queue);
    }
    /* The topics' handles before their client's end. */
    for (int i = 0; i < r->nsplits; i++)
        if (r->splits[i].rkt != NULL)
            rd_kafka_topic_destroy(r->splits[i].rkt);
    if (r->rk != NULL) {
        rd_kafka_assign(r->rk, NULL);
        rd_kafka_destroy(r->rk);
    }
    /* After the consumer: its threads wrote to the pipe until then. */
    for (int i = 0; i < 2; i++)
        if (r->wake[i] >= 0)
            close(r->wake[i]);
    options_release(r);
    for (int i = 0; i < r->nsplits; i++) {
        free(r->splits[i].topic);
        free(r->splits[i].where);
    }
    free(r->splits);
    for (int i = 0; i < r->nknown; i++)
        free(r->known[i].topic);
    free(r->known);
    for (int i = 0; i < r->npending; i++)
        rd_kafka_topic_partition_list_destroy(r->pending[i].offsets);
    free(r->pending);
    free(r);
}

static struct ksplit *
split_find(struct kreader *r, const char *topic, int32_t partition)
{
    for (int i = 0; i < r->nsplits; i++)
        if (r->splits[i].partition == partition && strcmp(r->splits[i].topic, topic) == 0)
            return &r->splits[i];
    return NULL;
}

static bool
is_known(struct kreader *r, const char *topic, int32_t partition)
{
    for (int i = 0; i < r->nknown; i++)
        if (r->known[i].partition == partition && strcmp(r->known[i].topic, topic) == 0)
            return true;
    return split_find(r, topic, partition) != NULL;
}

static struct ksplit *
split_add(struct kreader *r, const char *topic, int32_t partition, int64_t next)
{
    struct ksplit *s;

    r->splits = realloc(r->splits, (size_t)(r->nsplits + 1) * sizeof *r->splits);
    s = &r->splits[r->nsplits++];
    *s = (struct ksplit){
        strdup(topic), rd_kafka_topic_new(r->rk, topic, NULL), NULL, partition, next, -1, false
    };
    if (asprintf(&s->where, "topic '%s' partition %d", topic, partition) < 0)
        abort();    /* control-plane sized: out of memory ends the process */
    r->last = NULL; /* the array moved */
    return s;
}

/* A split in state: u8 version 1, i32 partition, i64 next offset, the
 * topic's bytes. */
static int
ks_add_split(void *reader, const void *bytes, size_t len, char *err, size_t errlen)
{
    struct kreader *r = reader;
    const uint8_t *b = bytes;
    int32_t partition;
    int64_t next;
    char topic[256];

    if (len < 14 || b[0] != 1 || len - 13 >= sizeof topic)
        return kafka_fail(err, errlen,
                          "kafka source: a split of the restored state is "
                          "malformed (%zu bytes)",
                          len);
    memcpy(&partition, b + 1, 4);
    memcpy(&next, b + 5, 8);
    memcpy(topic, b + 13, len - 13);
    topic[len - 13] = '\0';
    r->restored = true;
    if (kafka_split_owner(topic, partition, r->ctx.parallelism) == r->ctx.subtask) {
        if (split_find(r, topic, partition) == NULL)
            split_add(r, topic, partition, next);
    } else if (!is_known(r, topic, partition)) {
        r->known = realloc(r->known, (size_t)(r->nknown + 1) * sizeof *r->known);
        r->known[r->nknown++] = (struct known){ strdup(topic), partition };
    }
    return 0;
}

static bool
topic_wanted(struct kreader *r, const char *topic)
{
    if (r->has_pattern)
        return topic[0] != '_' && regexec(&r->pattern, topic, 0, NULL, 0) == 0;
    for (int i = 0; i < r->ntopics; i++)
        if (strcmp(r->topics[i], topic) == 0)
            return true;
    return false;
}

/* The specific start offset of partition p (partition:0,offset:42;...),
 * or -1. */
static int64_t
specific_offset(const char *spec, int32_t p)
{
    const char *s = spec;

    while (s != NULL && *s) {
        long part;
        long long off;

        if (sscanf(s, " partition:%ld,offset:%lld", &part, &off) == 2 && part == p)
            return off;
        s = strchr(s, ';');
        if (s != NULL)
            s++;
    }
    return -1;
}

/* The concrete start offset of a partition: how the reader starts for a
 * split of the first discovery of a fresh start, else from the earliest. */
static int
start_offset(struct kreader *r, const char *topic, int32_t partition, bool fresh, int64_t *out,
             char *err, size_t errlen)
{
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t e;

    e = rd_kafka_query_watermark_offsets(r->rk, topic, partition, &low, &high,
                                         KAFKA_REQUEST_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return kafka_fail(err, errlen,
                          "kafka source: cannot read the offsets of topic '%s' partition %d "
                          "from '%s': %s",
                          topic, partition, r->bootstrap, rd_kafka_err2str(e));
    *out = low;
    if (!fresh || r->startup == STARTUP_EARLIEST)
        return 0;
    if (r->startup == STARTUP_LATEST) {
        *out = high;
    } else if (r->startup == STARTUP_SPECIFIC) {
        int64_t o = specific_offset(r->specific, partition);

        if (o >= 0)
            *out = o < low ? low : o > high ? high : o;
    } else if (r->startup == STARTUP_TIMESTAMP) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);

        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = r->timestamp_ms;
        e = rd_kafka_offsets_for_times(r->rk, l, KAFKA_REQUEST_TIMEOUT_MS);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
            *out = l->elems[0].offset >= 0 ? l->elems[0].offset : high;
        else
            kafka_fail(err, errlen,
                       "kafka source: cannot find the offset of timestamp %" PRId64
                       " in topic '%s' partition %d: %s",
                       r->timestamp_ms, topic, partition,
                       rd_kafka_err2str(e ? e : l->elems[0].err));
        rd_kafka_topic_partition_list_destroy(l);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            return -1;
    } else if (r->startup == STARTUP_GROUP) {
        const char *reset = kafka_option(&r->ctx, "properties.auto.offset.reset");
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        int64_t committed = -1;

        rd_kafka_topic_partition_list_add(l, topic, partition);
        e = r->group != NULL ? kafka_committed(r->rk, l, KAFKA_REQUEST_TIMEOUT_MS)
                             : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (r->group != NULL && e == RD_KAFKA_RESP_ERR_NO_ERROR)
            committed = l->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(l);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
            return kafka_fail(err, errlen,
                              "kafka source: cannot read the offsets of group '%s': %s", r->group,
                              rd_kafka_err2str(e));
        /* No committed offset: properties.auto.offset.reset, earliest
         * when not given. */
        if (committed >= 0)
            *out = committed < low ? low : committed;
        else if (reset != NULL && (strcmp(reset, "latest") == 0 || strcmp(reset, "largest") == 0))
            *out = high;
    }
    return 0;
}

/* Reads the split's stop offset (bounded mode): the partition's end now. */
static int
split_bound(struct kreader *r, struct ksplit *s, char *err, size_t errlen)
{
    int64_t low, high;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(r->rk, s->topic, s->partition, &low,
                                                             &high, KAFKA_REQUEST_TIMEOUT_MS);

    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return kafka_fail(err, errlen,
                          "kafka source: cannot read the end of topic '%s' partition %d: %s",
                          s->topic, s->partition, rd_kafka_err2str(e));
    s->stop = high;
    s->done = s->next >= high;
    return 0;
}

static int
assign(struct kreader *r, struct ksplit **add, int n, char *err, size_t errlen)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(n);
    rd_kafka_error_t *e;
    int rc = 0;

    for (int i = 0; i < n; i++)
        if (!add[i]->done)
            rd_kafka_topic_partition_list_add(l, add[i]->topic, add[i]->partition)->offset =
                add[i]->next;
    if (l->cnt > 0 && (e = rd_kafka_incremental_assign(r->rk, l)) != NULL) {
        rc = kafka_fail(err, errlen, "kafka source: cannot assign partitions: %s",
                        rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

/* Lists the topics' partitions and takes the new ones this subtask owns.
 * first: at start, where a missing topic or unreachable broker fails. */
static int
discover(struct kreader *r, bool first, char *err, size_t errlen)
{
    const struct rd_kafka_metadata *md = NULL;
    struct ksplit **added = NULL;
    int nadded = 0, rc = 0;
    rd_kafka_resp_err_t e;

    e = rd_kafka_metadata(r->rk, 1, NULL, &md, KAFKA_REQUEST_TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (!first) {
            kr_log(r, CONNECTOR_LOG_WARN,
                   "partition discovery: cannot list the topics of '%s': %s (tried again in "
                   "%" PRId64 " ms)",
                   r->bootstrap, rd_kafka_err2str(e), r->discovery_ms);
            return 0;
        }
        return kafka_fail(err, errlen,
                          "kafka source: cannot reach the Kafka brokers '%s' in %d ms: %s",
                          r->bootstrap, KAFKA_REQUEST_TIMEOUT_MS, rd_kafka_err2str(e));
    }
    if (first)
        for (int t = 0; t < r->ntopics; t++) {
            bool found = false;

            for (int i = 0; i < md->topic_cnt && !found; i++)
                found = strcmp(md->topics[i].topic, r->topics[t]) == 0 &&
                        md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR;
            if (!found) {
                rd_kafka_metadata_destroy(md);
                return kafka_fail(err, errlen,
                                  "kafka source: topic '%s' does not exist on the brokers '%s'",
                                  r->topics[t], r->bootstrap);
            }
        }
    for (int i = 0; i < md->topic_cnt && rc == 0; i++) {
        const struct rd_kafka_metadata_topic *t = &md->topics[i];

        if (t->err != RD_KAFKA_RESP_ERR_NO_ERROR || !topic_wanted(r, t->topic))
            continue;
        for (int p = 0; p < t->partition_cnt && rc == 0; p++) {
            int32_t id = t->partitions[p].id;
            int64_t next = 0;

            if (kafka_split_owner(t->topic, id, r->ctx.parallelism) != r->ctx.subtask ||
                is_known(r, t->topic, id))
                continue;
            /* A fresh start's first partitions start as configured; those
             * found later, or unknown to a restored checkpoint, from the
             * earliest offset. */
            if ((rc = start_offset(r, t->topic, id, first && !r->restored, &next, err, errlen)) !=
                0)
                break;
            split_add(r, t->topic, id, next);
            if (!first)
                kr_log(r, CONNECTOR_LOG_INFO,
                       "partition discovery: reading new topic '%s' partition %d from offset "
                       "%" PRId64,
                       t->topic, id, next);
            added = realloc(added, (size_t)(nadded + 1) * sizeof *added);
            added[nadded++] = (struct ksplit *)(intptr_t)(r->nsplits - 1);
        }
    }
    rd_kafka_metadata_destroy(md);
    /* Indexes until now: split_add moves the array. */
    for (int i = 0; i < nadded; i++)
        added[i] = &r->splits[(intptr_t)added[i]];
    for (int i = 0; rc == 0 && r->bounded && i < nadded; i++)
        rc = split_bound(r, added[i], err, errlen);
    if (rc == 0 && nadded > 0)
        rc = assign(r, added, nadded, err, errlen);
    free(added);
    return rc;
}

static int
ks_start(void *reader, bool restored, char *err, size_t errlen)
{
    struct kreader *r = reader;
    struct ksplit **all;
    int rc = 0, n = r->nsplits;

    r->restored = r->restored || restored;
    /* The restored splits first, so that discovery knows them. */
    all = calloc((size_t)(n ? n : 1), sizeof *all);
    for (int i = 0; i < n; i++)
        all[i] = &r->splits[i];
    for (int i = 0; rc == 0 && r->bounded && i < n; i++)
        rc = split_bound(r, all[i], err, errlen);
    if (rc == 0 && n > 0)
        rc = assign(r, all, n, err, errlen);
    free(all);
    if (rc == 0)
        rc = discover(r, true, err, errlen);
    r->next_discovery_ms = kafka_now_ms() + r->discovery_ms;
    r->started = true;
    if (rc == 0)
        kr_log(r, CONNECTOR_LOG_INFO, "subtask %d reads %d partitions%s", r->ctx.subtask,
               r->nsplits, r->restored ? " (restored)" : "");
    return rc;
}

static void
split_done(struct kreader *r, struct ksplit *s)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_error_t *e;

    s->done = true;
    rd_kafka_topic_partition_list_add(l, s->topic, s->partition);
    if ((e = rd_kafka_incremental_unassign(r->rk, l)) != NULL)
        rd_kafka_error_destroy(e);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Bounded: whether every split reached its end; the consumer's position
 * counts, as it moves past transaction markers no record shows. */
static bool
all_done(struct kreader *r)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(r->nsplits);
    bool done = true;

    for (int i = 0; i < r->nsplits; i++)
        if (!r->splits[i].done)
            rd_kafka_topic_partition_list_add(l, r->splits[i].topic, r->splits[i].partition);
    if (l->cnt > 0 && rd_kafka_position(r->rk, l) == RD_KAFKA_RESP_ERR_NO_ERROR)
        for (int i = 0; i < l->cnt; i++) {
            struct ksplit *s = split_find(r, l->elems[i].topic, l->elems[i].partition);

            if (s != NULL && l->elems[i].offset >= s->stop)
                split_done(r, s);
        }
    for (int i = 0; i < r->nsplits; i++)
        done = done && r->splits[i].done;
    rd_kafka_topic_partition_list_destroy(l);
    return done;
}

static int
ks_fetch(void *reader, int max, connector_emit_fn *emit, void *arg, int *wait_ms,
         enum connector_fetch *status, char *err, size_t errlen)
{
    struct kreader *r = reader;
    rd_kafka_message_t *msgs[512];
    ssize_t n;
    char why[512];

    if (r->discovery_ms > 0 && kafka_now_ms() >= r->next_discovery_ms) {
        if (discover(r, false, err, errlen) != 0)
            return -1;
        r->next_discovery_ms = kafka_now_ms() + r->discovery_ms;
    }
    if (rd_kafka_fatal_error(r->rk, why, sizeof why) != RD_KAFKA_RESP_ERR_NO_ERROR)
        return kafka_fail(err, errlen, "kafka source: %s", why);
    if (max > (int)(sizeof msgs / sizeof msgs[0]))
        max = (int)(sizeof msgs / sizeof msgs[0]);
    n = rd_kafka_consume_batch_queue(r->queue, 0, msgs, (size_t)max);
    if (n == 0) {
        /* Empty: the pipe's bytes are spent, and what arrived before they
         * were read is taken now; what arrives after writes again. */
        char drain[64];

        while (read(r->wake[0], drain, sizeof drain) > 0)
            ;
        n = rd_kafka_consume_batch_queue(r->queue, 0, msgs, (size_t)max);
    }
    for (ssize_t i = 0; i < n; i++) {
        rd_kafka_message_t *m = msgs[i];
        struct connector_record rec;
        const char *topic;
        struct ksplit *s;
        rd_kafka_timestamp_type_t tstype;

        if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            /* Broker and transport errors: librdkafka reconnects and
             * fetches again by itself. Logged at 1, 2, 4, ... */
            r->warned_errors++;
            if ((r->warned_errors & (r->warned_errors - 1)) == 0)
                kr_log(r, CONNECTOR_LOG_WARN, "consumer error (%" PRIu64 " so far): %s",
                       r->warned_errors, rd_kafka_message_errstr(m));
            rd_kafka_message_destroy(m);
            continue;
        }
        s = r->last;
        if (s == NULL || s->partition != m->partition || s->rkt != m->rkt) {
            topic = rd_kafka_topic_name(m->rkt);
            s = r->last = split_find(r, topic, m->partition);
        }
        if (s == NULL || s->done || m->offset < s->next || (s->stop >= 0 && m->offset >= s->stop)) {
            if (s != NULL && !s->done && s->stop >= 0 && m->offset >= s->stop)
                split_done(r, s);
            rd_kafka_message_destroy(m);
            continue;
        }
        rec = (struct connector_record){
            .key = m->key,
            .key_len = m->key_len,
            .value = m->payload,
            .value_len = m->len,
            .timestamp_ms = rd_kafka_message_timestamp(m, &tstype),
            .split = s->where,
            .position = m->offset,
            .split_id = (uint32_t)(s - r->splits),
        };
        if (rec.timestamp_ms < 0)
            rec.timestamp_ms = INT64_MIN;
        emit(arg, &rec);
        s->next = m->offset + 1;
        rd_kafka_message_destroy(m);
    }
    *status = CONNECTOR_FETCH_MORE;
    if (n <= 0) {
        *status = CONNECTOR_FETCH_WAITING;
        *wait_ms = 5;
        if (r->bounded && all_done(r))
            *status = CONNECTOR_FETCH_END;
    }
    return 0;
}

static void
ks_snapshot(void *reader, int64_t checkpoint_id, connector_add_fn *add, void *arg)
{
    struct kreader *r = reader;
    rd_kafka_topic_partition_list_t *offsets = rd_kafka_topic_partition_list_new(r->nsplits);

    for (int i = 0; i < r->nsplits; i++) {
        const struct ksplit *s = &r->splits[i];
        size_t tl = strlen(s->topic);
        uint8_t buf[13 + 256];

        if (tl > 255)
            tl = 255;
        buf[0] = 1;
        memcpy(buf + 1, &s->partition, 4);
        memcpy(buf + 5, &s->next, 8);
        memcpy(buf + 13, s->topic, tl);
        add(arg, buf, 13 + tl);
        rd_kafka_topic_partition_list_add(offsets, s->topic, s->partition)->offset = s->next;
    }
    if (r->group == NULL || r->nsplits == 0) {
        rd_kafka_topic_partition_list_destroy(offsets);
        return;
    }
    r->pending = realloc(r->pending, (size_t)(r->npending + 1) * sizeof *r->pending);
    r->pending[r->npending++] = (struct pending_commit){ checkpoint_id, offsets };
}

static void
ks_checkpoint_complete(void *reader, int64_t checkpoint_id)
{
    struct kreader *r = reader;
    int keep = 0;

    for (int i = 0; i < r->npending; i++) {
        struct pending_commit *p = &r->pending[i];

        if (p->checkpoint_id == checkpoint_id) {
            /* Asynchronous: the group's offsets serve monitoring and
             * group-offsets starts, never exactly-once (the checkpoint's
             * positions do). */
            rd_kafka_resp_err_t e = rd_kafka_commit(r->rk, p->offsets, 1);

            if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
                kr_log(r, CONNECTOR_LOG_WARN,
                       "cannot commit the offsets of checkpoint %" PRId64 " to group '%s': %s",
                       checkpoint_id, r->group, rd_kafka_err2str(e));
        }
        if (p->checkpoint_id <= checkpoint_id)
            rd_kafka_topic_partition_list_destroy(p->offsets);
        else
            r->pending[keep++] = *p;
    }
    r->npending = keep;
}

static int
ks_wait_fd(void *reader)
{
    return ((struct kreader *)reader)->wake[0];
}

const struct connector_source_ops kafka_source_ops = {
    .check = ks_check,
    .open = ks_open,
    .add_split = ks_add_split,
    .start = ks_start,
    .fetch = ks_fetch,
    .snapshot = ks_snapshot,
    .checkpoint_complete = ks_checkpoint_complete,
    .close = ks_close,
    .wait_fd = ks_wait_fd,
};

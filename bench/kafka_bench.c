/* kafka_bench: records a second from a Kafka topic through a map into a
 * topic, spate's Kafka connector (tests/e2e/jobs/kafka.c's copy job: the
 * source, a map, the sink at-least-once, `spate run --local -p 1`, its
 * rate the records over the job's runtime) beside a plain librdkafka
 * consumer -> producer loop in C doing the same on one thread, against a
 * real Apache Kafka broker it starts (tests/e2e/kafkaserver.py). Rounds
 * interleave the loop and spate, each into a topic of its own; figures
 * are medians. Last line: a JSON object.
 *
 * KAFKA_BENCH_RECORDS (default 1000000, 16-byte values over 4 partitions)
 * and KAFKA_BENCH_RUNS (default 3) scale it. */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_engine.h"

#define PARTITIONS 4

static char brokers[256];

static double
now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Both consumers prefetch as much: librdkafka 2.0.2 stops fetching a
 * partition whose queue holds queued.min.messages (100,000 by default) and
 * looks again only about a second later, which set both sides' times in
 * steps of about a second. */
#define QUEUED_MIN_KEY "queued.min.messages"
#define QUEUED_MIN     "1000000"

static rd_kafka_t *
client(rd_kafka_type_t type, const char *const *extra)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char err[512];
    rd_kafka_t *rk;

    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    for (; extra && *extra; extra += 2)
        if (rd_kafka_conf_set(conf, extra[0], extra[1], err, sizeof err) != RD_KAFKA_CONF_OK)
            bench_fail("librdkafka: %s", err);
    if ((rk = rd_kafka_new(type, conf, err, sizeof err)) == NULL)
        bench_fail("librdkafka: %s", err);
    return rk;
}

static void
create_topic(const char *topic)
{
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    char err[512];
    rd_kafka_NewTopic_t *t = rd_kafka_NewTopic_new(topic, PARTITIONS, 1, err, sizeof err);
    rd_kafka_event_t *ev;

    rd_kafka_CreateTopics(rk, &t, 1, NULL, q);
    ev = rd_kafka_queue_poll(q, 30000);
    if (ev == NULL || rd_kafka_event_error(ev))
        bench_fail("cannot create topic '%s': %s", topic,
                   ev ? rd_kafka_event_error_string(ev) : "timed out");
    rd_kafka_event_destroy(ev);
    rd_kafka_NewTopic_destroy(t);
    rd_kafka_queue_destroy(q);
    rd_kafka_destroy(rk);
}

static void
produce_input(const char *topic, long n)
{
    const char *const extra[] = { "linger.ms", "10", NULL };
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, extra);
    char value[32];

    for (long i = 0; i < n; i++) {
        int len = snprintf(value, sizeof value, "record-%09ld", i);
        rd_kafka_resp_err_t e;

        while ((e = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION((int32_t)(i % PARTITIONS)),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_VALUE(value, (size_t)len),
                    RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(rk, 10);
        if (e)
            bench_fail("produce: %s", rd_kafka_err2str(e));
    }
    if (rd_kafka_flush(rk, 120000))
        bench_fail("the input did not reach the broker");
    rd_kafka_destroy(rk);
}

/* The baseline: consume every record of in from the start, map it (a copy,
 * as the job's map), produce it to out; records a second over the same
 * work as the job's runtime: from making its clients (the job's runtime
 * has its tasks make theirs) until the last record is flushed and the
 * clients are gone (the job ends when its tasks have closed theirs). */
static double
plain_loop(const char *in, const char *out, long n)
{
    const char *const cextra[] = { "group.id", "kafka-bench",  "enable.auto.commit",
                                   "false",    QUEUED_MIN_KEY, QUEUED_MIN,
                                   NULL };
    const char *const pextra[] = { "partitioner", "murmur2_random", NULL };
    double t0 = now_s(), t;
    rd_kafka_t *c = client(RD_KAFKA_CONSUMER, cextra), *p = client(RD_KAFKA_PRODUCER, pextra);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(PARTITIONS);
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(p, out, NULL);
    rd_kafka_message_t *msgs[1000];
    rd_kafka_queue_t *q;
    char copy[64];
    long got = 0;

    for (int i = 0; i < PARTITIONS; i++)
        rd_kafka_topic_partition_list_add(l, in, i)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_poll_set_consumer(c);
    q = rd_kafka_queue_get_consumer(c);
    rd_kafka_assign(c, l);
    while (got < n) {
        ssize_t k = rd_kafka_consume_batch_queue(q, 100, msgs, 1000);

        for (ssize_t i = 0; i < k; i++) {
            rd_kafka_message_t *m = msgs[i];

            if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                size_t len = m->len < sizeof copy ? m->len : sizeof copy;

                memcpy(copy, m->payload, len);
                while (rd_kafka_producev(p, RD_KAFKA_V_RKT(rkt),
                                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                         RD_KAFKA_V_VALUE(copy, len),
                                         RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    rd_kafka_poll(p, 10);
                got++;
            }
            rd_kafka_message_destroy(m);
        }
        rd_kafka_poll(p, 0);
    }
    if (rd_kafka_flush(p, 120000))
        bench_fail("the loop's records did not reach the broker");
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_queue_destroy(q);
    rd_kafka_assign(c, NULL);
    rd_kafka_destroy(c);
    rd_kafka_destroy(p);
    t = now_s() - t0;
    return (double)n / t;
}

static double
spate_job(const char *spate, const char *tmp, const char *job, const char *in, const char *out,
          long n)
{
    char b1[300], b2[300], t1[300], t2[300];
    const char *args[] = { "copy",
                           "--source",
                           b1,
                           "--source",
                           t1,
                           "--source",
                           "scan.startup.mode=earliest-offset",
                           "--source",
                           "properties." QUEUED_MIN_KEY "=" QUEUED_MIN,
                           "--source",
                           "scan.bounded.mode=latest-offset",
                           "--sink",
                           b2,
                           "--sink",
                           t2,
                           "--sink",
                           "sink.delivery-guarantee=at-least-once",
                           NULL };
    json_t *r;
    double ms;

    snprintf(b1, sizeof b1, "properties.bootstrap.servers=%s", brokers);
    snprintf(b2, sizeof b2, "properties.bootstrap.servers=%s", brokers);
    snprintf(t1, sizeof t1, "topic=%s", in);
    snprintf(t2, sizeof t2, "topic=%s", out);
    r = bench_run_local(spate, tmp, 1, job, args, NULL);
    ms = json_number_value(json_object_get(r, "duration_ms"));
    /* Every record went through: the sink took n. */
    if (json_integer_value(
            json_object_get(json_object_get(r, "accumulators"), "Sink: kafka.numRecordsIn")) != n)
        bench_fail("the job's sink took %s records, not %ld",
                   json_dumps(json_object_get(r, "accumulators"), JSON_COMPACT), n);
    json_decref(r);
    if (ms <= 0)
        bench_fail("the job's result has no duration");
    return (double)n / (ms / 1000.0);
}

int
main(void)
{
    const char *env_n = getenv("KAFKA_BENCH_RECORDS"), *env_runs = getenv("KAFKA_BENCH_RUNS");
    long n = env_n ? atol(env_n) : 1000000;
    int runs = env_runs ? atoi(env_runs) : 3;
    char dir[PATH_MAX - 64], spate[PATH_MAX], job[PATH_MAX], tmp[] = "/tmp/kafka-bench-XXXXXX";
    char line[512] = "", topic[64], out[64];
    double loop[16], eng[16], lm, em;
    int fds[2];
    pid_t broker;
    FILE *f;

    bench_name = "kafka_bench";
    if (runs < 1 || runs > 16 || n < 1000)
        bench_fail("KAFKA_BENCH_RUNS is 1..16 and KAFKA_BENCH_RECORDS at least 1000");
    bench_exe_dir(dir, sizeof dir);
    snprintf(spate, sizeof spate, "%s/spate", dir);
    snprintf(job, sizeof job, "%s/../tests/e2e/jobs/job_kafka.so", dir);
    if (mkdtemp(tmp) == NULL)
        bench_fail("cannot make a temporary folder");
    if (pipe(fds) != 0 || (broker = fork()) < 0)
        bench_fail("cannot start the broker");
    if (broker == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        execlp("python3", "python3", SPATE_SOURCE_DIR "/tests/e2e/kafkaserver.py", "serve",
               (char *)NULL);
        _exit(127);
    }
    bench_track_child(broker);
    close(fds[1]);
    f = fdopen(fds[0], "r");
    if (f == NULL || fgets(line, sizeof line, f) == NULL ||
        sscanf(line, "bootstrap %255s", brokers) != 1)
        bench_fail("the Kafka broker did not start (scripts/install-deps.sh fetches its jars)");
    snprintf(topic, sizeof topic, "bench-in");
    create_topic(topic);
    produce_input(topic, n);
    for (int r = 0; r < runs; r++) {
        snprintf(out, sizeof out, "bench-loop-%d", r);
        create_topic(out);
        loop[r] = plain_loop(topic, out, n);
        snprintf(out, sizeof out, "bench-spate-%d", r);
        create_topic(out);
        eng[r] = spate_job(spate, tmp, job, topic, out, n);
        fprintf(stderr, "kafka_bench: round %d: librdkafka loop %.0f records/s, spate %.0f\n", r,
                loop[r], eng[r]);
    }
    lm = bench_median(loop, runs);
    em = bench_median(eng, runs);
    kill(broker, SIGTERM);
    waitpid(broker, NULL, 0);
    fclose(f);
    bench_remove_tree(tmp);
    printf("{\"bench\":\"kafka_bench\",\"records\":%ld,\"runs\":%d,"
           "\"librdkafka_loop_records_per_s\":%.0f,\"spate_records_per_s\":%.0f,"
           "\"ratio\":%.3f}\n",
           n, runs, lm, em, em / lm);
    return 0;
}

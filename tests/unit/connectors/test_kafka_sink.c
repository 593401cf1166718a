/* Unit tests of the Kafka plugin's sink (src/connectors/kafka/kafka_sink.c)
 * against librdkafka's mock cluster: closing an exactly-once writer whose
 * transaction is open, as a cancelled task does, while librdkafka is about
 * to register the transaction's partitions. librdkafka 2.0.2 then sends
 * AddPartitionsToTxn from its main thread while the destroy stops its
 * broker threads; the coordinator's broker thread fails the request at
 * once and runs its handler, which asserts that the request was counted,
 * before the main thread counts it: the process aborts with
 * "rd_kafka_txn_handle_AddPartitionsToTxn: rk->rk_eos.txn_req_cnt > 0"
 * (a surviving TaskManager of e2e/kafka did, once). */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
/* After rdkafka.h, as it asks. */
#include <librdkafka/rdkafka_mock.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "connectors/kafka/kafka_int.h"

/* How many writers are opened, written to and closed (about 10 s); without
 * the abort at close each of 10 runs aborted within its first 3 s. */
#define CLOSES 1000

/* Runs the process on one CPU: a broker thread that the main thread wakes
 * then runs before the main thread goes on, as on a loaded machine, which
 * opens the window between the request's send and its count. */
static void
one_cpu(void)
{
    cpu_set_t now, one;

    cr_assert_eq(sched_getaffinity(0, sizeof now, &now), 0);
    CPU_ZERO(&one);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &now)) {
            CPU_SET(c, &one);
            break;
        }
    cr_assert_eq(sched_setaffinity(0, sizeof one, &one), 0);
}

/* Set by librdkafka's main thread (its debug log, through the plugin's)
 * when a record's partition joins the open transaction, the registration
 * then due in 1 ms; read by the test's thread. */
static atomic_bool marked;

static void
sink_log(void *arg, enum connector_log_level level, const char *msg)
{
    (void)arg;
    (void)level;
    if (strstr(msg, "as part of transaction: scheduling registration") != NULL)
        atomic_store(&marked, true);
}

static int64_t
now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

Test(kafka_sink, closing_an_open_transaction_while_its_partitions_register, .timeout = 120)
{
    char why[256], prefix[32];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_mock_cluster_t *mock;
    rd_kafka_t *owner;
    const char *options[] = {
        "properties.bootstrap.servers",
        NULL,
        "topic",
        "t",
        "sink.delivery-guarantee",
        "exactly-once",
        "sink.transactional-id-prefix",
        prefix,
        "properties.debug",
        "eos",
    };
    struct connector_context ctx = {
        .options = options,
        .noptions = sizeof options / sizeof *options / 2,
        .operator_name = "Sink: kafka",
        .parallelism = 1,
        .checkpointing = true,
        .log = sink_log,
    };

    one_cpu();
    cr_assert_eq(rd_kafka_conf_set(conf, "log_level", "0", why, sizeof why), RD_KAFKA_CONF_OK);
    owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, why, sizeof why);
    cr_assert_not_null(owner, "%s", why);
    mock = rd_kafka_mock_cluster_new(owner, 1);
    cr_assert_not_null(mock);
    cr_assert_eq(rd_kafka_mock_topic_create(mock, "t", 2, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
    options[1] = rd_kafka_mock_cluster_bootstraps(mock);
    for (int i = 0; i < CLOSES; i++) {
        char err[512];
        int64_t deadline;
        void *w;

        /* An id of its own: no writer fences another's transaction. */
        snprintf(prefix, sizeof prefix, "p%d", i);
        atomic_store(&marked, false);
        w = kafka_sink_ops.open(&ctx, err, sizeof err);
        cr_assert_not_null(w, "%s", err);
        for (int k = 0; k < 4; k++) {
            char key[8];

            snprintf(key, sizeof key, "k%d", k);
            cr_assert_eq(kafka_sink_ops.write(w, key, strlen(key), "v", 1, 0, err, sizeof err), 0,
                         "%s", err);
        }
        /* The registration is due 1 ms after a record's partition joins
         * the transaction (once the producer has the topic's partitions);
         * the window is the main thread's last turn before it stops:
         * closes from 0.5 to 1.3 ms after the join. */
        deadline = now_ms() + 10000;
        while (!atomic_load(&marked)) {
            cr_assert_lt(now_ms(), deadline, "no partition joined the transaction in 10 s");
            usleep(100);
        }
        usleep((useconds_t)(500 + i * 7 % 800));
        kafka_sink_ops.close(w);
    }
    rd_kafka_mock_cluster_destroy(mock);
    rd_kafka_destroy(owner);
}

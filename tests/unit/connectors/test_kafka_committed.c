/* Unit tests of the Kafka plugin's read of a group's committed offsets
 * (src/connectors/kafka/kafka_common.c, kafka_committed) against
 * librdkafka's mock cluster: the one fault here that a real broker makes
 * only by chance (a fresh broker's coordinator answering "not coordinator"
 * while it loads __consumer_offsets, which failed e2e/kafka_startup). */
#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
/* After rdkafka.h, as it asks. */
#include <librdkafka/rdkafka_mock.h>

#include "connectors/kafka/kafka_int.h"

#define OFFSET_FETCH 9 /* the Kafka protocol's OffsetFetch request */

static rd_kafka_t *
consumer(rd_kafka_mock_cluster_t **mock)
{
    char why[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_t *rk;

    cr_assert_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", why, sizeof why),
                 RD_KAFKA_CONF_OK, "%s", why);
    cr_assert_eq(rd_kafka_conf_set(conf, "group.id", "g", why, sizeof why), RD_KAFKA_CONF_OK);
    cr_assert_eq(rd_kafka_conf_set(conf, "log_level", "0", why, sizeof why), RD_KAFKA_CONF_OK);
    rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, why, sizeof why);
    cr_assert_not_null(rk, "%s", why);
    *mock = rd_kafka_handle_mock_cluster(rk);
    cr_assert_not_null(*mock);
    cr_assert_eq(rd_kafka_mock_topic_create(*mock, "t", 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
    return rk;
}

static rd_kafka_resp_err_t
committed(rd_kafka_t *rk, int timeout_ms, int64_t *offset)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_resp_err_t e;

    rd_kafka_topic_partition_list_add(l, "t", 0);
    e = kafka_committed(rk, l, timeout_ms);
    *offset = l->elems[0].offset;
    rd_kafka_topic_partition_list_destroy(l);
    return e;
}

Test(kafka_committed, waits_out_a_coordinator_that_is_loading_or_moving)
{
    rd_kafka_mock_cluster_t *mock;
    rd_kafka_t *rk = consumer(&mock);
    int64_t offset = 0;
    rd_kafka_resp_err_t e;

    rd_kafka_mock_push_request_errors(mock, OFFSET_FETCH, 3, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
                                      RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
                                      RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
    e = committed(rk, 10000, &offset);
    cr_expect_eq(e, RD_KAFKA_RESP_ERR_NO_ERROR, "%s", rd_kafka_err2str(e));
    cr_expect_lt(offset, 0, "no offset was committed, read %lld", (long long)offset);
    rd_kafka_destroy(rk);
}

Test(kafka_committed, gives_up_at_its_deadline_with_the_coordinators_error)
{
    rd_kafka_mock_cluster_t *mock;
    rd_kafka_t *rk = consumer(&mock);
    int64_t offset = 0;
    rd_kafka_resp_err_t e;

    for (int i = 0; i < 100; i++)
        rd_kafka_mock_push_request_errors(mock, OFFSET_FETCH, 1, RD_KAFKA_RESP_ERR_NOT_COORDINATOR);
    e = committed(rk, 1000, &offset);
    cr_expect_eq(e, RD_KAFKA_RESP_ERR_NOT_COORDINATOR, "%s", rd_kafka_err2str(e));
    rd_kafka_destroy(rk);
}

Test(kafka_committed, another_error_is_not_retried)
{
    rd_kafka_mock_cluster_t *mock;
    rd_kafka_t *rk = consumer(&mock);
    int64_t offset = 0;
    rd_kafka_resp_err_t e;

    rd_kafka_mock_push_request_errors(mock, OFFSET_FETCH, 2,
                                      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
                                      RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
    e = committed(rk, 10000, &offset);
    cr_expect_eq(e, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED, "%s", rd_kafka_err2str(e));
    rd_kafka_destroy(rk);
}

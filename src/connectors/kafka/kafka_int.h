/* The Kafka connector plugin (libspate_kafka.so) over librdkafka: what its
 * source (kafka_source.c) and sink (kafka_sink.c) share (kafka_common.c):
 * options by the names of Flink's Kafka connector, the librdkafka
 * configuration built from them, messages. Its whole interface to spate is
 * connectors/connector_plugin.h; each reader or writer belongs to one task
 * thread (librdkafka's own threads stay inside librdkafka). */
#ifndef SPATE_CONNECTORS_KAFKA_KAFKA_INT_H
#define SPATE_CONNECTORS_KAFKA_KAFKA_INT_H

#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "connectors/connector_plugin.h"

/* How long a metadata or offsets request waits for the brokers. */
#define KAFKA_REQUEST_TIMEOUT_MS 10000

/* The plugin's entry point (CONNECTOR_PLUGIN_SYMBOL). */
const struct connector_plugin *spate_connector_plugin(void);

extern const struct connector_source_ops kafka_source_ops; /* kafka_source.c */
extern const struct connector_sink_ops kafka_sink_ops;     /* kafka_sink.c */

/* Writes a message into err like snprintf; returns -1. */
int kafka_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The value of option key, or NULL. */
const char *kafka_option(const struct connector_context *ctx, const char *key);

/* Checks that every option is one of known (NULL-ended) or properties.*,
 * and that properties.bootstrap.servers is there. 0, or -1 with err. */
int kafka_check_options(const struct connector_context *ctx, const char *const *known, char *err,
                        size_t errlen);

/* A librdkafka configuration of the properties.* options, the plugin's
 * logger, and the extra key, value pairs (NULL-ended) over them; NULL
 * with err set when librdkafka refuses one (naming it). */
rd_kafka_conf_t *kafka_conf_new(const struct connector_context *ctx, const char *const *extra,
                                char *err, size_t errlen);

/* Checks the properties.* options as kafka_conf_new would take them (a
 * property librdkafka does not know, a bad value), reaching no broker: 0,
 * or -1 with err naming the option. */
int kafka_check_properties(const struct connector_context *ctx, char *err, size_t errlen);

/* A duration of Flink's form ("30 s", "500ms", "1 min", "2h", or a bare
 * number of milliseconds) in ms; -1 when malformed. */
int64_t kafka_parse_duration_ms(const char *s);

/* The subtask of parallelism n that owns partition p of topic: Flink's
 * KafkaSourceEnumerator.getSplitOwner, so that a topic's partitions spread
 * round-robin from a start that the topic's name decides. */
int kafka_split_owner(const char *topic, int32_t partition, int n);

/* The monotonic clock in ms. */
int64_t kafka_now_ms(void);

/* rd_kafka_committed for the partitions of l, waiting out the group's
 * coordinator while it moves or loads the group's offsets (Kafka's clients
 * retry those errors; a fresh broker answers them while it loads
 * __consumer_offsets), within timeout_ms in all. The first error of a
 * partition when the request itself succeeded. */
rd_kafka_resp_err_t kafka_committed(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *l,
                                    int timeout_ms);

#endif

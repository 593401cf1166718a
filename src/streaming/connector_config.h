/* The configuration of each built-in source and sink kind, one struct per
 * kind: what the API call sets (stream_graph.c), the JobGraph carries
 * (job_graph_codec.c decodes it straight into the kind's struct) and the
 * connector (src/connectors/) reads, through stream_operator.conf. Plain
 * data, read-only once built; a node (or a decoded jg_operator) owns its
 * strings and records. */
#ifndef SPATE_STREAMING_CONNECTOR_CONFIG_H
#define SPATE_STREAMING_CONNECTOR_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <spate/sink.h>
#include <spate/source.h>
#include <spate/spate.h>

/* OP_SOURCE_COLLECTION: records given to the job, serialized. */
struct collection_source_config {
    const spate_type *type;
    uint8_t *records; /* each a u32 length and the serialized bytes */
    size_t records_len;
    uint64_t nrecords;
};

/* OP_SOURCE_GENERATOR: fn(index) for index 0, 1, ... (count 0: without
 * end), at most rate records a second over all subtasks (0: unlimited).
 * Its watermark strategy, as any source's, is the node's (wm). */
struct generator_source_config {
    const spate_type *type;
    spate_generator_fn fn;
    uint64_t count;
    double rate;
};

/* OP_SOURCE_SOCKET: lines read from a TCP server. */
struct socket_source_config {
    char *host;
    int port;
};

/* OP_SOURCE_FILE: the lines of a file or of a folder's files; the splits
 * come from its split enumerator on the JobMaster (connectors/file_source.c). */
struct file_source_config {
    char *path;          /* absolute */
    uint64_t split_size; /* 0: sized from the parallelism (not in the JobGraph; tests cut finer) */
};

/* OP_SINK_FILE: a folder of part files, each record a line in format;
 * bucketed (text only), each record its bucket (a folder under path: a
 * partitioned SQL table's partition path), a newline and the line
 * (connectors/file_sink.c). */
struct file_sink_config {
    const spate_type *type;
    char *path; /* absolute */
    bool bucketed;
    spate_file_format format;
    char **field_names; /* JSON's member names, nfield_names (0: f0, f1, ...) */
    int nfield_names;
};

/* OP_SINK_PRINT: each record a line on the task's print stream. */
struct print_sink_config {
    const spate_type *type;
};

/* OP_SOURCE_CONNECTOR, OP_SINK_CONNECTOR: a connector found by its name
 * (Flink's `connector` option: "kafka" is libspate_kafka.so, found by
 * connectors/connector_factory.h) with its options as Flink's connectors
 * name them ("topic", "properties.bootstrap.servers", ...), all strings:
 * the connector checks them when the job is submitted (the JobManager's
 * execution_graph_check_connectors) and again when its task opens it. */
struct named_connector_config {
    const spate_type *type; /* the records read (a source's) or written (a sink's) */
    char *connector;
    char **options; /* key, value, key, value, ...: 2 * noptions strings */
    size_t noptions;
};

/* The value of option key in c, or NULL. */
static inline const char *
named_connector_option(const struct named_connector_config *c, const char *key)
{
    for (size_t i = 0; i < c->noptions; i++)
        if (strcmp(c->options[2 * i], key) == 0)
            return c->options[2 * i + 1];
    return NULL;
}

/* Frees what c owns (a node's or a decoded operator's). */
static inline void
named_connector_release(struct named_connector_config *c)
{
    for (size_t i = 0; i < 2 * c->noptions; i++)
        free(c->options[i]);
    free(c->options);
    free(c->connector);
    c->options = NULL;
    c->connector = NULL;
    c->noptions = 0;
}

/* Frees what c owns (a node's or a decoded operator's). */
static inline void
file_sink_config_release(struct file_sink_config *c)
{
    for (int i = 0; i < c->nfield_names; i++)
        free(c->field_names[i]);
    free(c->field_names);
    free(c->path);
    c->field_names = NULL;
    c->nfield_names = 0;
    c->path = NULL;
}

/* One of the above, by the node's kind. */
/* OP_SOURCE: a job's own source on the Source API; its enumerator and
 * reader get the node's spate_params. */
struct api_source_config {
    const spate_source *source;
};

/* OP_SINK_API: a job's own sink on the Sink API; its writer and committer
 * get the node's spate_params. */
struct api_sink_config {
    const spate_committing_sink *sink;
};

union connector_config {
    struct api_source_config api_source;
    struct api_sink_config api_sink;
    struct collection_source_config collection;
    struct generator_source_config generator;
    struct socket_source_config socket;
    struct file_source_config file_source;
    struct file_sink_config file_sink;
    struct print_sink_config print;
    struct named_connector_config named;
};

#endif

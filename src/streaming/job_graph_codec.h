/* The JobGraph on the wire (proto/jobgraph.proto): encoded by the client,
 * decoded by the JobManager (plan, scheduling; no library needed) and by each
 * TaskManager, which resolves the user functions in its own copy of the job
 * library. Decoding checks everything: the bytes come from outside. */
#ifndef SPATE_STREAMING_JOB_GRAPH_CODEC_H
#define SPATE_STREAMING_JOB_GRAPH_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "streaming/job_graph.h"
#include "streaming/user_code.h"

/* Encodes jg, whose user functions must lie in lib (a clear error names the
 * first that does not). *out is malloc'd. */
int job_graph_encode(const struct job_graph *jg, const struct job_library *lib, uint8_t **out,
                     size_t *len, spate_error *err);
/* Decodes a JobGraph. With lib, user functions are resolved in it; without,
 * they are left NULL (the JobManager never runs user code). */
/* The job id of an encoded JobGraph, without decoding the rest. */
int job_graph_peek_id(const uint8_t *bytes, size_t len, spate_id *job_id, spate_error *err);
int job_graph_decode(const uint8_t *bytes, size_t len, const struct job_library *lib,
                     struct job_graph **out, spate_error *err);

#endif

/* A job's vertices as the REST API shows them (Flink's JobVertexDetails):
 * each vertex's id, name and parallelism, and per subtask its state,
 * attempt, TaskManager, the times it entered each state and, once it ended,
 * what it measured. Built from the ExecutionGraph on the JobMaster's loop;
 * the Dispatcher keeps a finished job's in packed form. */
#ifndef SPATE_JOBMANAGER_JOB_VERTICES_H
#define SPATE_JOBMANAGER_JOB_VERTICES_H

#include "jobmanager/execution_graph.h"
#include "proto/cluster.pb-c.h"

/* Every vertex (vertex NULL) or the one with id vertex (SPATE_ENOENT when
 * there is none). out points into eg: use it before eg changes, then
 * job_vertices_release. */
int job_vertices_build(const struct execution_graph *eg, const spate_id *vertex,
                       Cluster__JobVertices *out);
void job_vertices_release(Cluster__JobVertices *out);

#endif

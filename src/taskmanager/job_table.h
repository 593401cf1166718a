/* The TaskExecutor's job table (Flink's JobTable): one entry per job it holds
 * slots for, with the connection to that job's JobMaster once the
 * JobLeaderService has made it. Owned by its TaskExecutor endpoint. */
#ifndef SPATE_TASKMANAGER_JOB_TABLE_H
#define SPATE_TASKMANAGER_JOB_TABLE_H

#include <stdbool.h>

#include "core/hmap.h"
#include "core/id.h"
#include "rpc/gateway.h"
#include "rpc/leader.h"
#include "rpc/registration.h"

struct job_entry {
    struct hmap_node node;
    spate_id job_id;
    spate_id jm_id;          /* JobMasterId: the fencing token of calls to it */
    char *jm_address;        /* "host:port/endpoint" */
    struct rpc_gateway *jm;  /* the connection, fenced with jm_id; NULL until connected */
    spate_id jm_resource_id; /* its heartbeat id */
    bool connected;
    struct leader_retrieval *retrieval;
    void *retrieval_ctx; /* the JobLeaderService's listener argument */
    struct registration *registration;
};

struct job_table {
    struct hmap jobs;
};

void job_table_init(struct job_table *t);
/* Frees every entry (the caller has disconnected them). */
void job_table_release(struct job_table *t);
struct job_entry *job_table_find(struct job_table *t, const spate_id *job);
/* The entry of job, created if missing (its JobMaster's id and address set). */
struct job_entry *job_table_get_or_create(struct job_table *t, const spate_id *job,
                                          const spate_id *jm_id, const char *jm_address);
void job_table_remove(struct job_table *t, struct job_entry *e);
size_t job_table_count(const struct job_table *t);

#endif

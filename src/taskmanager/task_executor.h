/* The TaskExecutor (Flink's), the TaskManager's endpoint: registers with the
 * ResourceManager leader (retrying), sends its slot report and answers
 * heartbeats with slot reports, allocates slots on requestSlot, offers them
 * to each job's JobMaster through the JobLeaderService, and runs the tasks
 * JobMasters deploy into them (task.h). Loop thread; several may share a
 * process (scale tests, the mini cluster).
 *
 * The registration is fenced by the retrieved leader session: a reply from
 * another session is a refusal, retried. taskmanager.registration.timeout
 * runs from the start and from every reconnection, whether a leader is known
 * or not, and ends the process. A slot no JobMaster accepted within
 * taskmanager.slot.timeout is freed and the ResourceManager told. A
 * disconnect from a ResourceManager it is not registered with (a former
 * leader) is rejected. A JobMaster lost (heartbeat timed out, connection
 * lost: a JobManager killed) has the job's tasks cancelled and its slots
 * freed, as Flink's disconnectJobManagerConnection; one that is no longer the
 * job's leader (the JobLeaderService heard of another: a paused former
 * leader) has its tasks cancelled too, but the slots are kept for the new
 * leader (inactive: offered to it, freed after taskmanager.slot.timeout if
 * not accepted), so that a new leader's attempts never run beside the old
 * ones. It also keeps the metric registry of its tasks (rates recomputed
 * every second) and answers request_metric_dump and StopCluster. */
#ifndef SPATE_TASKMANAGER_TASK_EXECUTOR_H
#define SPATE_TASKMANAGER_TASK_EXECUTOR_H

#include <stdint.h>

#include <stdio.h>

#include "core/config.h"
#include "core/id.h"
#include "ha/ha_services.h"
#include "rpc/future.h"
#include "rpc/heartbeat.h"
#include "rpc/registration.h"
#include "rpc/service.h"
#include "state/state_backend.h"
#include "streaming/latency_stats.h"
#include "taskmanager/library_cache.h"

struct net_env;

struct task_executor;

struct task_executor_options {
    const char *endpoint_name; /* "taskexecutor" */
    spate_id resource_id;
    const char *host; /* taskmanager.host: the metrics' host variable */
    uint32_t slots;
    int data_port; /* the network environment's */
    /* Running tasks (NULL: this TaskExecutor takes none, as in scale tests). */
    struct net_env *net;
    struct library_cache *libraries;
    FILE *print_out;                            /* print sinks' stream: stdout */
    int64_t cancellation_timeout_ms;            /* task.cancellation.timeout; 0: never */
    bool batch_scheduling;                      /* taskmanager.tasks.batch-scheduling */
    struct state_backend_options state_backend; /* state.backend.* */
    struct latency_tracking latency;            /* metrics.latency.* */
    struct registration_options registration;
    int64_t registration_timeout_ms; /* taskmanager.registration.timeout */
    int64_t slot_timeout_ms;         /* taskmanager.slot.timeout */
    struct heartbeat_options heartbeat;
    struct ha_services *ha; /* borrowed */
    /* The process should end: registration timed out (code < 0) or the
     * cluster told it to stop (code 0). Called as the endpoint. */
    void (*on_exit)(void *arg, int code, const char *reason);
    void *arg;
};

/* The options a TaskExecutor reads from the configuration (everything but
 * endpoint name, ha and callbacks). */
int task_executor_options_from_config(const struct config *conf, struct task_executor_options *o,
                                      spate_error *err);

/* Loop thread: creates and starts the endpoint. */
int task_executor_start(struct rpc_service *svc, const struct task_executor_options *o,
                        struct task_executor **out, spate_error *err);
/* Loop thread: tells the ResourceManager it goes, stops the endpoint (freed
 * once its last reference is gone). Returns the termination future. */
struct rpc_future *task_executor_stop(struct task_executor *te, const char *reason);

/* The registry of this TaskExecutor's metrics (its own group and its
 * tasks'), or NULL when it runs no tasks; valid until it is stopped. */
struct metric_registry *task_executor_metric_registry(const struct task_executor *te);

/* Loop thread: how many tasks run (tests and logs). */
size_t task_executor_task_count(const struct task_executor *te);
/* Any thread but the loop's: cancels every task. */
void task_executor_cancel_tasks(struct task_executor *te);
/* Any thread but the loop's: waits until every task's thread has ended
 * (SPATE_ETIMEDOUT after timeout_ms). Call before freeing the network
 * environment and library cache the tasks use. */
int task_executor_wait_tasks(struct task_executor *te, int64_t timeout_ms);

/* Loop thread; for tests and logs. */
bool task_executor_is_registered(const struct task_executor *te);
const spate_id *task_executor_resource_id(const struct task_executor *te);

#endif

/* The cluster's protocols (Flink's ResourceManagerGateway,
 * TaskExecutorGateway, JobMasterGateway, DispatcherGateway): one line per
 * method, with the messages of proto/cluster.proto. Only the typed stubs
 * live here, below both sides; the logic is in src/jobmanager/ and
 * src/taskmanager/. Protocol ids: 3 RM, 4 TE, 5 JM, 6 Dispatcher.
 *
 * Fencing (endpoint.h's enum rpc_fence): every connection is authenticated
 * by its handshake (security.rpc.secret); FENCED methods also need the
 * endpoint's current fencing token; LOCAL ones, the controls that change the
 * cluster behind the REST API (submit, cancel, savepoints, shutdown), are
 * served to this process only. CONTROL (unfenced) and FENCED_CONTROL mark
 * the other controls, between processes (registrations, disconnections,
 * slots, deploying and cancelling tasks, stopping a TaskExecutor): the
 * access log names the peer of each call, as of every LOCAL one. Periodic
 * traffic (heartbeats, slot reports, checkpoint triggers and acks, metric
 * dumps) and queries are not logged. */
#ifndef SPATE_RPC_GATEWAYS_H
#define SPATE_RPC_GATEWAYS_H

#include <stdbool.h>
#include <string.h>

#include "proto/checkpoint.pb-c.h"
#include "proto/checkpoint_stats.pb-c.h"
#include "proto/cluster.pb-c.h"
#include "proto/jobgraph.pb-c.h"
#include "rpc/protocol.h"

#define RPC_ENDPOINT_RESOURCE_MANAGER "resourcemanager"
#define RPC_ENDPOINT_DISPATCHER       "dispatcher"
#define RPC_ENDPOINT_TASK_EXECUTOR    "taskexecutor"

#define RM_METHODS(X, P)                                                                          \
    X(P, register_task_executor, 1, ASK, CONTROL, Cluster__TaskExecutorRegistration,              \
      cluster__task_executor_registration, Cluster__RegistrationReply,                            \
      cluster__registration_reply)                                                                \
    X(P, send_slot_report, 2, ASK, FENCED, Cluster__SendSlotReport, cluster__send_slot_report,    \
      Cluster__Ack, cluster__ack)                                                                 \
    X(P, notify_slot_available, 3, TELL, FENCED, Cluster__SlotAvailable, cluster__slot_available, \
      void, none)                                                                                 \
    X(P, register_job_master, 4, ASK, CONTROL, Cluster__JobMasterRegistration,                    \
      cluster__job_master_registration, Cluster__RegistrationReply, cluster__registration_reply)  \
    X(P, request_slot, 5, ASK, FENCED, Cluster__SlotRequest, cluster__slot_request, Cluster__Ack, \
      cluster__ack)                                                                               \
    X(P, cancel_slot_request, 6, TELL, FENCED, Cluster__CancelSlotRequest,                        \
      cluster__cancel_slot_request, void, none)                                                   \
    X(P, disconnect_task_manager, 7, TELL, FENCED_CONTROL, Cluster__Disconnect,                   \
      cluster__disconnect, void, none)                                                            \
    X(P, disconnect_job_manager, 8, TELL, FENCED_CONTROL, Cluster__Disconnect,                    \
      cluster__disconnect, void, none)                                                            \
    X(P, request_overview, 9, ASK, UNFENCED, Cluster__Ack, cluster__ack,                          \
      Cluster__ResourceOverview, cluster__resource_overview)                                      \
    X(P, request_task_managers, 10, ASK, UNFENCED, Cluster__TaskManagerQuery,                     \
      cluster__task_manager_query, Cluster__TaskManagerInfos, cluster__task_manager_infos)        \
    X(P, stop_cluster, 11, ASK, LOCAL, Cluster__StopCluster, cluster__stop_cluster, Cluster__Ack, \
      cluster__ack)
RPC_PROTOCOL_DECLARE(rm, RM_METHODS)

#define TE_METHODS(X, P)                                                                           \
    X(P, request_slot, 1, ASK, CONTROL, Cluster__TaskExecutorSlotRequest,                          \
      cluster__task_executor_slot_request, Cluster__Ack, cluster__ack)                             \
    X(P, free_slot, 2, ASK, CONTROL, Cluster__FreeSlot, cluster__free_slot, Cluster__Ack,          \
      cluster__ack)                                                                                \
    X(P, disconnect_resource_manager, 3, TELL, CONTROL, Cluster__Disconnect, cluster__disconnect,  \
      void, none)                                                                                  \
    X(P, disconnect_job_manager, 4, TELL, CONTROL, Cluster__Disconnect, cluster__disconnect, void, \
      none)                                                                                        \
    X(P, stop_task_executor, 5, TELL, CONTROL, Cluster__StopCluster, cluster__stop_cluster, void,  \
      none)                                                                                        \
    X(P, submit_task, 6, ASK, CONTROL, Jobgraph__TaskDeployment, jobgraph__task_deployment,        \
      Cluster__Ack, cluster__ack)                                                                  \
    X(P, cancel_task, 7, ASK, CONTROL, Cluster__TaskId, cluster__task_id, Cluster__Ack,            \
      cluster__ack)                                                                                \
    X(P, trigger_checkpoint, 8, TELL, UNFENCED, Checkpoint__TriggerCheckpoint,                     \
      checkpoint__trigger_checkpoint, void, none)                                                  \
    X(P, notify_checkpoint_complete, 9, TELL, UNFENCED, Checkpoint__CheckpointNotification,        \
      checkpoint__checkpoint_notification, void, none)                                             \
    X(P, notify_checkpoint_aborted, 10, TELL, UNFENCED, Checkpoint__CheckpointNotification,        \
      checkpoint__checkpoint_notification, void, none)                                             \
    X(P, request_metric_dump, 11, ASK, UNFENCED, Cluster__Ack, cluster__ack, Cluster__MetricDump,  \
      cluster__metric_dump)                                                                        \
    X(P, request_thread_dump, 12, ASK, UNFENCED, Cluster__Ack, cluster__ack, Cluster__ThreadDump,  \
      cluster__thread_dump)                                                                        \
    X(P, request_log_list, 13, ASK, UNFENCED, Cluster__Ack, cluster__ack, Cluster__LogList,        \
      cluster__log_list)                                                                           \
    X(P, request_log_file, 14, ASK, UNFENCED, Cluster__LogFileRequest, cluster__log_file_request,  \
      Cluster__LogFile, cluster__log_file)                                                         \
    X(P, request_thread_samples, 15, ASK, UNFENCED, Cluster__ThreadSamplesRequest,                 \
      cluster__thread_samples_request, Cluster__ThreadSamples, cluster__thread_samples)
RPC_PROTOCOL_DECLARE(te, TE_METHODS)

#define JM_METHODS(X, P)                                                                           \
    X(P, register_task_manager, 1, ASK, FENCED_CONTROL, Cluster__TaskManagerRegistration,          \
      cluster__task_manager_registration, Cluster__RegistrationReply, cluster__registration_reply) \
    X(P, offer_slots, 2, ASK, FENCED, Cluster__SlotOffers, cluster__slot_offers,                   \
      Cluster__AcceptedSlots, cluster__accepted_slots)                                             \
    X(P, disconnect_task_manager, 3, TELL, FENCED_CONTROL, Cluster__Disconnect,                    \
      cluster__disconnect, void, none)                                                             \
    X(P, disconnect_resource_manager, 4, TELL, CONTROL, Cluster__Disconnect, cluster__disconnect,  \
      void, none)                                                                                  \
    X(P, update_task_execution_state, 5, ASK, FENCED, Cluster__TaskExecutionState,                 \
      cluster__task_execution_state, Cluster__Ack, cluster__ack)                                   \
    X(P, request_split, 6, ASK, FENCED, Cluster__SplitRequest, cluster__split_request,             \
      Cluster__SplitAssignment, cluster__split_assignment)                                         \
    X(P, acknowledge_checkpoint, 7, TELL, FENCED, Checkpoint__AcknowledgeCheckpoint,               \
      checkpoint__acknowledge_checkpoint, void, none)                                              \
    X(P, decline_checkpoint, 8, TELL, FENCED, Checkpoint__DeclineCheckpoint,                       \
      checkpoint__decline_checkpoint, void, none)
RPC_PROTOCOL_DECLARE(jm, JM_METHODS)

#define DISPATCHER_METHODS(X, P)                                                                   \
    X(P, request_jobs, 1, ASK, UNFENCED, Cluster__Ack, cluster__ack, Cluster__JobsOverview,        \
      cluster__jobs_overview)                                                                      \
    X(P, request_job, 2, ASK, UNFENCED, Cluster__JobId, cluster__job_id, Cluster__JobInfo,         \
      cluster__job_info)                                                                           \
    X(P, shutdown_cluster, 3, ASK, LOCAL, Cluster__StopCluster, cluster__stop_cluster,             \
      Cluster__Ack, cluster__ack)                                                                  \
    X(P, request_cluster_overview, 4, ASK, UNFENCED, Cluster__Ack, cluster__ack,                   \
      Cluster__ClusterOverview, cluster__cluster_overview)                                         \
    X(P, cancel_job, 5, ASK, LOCAL, Cluster__JobId, cluster__job_id, Cluster__Ack, cluster__ack)   \
    X(P, submit_job, 6, ASK, LOCAL, Cluster__JobSubmission, cluster__job_submission,               \
      Cluster__JobId, cluster__job_id)                                                             \
    X(P, request_job_details, 7, ASK, UNFENCED, Cluster__JobId, cluster__job_id,                   \
      Cluster__JobDetails, cluster__job_details)                                                   \
    X(P, request_job_vertices, 8, ASK, UNFENCED, Cluster__JobVertexQuery,                          \
      cluster__job_vertex_query, Cluster__JobVertices, cluster__job_vertices)                      \
    X(P, request_checkpoint_stats, 9, ASK, UNFENCED, Ckstats__StatsRequest,                        \
      ckstats__stats_request, Ckstats__CheckpointingStats, ckstats__checkpointing_stats)           \
    X(P, trigger_checkpoint, 10, ASK, LOCAL, Ckstats__TriggerRequest, ckstats__trigger_request,    \
      Ckstats__TriggerReply, ckstats__trigger_reply)                                               \
    X(P, checkpoint_trigger_status, 11, ASK, UNFENCED, Ckstats__TriggerStatusRequest,              \
      ckstats__trigger_status_request, Ckstats__TriggerStatus, ckstats__trigger_status)            \
    X(P, trigger_savepoint, 12, ASK, LOCAL, Ckstats__SavepointRequest, ckstats__savepoint_request, \
      Ckstats__TriggerReply, ckstats__trigger_reply)                                               \
    X(P, dispose_savepoint, 13, ASK, LOCAL, Ckstats__DisposeRequest, ckstats__dispose_request,     \
      Ckstats__TriggerReply, ckstats__trigger_reply)                                               \
    X(P, dispose_status, 14, ASK, UNFENCED, Ckstats__DisposeStatusRequest,                         \
      ckstats__dispose_status_request, Ckstats__TriggerStatus, ckstats__trigger_status)
RPC_PROTOCOL_DECLARE(dispatcher, DISPATCHER_METHODS)

/* Ids in messages: 16 bytes, or empty for none. */
static inline ProtobufCBinaryData
gw_id_bytes(const spate_id *id)
{
    ProtobufCBinaryData b = { id ? ID_BYTES : 0, id ? (uint8_t *)id->bytes : NULL };

    return b;
}

/* Reads an id field; false when it is not 16 bytes (bad input). */
static inline bool
gw_id_get(const ProtobufCBinaryData *b, spate_id *out)
{
    if (b->len != ID_BYTES)
        return false;
    memcpy(out->bytes, b->data, ID_BYTES);
    return true;
}

#endif

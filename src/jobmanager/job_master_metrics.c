/* A job's metrics on its JobMaster (Flink's JobManagerJobMetricGroup, scope
 * "jobmanager_job", variables host, job_id, job_name): its status times
 * (uptime, downtime, restartingTime), restarts and checkpoint figures, as
 * gauges the JobMaster sets on its loop every second and when it stops;
 * reporters and REST read them from the registry. */
#include <stdio.h>

#include "core/clock.h"
#include "core/log.h"
#include "jobmanager/checkpoint_stats_tracker.h"
#include "jobmanager/job_master_int.h"

#define JM_METRICS_UPDATE_MS 1000

/* Flink's gauges: uptime is the time since RUNNING while it runs, -1 once
 * the job ended, else 0; downtime the time since it failed while it fails
 * or restarts; restartingTime that of the restart in progress, else of the
 * last one. */
static void
jm_status_gauges(struct job_master *jm, int64_t now)
{
    struct jm_job_metrics *m = &jm->metrics;
    int64_t running = jm->status_times[JOB_RUNNING];
    int64_t restarting = jm->status_times[JOB_RESTARTING];
    int64_t up = 0, down = 0, restart = 0;

    if (job_status_is_terminal(jm->status)) {
        up = down = -1;
    } else if (jm->status == JOB_RUNNING && running > 0) {
        up = now - running;
    } else if ((jm->status == JOB_RESTARTING || jm->status == JOB_FAILING) && restarting > 0) {
        down = now - restarting;
    }
    if (jm->status == JOB_RESTARTING && restarting > 0)
        restart = now - restarting;
    else if (restarting > 0 && running > restarting)
        restart = running - restarting;
    metric_gauge_set(&m->uptime, up);
    metric_gauge_set(&m->downtime, down);
    metric_gauge_set(&m->restarting_time, restart);
}

void
jm_metrics_refresh(struct job_master *jm)
{
    struct jm_job_metrics *m = &jm->metrics;
    struct checkpoint_stats_counts c = {
        .last_id = -1, .last_duration_ms = -1, .last_size = -1, .last_restore_ms = -1
    };

    if (m->group == NULL)
        return;
    jm_status_gauges(jm, clock_wall_ms());
    metric_gauge_set(&m->num_restarts, jm->num_restarts);
    metric_gauge_set(&m->full_restarts, jm->num_restarts);
    if (jm->cc != NULL)
        checkpoint_coordinator_stats_counts(jm->cc, &c);
    metric_gauge_set(&m->total_checkpoints, c.total);
    metric_gauge_set(&m->in_progress_checkpoints, c.in_progress);
    metric_gauge_set(&m->completed_checkpoints, c.completed);
    metric_gauge_set(&m->failed_checkpoints, c.failed);
    metric_gauge_set(&m->last_checkpoint_duration, c.last_duration_ms);
    metric_gauge_set(&m->last_checkpoint_size, c.last_size);
    metric_gauge_set(&m->last_checkpoint_restore, c.last_restore_ms);
    metric_gauge_set(&m->last_completed_checkpoint_id, c.last_id);
}

static void
jm_metrics_tick(void *arg)
{
    struct job_master *jm = arg;

    jm->metrics.timer = NULL;
    if (!rpc_endpoint_is_running(&jm->ep))
        return;
    jm_metrics_refresh(jm);
    jm->metrics.timer = rpc_endpoint_schedule(&jm->ep, JM_METRICS_UPDATE_MS, jm_metrics_tick, jm);
}

void
jm_metrics_start(struct job_master *jm)
{
    struct jm_job_metrics *m = &jm->metrics;
    id_text job = id_str(&jm->o.job_id);
    const char *labels[] = { "host",     jm->o.host != NULL ? jm->o.host : "localhost",
                             "job_id",   job.s,
                             "job_name", jm->name != NULL ? jm->name : "",
                             NULL };
    char scope[ID_HEX_LEN + 8];
    static const struct {
        const char *name;
        size_t offset;
    } gauges[] = {
        { "uptime", offsetof(struct jm_job_metrics, uptime) },
        { "downtime", offsetof(struct jm_job_metrics, downtime) },
        { "restartingTime", offsetof(struct jm_job_metrics, restarting_time) },
        { "numRestarts", offsetof(struct jm_job_metrics, num_restarts) },
        { "fullRestarts", offsetof(struct jm_job_metrics, full_restarts) },
        { "totalNumberOfCheckpoints", offsetof(struct jm_job_metrics, total_checkpoints) },
        { "numberOfInProgressCheckpoints",
          offsetof(struct jm_job_metrics, in_progress_checkpoints) },
        { "numberOfCompletedCheckpoints", offsetof(struct jm_job_metrics, completed_checkpoints) },
        { "numberOfFailedCheckpoints", offsetof(struct jm_job_metrics, failed_checkpoints) },
        { "lastCheckpointDuration", offsetof(struct jm_job_metrics, last_checkpoint_duration) },
        { "lastCheckpointSize", offsetof(struct jm_job_metrics, last_checkpoint_size) },
        { "lastCheckpointFullSize", offsetof(struct jm_job_metrics, last_checkpoint_size) },
        { "lastCheckpointRestoreTimestamp",
          offsetof(struct jm_job_metrics, last_checkpoint_restore) },
        { "lastCompletedCheckpointId",
          offsetof(struct jm_job_metrics, last_completed_checkpoint_id) },
    };

    if (jm->o.metrics == NULL)
        return;
    snprintf(scope, sizeof scope, "job.%s", job.s);
    m->group = metric_group_new_scoped(jm->o.metrics, scope, "jobmanager_job", labels);
    for (size_t i = 0; i < sizeof gauges / sizeof gauges[0]; i++)
        metric_group_gauge(m->group, gauges[i].name,
                           (struct metric_gauge *)((char *)m + gauges[i].offset));
    jm_metrics_refresh(jm);
    m->timer = rpc_endpoint_schedule(&jm->ep, JM_METRICS_UPDATE_MS, jm_metrics_tick, jm);
}

void
jm_metrics_stop(struct job_master *jm)
{
    rpc_timer_cancel(jm->metrics.timer);
    jm->metrics.timer = NULL;
    metric_group_free(jm->metrics.group);
    jm->metrics.group = NULL;
}

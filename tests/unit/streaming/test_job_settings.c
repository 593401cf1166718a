/* Unit tests of src/streaming/job_settings.c: a job's checkpointing and
 * restart strategy from the configuration and the job's own call, spate's
 * defaults, bad values, the trip through the encoded JobGraph, and the
 * cluster's configuration for what the job did not set. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "streaming/job_graph.h"
#include "streaming/job_graph_codec.h"
#include "streaming/job_settings.h"
#include "streaming/types.h"

static struct config *
conf_of(const char *const *kv)
{
    struct config *c = config_new();

    for (; kv[0] != NULL; kv += 2)
        config_set(c, kv[0], kv[1], "test");
    return c;
}

Test(job_settings, without_configuration_no_checkpoints_and_no_restarts)
{
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(NULL, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 0);
    cr_assert_null(cp.checkpoints_dir);
    cr_assert_eq(rs.kind, RESTART_NONE);
    job_settings_release(&cp);
}

Test(job_settings, checkpointing_brings_exponential_delay_with_spates_defaults)
{
    static const char *const kv[] = { "execution.checkpointing.interval", "200 ms", "io.tmp.dirs",
                                      "/var/tmp/x;/other", NULL };
    struct config *c = conf_of(kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(c, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 200);
    cr_assert_eq(cp.timeout_ms, 600000);
    cr_assert_eq(cp.max_concurrent, 1);
    cr_assert_eq(cp.tolerable_failures, 0);
    cr_assert_eq(cp.num_retained, 1);
    cr_assert(cp.exactly_once);
    cr_assert_eq(cp.retention, RETAIN_NEVER);
    /* The folder is the cluster's to settle: the JobMaster fills it in. */
    cr_assert_null(cp.checkpoints_dir);
    cr_assert_eq(job_settings_complete(&cp, &rs, c, "job", &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/var/tmp/x/spate-checkpoints");
    cr_assert_eq(rs.kind, RESTART_EXPONENTIAL_DELAY);
    cr_assert_eq(rs.initial_backoff_ms, 50);
    cr_assert_eq(rs.max_backoff_ms, 10000);
    cr_assert_float_eq(rs.backoff_multiplier, 1.5, 1e-9);
    cr_assert_float_eq(rs.jitter_factor, 0.1, 1e-9);
    cr_assert_eq(rs.reset_backoff_threshold_ms, 3600000);
    job_settings_release(&cp);
    config_free(c);
}

Test(job_settings, every_key_is_read_and_relative_folders_become_absolute)
{
    static const char *const kv[] = {
        "execution.checkpointing.interval",
        "1 s",
        "execution.checkpointing.timeout",
        "3 s",
        "execution.checkpointing.min-pause",
        "150 ms",
        "execution.checkpointing.max-concurrent-checkpoints",
        "3",
        "execution.checkpointing.tolerable-failed-checkpoints",
        "2",
        "execution.checkpointing.mode",
        "at_least_once",
        "execution.checkpointing.externalized-checkpoint-retention",
        "DELETE_ON_CANCELLATION",
        "state.checkpoints.num-retained",
        "4",
        "state.checkpoints.dir",
        "rel/ckpts/",
        "state.savepoints.dir",
        "/sp",
        "restart-strategy.type",
        "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval",
        "5",
        "restart-strategy.failure-rate.failure-rate-interval",
        "30 s",
        "restart-strategy.failure-rate.delay",
        "250 ms",
        NULL,
    };
    struct config *c = conf_of(kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };
    char cwd[4096], want[4200];

    cr_assert_eq(job_settings_from_config(c, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(cp.timeout_ms, 3000);
    cr_assert_eq(cp.min_pause_ms, 150);
    cr_assert_eq(cp.max_concurrent, 3);
    cr_assert_eq(cp.tolerable_failures, 2);
    cr_assert_not(cp.exactly_once);
    cr_assert_eq(cp.retention, RETAIN_ON_FAILURE);
    cr_assert_eq(cp.num_retained, 4);
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    snprintf(want, sizeof want, "%s/rel/ckpts", cwd);
    cr_assert_str_eq(cp.checkpoints_dir, want);
    cr_assert_str_eq(cp.savepoints_dir, "/sp");
    cr_assert_eq(rs.kind, RESTART_FAILURE_RATE);
    cr_assert_eq(rs.max_failures_per_interval, 5);
    cr_assert_eq(rs.failure_rate_interval_ms, 30000);
    cr_assert_eq(rs.delay_ms, 250);
    job_settings_release(&cp);
    config_free(c);
}

Test(job_settings, the_jobs_call_wins_over_the_configuration)
{
    static const char *const kv[] = { "execution.checkpointing.interval",
                                      "5 s",
                                      "execution.checkpointing.mode",
                                      "EXACTLY_ONCE",
                                      "restart-strategy.type",
                                      "fixed-delay",
                                      "restart-strategy.fixed-delay.attempts",
                                      "7",
                                      "restart-strategy.fixed-delay.delay",
                                      "20 ms",
                                      NULL };
    struct config *c = conf_of(kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(c, 200, 0, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 200);
    cr_assert_not(cp.exactly_once);
    cr_assert_eq(rs.kind, RESTART_FIXED_DELAY);
    cr_assert_eq(rs.attempts, 7);
    cr_assert_eq(rs.delay_ms, 20);
    job_settings_release(&cp);
    config_free(c);
}

static void
expect_error(const char *const *kv, const char *needle)
{
    struct config *c = conf_of(kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_neq(job_settings_from_config(c, 0, -1, &cp, &rs, &err), 0, "accepted: %s", needle);
    cr_assert(strstr(err.message, needle) != NULL, "'%s' does not name '%s'", err.message, needle);
    config_free(c);
}

Test(job_settings, bad_values_are_errors_naming_the_key)
{
    static const char *const multiplier[] = {
        "restart-strategy.type", "exponential-delay",
        "restart-strategy.exponential-delay.backoff-multiplier", "1", NULL
    };
    static const char *const backoffs[] = { "restart-strategy.type",
                                            "exponential-delay",
                                            "restart-strategy.exponential-delay.initial-backoff",
                                            "20 s",
                                            "restart-strategy.exponential-delay.max-backoff",
                                            "10 s",
                                            NULL };
    static const char *const duration[] = { "execution.checkpointing.timeout", "soon", NULL };
    static const char *const mode[] = { "execution.checkpointing.mode", "BOTH", NULL };
    static const char *const interval[] = { "execution.checkpointing.interval", "5 ms", NULL };
    static const char *const type[] = { "restart-strategy.type", "sometimes", NULL };

    expect_error(multiplier, "backoff-multiplier");
    expect_error(backoffs, "initial-backoff");
    expect_error(duration, "execution.checkpointing.timeout");
    expect_error(mode, "execution.checkpointing.mode");
    expect_error(interval, "execution.checkpointing.interval");
    expect_error(type, "restart-strategy.type");
}

Test(job_settings, the_job_graph_carries_them_to_the_job_manager)
{
    static const char *const kv[] = { "execution.checkpointing.timeout",
                                      "2 s",
                                      "execution.checkpointing.externalized-checkpoint-retention",
                                      "RETAIN_ON_CANCELLATION",
                                      "state.checkpoints.dir",
                                      "/ck",
                                      NULL };
    struct config *c = conf_of(kv);
    spate_env *env = env_new(c, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct job_graph *jg, *back;
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;

    spate_sink_print(spate_source_collection(env, spate_type_int64(), values, 3));
    spate_env_enable_checkpointing(env, 200, false);
    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_encode(jg, NULL, &bytes, &len, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_decode(bytes, len, NULL, &back, &err), 0, "%s", err.message);
    cr_assert_eq(back->checkpointing.interval_ms, 200);
    cr_assert_eq(back->checkpointing.timeout_ms, 2000);
    cr_assert_not(back->checkpointing.exactly_once);
    cr_assert_eq(back->checkpointing.retention, RETAIN_ON_CANCELLATION);
    cr_assert_str_eq(back->checkpointing.checkpoints_dir, "/ck");
    cr_assert_eq(back->restart.kind, RESTART_EXPONENTIAL_DELAY);
    cr_assert_eq(back->restart.initial_backoff_ms, 50);
    cr_assert_eq(back->restart.attempts_before_reset, INT32_MAX);
    free(bytes);
    job_graph_free(back);
    job_graph_free(jg);
    env_free(env);
    config_free(c);
}

Test(job_settings, a_checkpoint_interval_below_10_ms_is_refused)
{
    spate_env *env = env_new(NULL, NULL);

    spate_env_enable_checkpointing(env, 5, true);
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message, "10 ms") != NULL);
    env_free(env);
}

Test(job_settings, malformed_settings_in_a_job_graph_are_errors)
{
    Jobgraph__CheckpointSettings pcp = JOBGRAPH__CHECKPOINT_SETTINGS__INIT;
    Jobgraph__RestartSettings prs = JOBGRAPH__RESTART_SETTINGS__INIT;
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    pcp.interval_ms = 100;
    pcp.timeout_ms = 1000;
    pcp.max_concurrent = 1;
    pcp.num_retained = 1;
    pcp.checkpoints_dir = "relative";
    cr_assert_neq(job_settings_decode(&pcp, NULL, &cp, &rs, &err), 0);
    pcp.checkpoints_dir = "/abs";
    cr_assert_eq(job_settings_decode(&pcp, NULL, &cp, &rs, &err), 0, "%s", err.message);
    job_settings_release(&cp);
    prs.type = "whenever";
    cr_assert_neq(job_settings_decode(&pcp, &prs, &cp, &rs, &err), 0);
    cr_assert(strstr(err.message, "whenever") != NULL);
    prs.type = "exponential-delay";
    prs.initial_backoff_ms = 10;
    prs.max_backoff_ms = 100;
    prs.reset_backoff_threshold_ms = 1000;
    prs.attempts_before_reset = 1;
    prs.backoff_multiplier = 0.5;
    cr_assert_neq(job_settings_decode(&pcp, &prs, &cp, &rs, &err), 0);
    prs.backoff_multiplier = 2;
    cr_assert_eq(job_settings_decode(&pcp, &prs, &cp, &rs, &err), 0, "%s", err.message);
    job_settings_release(&cp);
}

Test(job_settings, the_clusters_folders_fill_what_the_job_did_not_set)
{
    static const char *const job_kv[] = { "execution.checkpointing.interval", "200 ms", NULL };
    static const char *const own_kv[] = { "execution.checkpointing.interval", "200 ms",
                                          "state.checkpoints.dir", "/job/chk", NULL };
    static const char *const cluster_kv[] = { "state.checkpoints.dir", "/cluster/chk",
                                              "state.savepoints.dir", "/cluster/sp", NULL };
    struct config *job = conf_of(job_kv), *own = conf_of(own_kv), *cluster = conf_of(cluster_kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(job, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_null(cp.checkpoints_dir);
    cr_assert_null(cp.savepoints_dir);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/cluster/chk");
    cr_assert_str_eq(cp.savepoints_dir, "/cluster/sp");
    job_settings_release(&cp);
    /* The job's own folder wins over the cluster's. */
    cr_assert_eq(job_settings_from_config(own, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/job/chk");
    cr_assert_str_eq(cp.savepoints_dir, "/cluster/sp");
    job_settings_release(&cp);
    /* Neither: spate's default, under /tmp. */
    cr_assert_eq(job_settings_from_config(job, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, NULL, "job", &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/tmp/spate-checkpoints");
    cr_assert_null(cp.savepoints_dir);
    job_settings_release(&cp);
    config_free(job);
    config_free(own);
    config_free(cluster);
}

Test(job_settings, the_clusters_settings_fill_what_the_job_did_not_set)
{
    static const char *const cluster_kv[] = { "execution.checkpointing.interval",
                                              "300 ms",
                                              "execution.checkpointing.timeout",
                                              "4 s",
                                              "execution.checkpointing.mode",
                                              "AT_LEAST_ONCE",
                                              "state.checkpoints.num-retained",
                                              "3",
                                              "restart-strategy.type",
                                              "fixed-delay",
                                              "restart-strategy.fixed-delay.attempts",
                                              "6",
                                              NULL };
    struct config *cluster = conf_of(cluster_kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    /* A job that sets nothing: checkpointing and restarts are the cluster's. */
    cr_assert_eq(job_settings_from_config(NULL, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_null(cp.job_config);
    cr_assert_eq(cp.interval_ms, 0);
    cr_assert_eq(rs.kind, RESTART_NONE);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 300);
    cr_assert_eq(cp.timeout_ms, 4000);
    cr_assert_not(cp.exactly_once);
    cr_assert_eq(cp.num_retained, 3);
    cr_assert_str_eq(cp.checkpoints_dir, "/tmp/spate-checkpoints");
    cr_assert_eq(rs.kind, RESTART_FIXED_DELAY);
    cr_assert_eq(rs.attempts, 6);
    job_settings_release(&cp);

    /* Its code's interval and mode win; the cluster fills the rest. */
    cr_assert_eq(job_settings_from_config(NULL, 1000, 1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 1000);
    cr_assert(cp.exactly_once);
    cr_assert_eq(cp.timeout_ms, 4000);
    cr_assert_eq(rs.kind, RESTART_FIXED_DELAY);
    job_settings_release(&cp);

    /* Without a cluster configuration, spate's defaults: nothing changes. */
    cr_assert_eq(job_settings_from_config(NULL, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, NULL, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 0);
    cr_assert_null(cp.checkpoints_dir);
    cr_assert_eq(rs.kind, RESTART_NONE);
    job_settings_release(&cp);
    config_free(cluster);
}

Test(job_settings, what_the_jobs_configuration_sets_wins_key_by_key)
{
    /* The job names the strategy by its older key; the cluster by its own. */
    static const char *const job_kv[] = { "execution.checkpointing.timeout",
                                          "2 s",
                                          "restart-strategy",
                                          "none",
                                          "state.savepoints.dir",
                                          "/job/sp",
                                          NULL };
    static const char *const cluster_kv[] = { "execution.checkpointing.interval",
                                              "300 ms",
                                              "execution.checkpointing.timeout",
                                              "9 s",
                                              "execution.checkpointing.min-pause",
                                              "40 ms",
                                              "restart-strategy.type",
                                              "fixed-delay",
                                              "state.savepoints.dir",
                                              "/cluster/sp",
                                              NULL };
    struct config *job = conf_of(job_kv), *cluster = conf_of(cluster_kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(job, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.job_config, "execution.checkpointing.timeout: \"2 s\"\n"
                                    "state.savepoints.dir: \"/job/sp\"\n"
                                    "restart-strategy.type: \"none\"\n");
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.interval_ms, 300);
    cr_assert_eq(cp.timeout_ms, 2000);
    cr_assert_eq(cp.min_pause_ms, 40);
    cr_assert_str_eq(cp.savepoints_dir, "/job/sp");
    cr_assert_eq(rs.kind, RESTART_NONE);
    /* The job's own keys stay: resolving again gives the same. */
    cr_assert_not_null(cp.job_config);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.timeout_ms, 2000);
    cr_assert_eq(rs.kind, RESTART_NONE);
    job_settings_release(&cp);
    config_free(job);
    config_free(cluster);
}

Test(job_settings, a_folder_with_quotes_and_a_line_break_survives_the_jobs_configuration)
{
    static const char *const job_kv[] = { "state.checkpoints.dir", "/a \"b\" \\c\nd: #e", NULL };
    struct config *job = conf_of(job_kv);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(job, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, NULL, "job", &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/a \"b\" \\c\nd: #e");
    job_settings_release(&cp);
    config_free(job);
}

static void
expect_complete_error(const char *job_config, const char *needle)
{
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(NULL, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cp.job_config = strdup(job_config);
    cr_assert_neq(job_settings_complete(&cp, &rs, NULL, "job", &err), 0, "accepted: %s",
                  job_config);
    cr_assert(strstr(err.message, needle) != NULL, "'%s' does not name '%s'", err.message, needle);
    /* Left as it was. */
    cr_assert_str_eq(cp.job_config, job_config);
    cr_assert_eq(cp.interval_ms, 0);
    job_settings_release(&cp);
}

Test(job_settings, a_bad_jobs_configuration_is_an_error)
{
    expect_complete_error("io.tmp.dirs: \"/elsewhere\"\n", "io.tmp.dirs");
    expect_complete_error("state.checkpoints.dir: \"relative\"\n", "not absolute");
    expect_complete_error("execution.checkpointing.interval: \"soon\"\n",
                          "execution.checkpointing.interval");
    expect_complete_error("execution.checkpointing.interval: [\n", "the job's configuration");
}

Test(job_settings, the_resolved_settings_reach_the_task_managers_graph)
{
    static const char *const cluster_kv[] = { "execution.checkpointing.interval", "300 ms",
                                              "execution.checkpointing.mode", "AT_LEAST_ONCE",
                                              NULL };
    struct config *cluster = conf_of(cluster_kv);
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct job_graph *jg, *back, *deployed;
    spate_error err = { 0 };
    uint8_t *bytes, *again;
    size_t len, again_len;

    spate_sink_print(spate_source_collection(env, spate_type_int64(), values, 3));
    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_encode(jg, NULL, &bytes, &len, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_decode(bytes, len, NULL, &back, &err), 0, "%s", err.message);
    cr_assert_eq(back->checkpointing.interval_ms, 0);
    cr_assert_eq(job_settings_complete(&back->checkpointing, &back->restart, cluster, "job", &err),
                 0, "%s", err.message);
    cr_assert_eq(job_settings_reencode(bytes, len, &back->checkpointing, &back->restart, &again,
                                       &again_len, &err),
                 0, "%s", err.message);
    cr_assert_eq(job_graph_decode(again, again_len, NULL, &deployed, &err), 0, "%s", err.message);
    cr_assert_eq(deployed->checkpointing.interval_ms, 300);
    cr_assert_not(deployed->checkpointing.exactly_once);
    cr_assert_str_eq(deployed->checkpointing.checkpoints_dir, "/tmp/spate-checkpoints");
    cr_assert_eq(deployed->restart.kind, RESTART_EXPONENTIAL_DELAY);
    cr_assert_eq(deployed->nvertices, back->nvertices);
    cr_assert_neq(job_settings_reencode((const uint8_t *)"\xff\xff", 2, &back->checkpointing,
                                        &back->restart, &again, &again_len, &err),
                  0);
    free(bytes);
    free(again);
    job_graph_free(deployed);
    job_graph_free(back);
    job_graph_free(jg);
    env_free(env);
    config_free(cluster);
}

Test(job_settings, folders_given_as_file_uris_are_paths_other_schemes_are_refused)
{
    static const char *const uris[] = {
        "execution.checkpointing.interval",
        "1 s",
        "state.checkpoints.dir",
        "file:///data/cps/",
        "state.savepoints.dir",
        "file:/data/sp",
        NULL,
    };
    static const char *const s3[] = { "state.checkpoints.dir", "s3://bucket/cps", NULL };
    static const char *const host[] = { "state.savepoints.dir", "file://elsewhere/sp", NULL };
    struct config *c = conf_of(uris);
    struct checkpoint_settings cp;
    struct restart_settings rs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(c, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_str_eq(cp.checkpoints_dir, "/data/cps");
    cr_assert_str_eq(cp.savepoints_dir, "/data/sp");
    job_settings_release(&cp);
    config_free(c);
    expect_error(s3, "state.checkpoints.dir: 's3://bucket/cps': the scheme 's3' is not supported");
    expect_error(host, "state.savepoints.dir");
}

/* Flink: a job's execution.checkpointing.incremental wins over the
 * cluster's; unset, the TaskManagers keep their own (-1). */
Test(job_settings, a_jobs_incremental_checkpoints_reach_its_task_managers)
{
    static const char *const job_kv[] = { "execution.checkpointing.incremental", "true", NULL };
    static const char *const cluster_kv[] = { "execution.checkpointing.interval", "1 s",
                                              "execution.checkpointing.incremental", "false",
                                              NULL };
    struct config *job = conf_of(job_kv), *cluster = conf_of(cluster_kv), *none = config_new();
    struct checkpoint_settings cp, back;
    struct restart_settings rs, rback;
    Jobgraph__CheckpointSettings pcp;
    Jobgraph__RestartSettings prs;
    spate_error err = { 0 };

    cr_assert_eq(job_settings_from_config(none, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, none, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.incremental, -1, "unset: the TaskManagers' own");
    job_settings_encode(&cp, &rs, &pcp, &prs);
    cr_assert_eq(job_settings_decode(&pcp, &prs, &back, &rback, &err), 0, "%s", err.message);
    cr_assert_eq(back.incremental, -1);
    job_settings_release(&back);
    job_settings_release(&cp);

    cr_assert_eq(job_settings_from_config(job, 0, -1, &cp, &rs, &err), 0, "%s", err.message);
    cr_assert_eq(job_settings_complete(&cp, &rs, cluster, "job", &err), 0, "%s", err.message);
    cr_assert_eq(cp.incremental, 1, "the job's true over the cluster's false");
    job_settings_encode(&cp, &rs, &pcp, &prs);
    cr_assert_eq(job_settings_decode(&pcp, &prs, &back, &rback, &err), 0, "%s", err.message);
    cr_assert_eq(back.incremental, 1, "the TaskManagers' graph says so");
    job_settings_release(&back);
    pcp.incremental = 3;
    cr_assert_neq(job_settings_decode(&pcp, &prs, &back, &rback, &err), 0);
    job_settings_release(&back);
    job_settings_release(&cp);
    config_free(job);
    config_free(cluster);
    config_free(none);
}

/* A job's checkpointing and restart settings (job_settings.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint_storage.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/tmp_dir.h"
#include "streaming/job_settings.h"

static const char *const restart_names[] = { "none", "fixed-delay", "exponential-delay",
                                             "failure-rate" };

const char *
restart_kind_name(enum restart_kind kind)
{
    return (unsigned)kind < 4 ? restart_names[kind] : "?";
}

/* The keys of a job's settings: what the job may set itself, and what the
 * JobMaster otherwise takes from the cluster's configuration. */
static const struct config_option *const settings_keys[] = {
    CFG(EXECUTION_CHECKPOINTING_INTERVAL),
    CFG(EXECUTION_CHECKPOINTING_TIMEOUT),
    CFG(EXECUTION_CHECKPOINTING_MIN_PAUSE),
    CFG(EXECUTION_CHECKPOINTING_MAX_CONCURRENT),
    CFG(EXECUTION_CHECKPOINTING_TOLERABLE_FAILED),
    CFG(EXECUTION_CHECKPOINTING_MODE),
    CFG(EXECUTION_CHECKPOINTING_RETENTION),
    CFG(STATE_CHECKPOINTS_NUM_RETAINED),
    CFG(EXECUTION_CHECKPOINTING_INCREMENTAL),
    CFG(STATE_CHECKPOINTS_DIR),
    CFG(STATE_SAVEPOINTS_DIR),
    CFG(RESTART_STRATEGY_TYPE),
    CFG(RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS),
    CFG(RESTART_STRATEGY_FIXED_DELAY_DELAY),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR),
    CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS_BEFORE_RESET),
    CFG(RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES),
    CFG(RESTART_STRATEGY_FAILURE_RATE_INTERVAL),
    CFG(RESTART_STRATEGY_FAILURE_RATE_DELAY),
};
#define NSETTINGS_KEYS (sizeof settings_keys / sizeof settings_keys[0])

static const struct config_option *
settings_key(const char *key)
{
    for (size_t i = 0; i < NSETTINGS_KEYS; i++)
        if (strcmp(settings_keys[i]->key, key) == 0)
            return settings_keys[i];
    return NULL;
}

static bool
is_folder(const struct config_option *opt)
{
    return opt == CFG(STATE_CHECKPOINTS_DIR) || opt == CFG(STATE_SAVEPOINTS_DIR);
}

/* A folder (key's value: a path or a `file:` URI) as the JobManager and
 * TaskManagers must see it: absolute, relative ones against the working
 * folder; another scheme is an error naming it and the key. */
static int
absolute_dir(const char *key, const char *value, char **out, spate_error *err)
{
    char cwd[4096];

    if (checkpoint_storage_path(value, getcwd(cwd, sizeof cwd), out, err) != 0)
        return spate_error_wrap(err, "%s", key);
    return 0;
}

static char *
default_checkpoints_dir(const struct config *conf)
{
    char buf[512];

    return xasprintf("%s/spate-checkpoints", tmp_dir_base(conf, buf, sizeof buf));
}

static void
checkpoint_defaults(struct checkpoint_settings *cp)
{
    memset(cp, 0, sizeof *cp);
    cp->timeout_ms = 10 * 60 * 1000;
    cp->max_concurrent = 1;
    cp->exactly_once = true;
    cp->num_retained = 1;
    cp->incremental = -1;
}

static void
restart_defaults(struct restart_settings *rs)
{
    memset(rs, 0, sizeof *rs);
    rs->attempts = 1;
    rs->delay_ms = 1000;
    rs->initial_backoff_ms = 50;
    rs->max_backoff_ms = 10000;
    rs->backoff_multiplier = 1.5;
    rs->reset_backoff_threshold_ms = 60 * 60 * 1000;
    rs->jitter_factor = 0.1;
    rs->attempts_before_reset = INT32_MAX;
    rs->max_failures_per_interval = 1;
    rs->failure_rate_interval_ms = 60 * 1000;
}

/* Checks what the option table's ranges cannot say. */
static int
restart_check(const struct restart_settings *rs, spate_error *err)
{
    if (rs->kind != RESTART_EXPONENTIAL_DELAY)
        return 0;
    if (!(rs->backoff_multiplier > 1.0))
        return spate_error_set(err, SPATE_ECONFIG,
                               "restart-strategy.exponential-delay.backoff-multiplier must be "
                               "above 1, not %g",
                               rs->backoff_multiplier);
    if (rs->initial_backoff_ms > rs->max_backoff_ms)
        return spate_error_set(err, SPATE_ECONFIG,
                               "restart-strategy.exponential-delay.initial-backoff (%lld ms) is "
                               "above max-backoff (%lld ms)",
                               (long long)rs->initial_backoff_ms, (long long)rs->max_backoff_ms);
    return 0;
}

static int
get_int(const struct config *conf, const struct config_option *opt, int *out, spate_error *err)
{
    int64_t v;
    int rc = config_get_int(conf, opt, &v, err);

    if (rc == 0)
        *out = (int)v; /* the option's range keeps it within int */
    return rc;
}

/* Duration and double getters leave *out alone when the key has no value. */
static int
read_restart(const struct config *conf, bool checkpointing, struct restart_settings *rs,
             spate_error *err)
{
    static const enum restart_kind kinds[] = {
        RESTART_NONE,
        RESTART_NONE,
        RESTART_NONE,
        RESTART_FIXED_DELAY,
        RESTART_FIXED_DELAY,
        RESTART_FAILURE_RATE,
        RESTART_FAILURE_RATE,
        RESTART_EXPONENTIAL_DELAY,
        RESTART_EXPONENTIAL_DELAY,
    };
    int rc, type;

    rs->kind = checkpointing ? RESTART_EXPONENTIAL_DELAY : RESTART_NONE;
    if (conf == NULL)
        return 0;
    if (config_is_set(conf, CFG(RESTART_STRATEGY_TYPE))) {
        if ((rc = config_get_enum(conf, CFG(RESTART_STRATEGY_TYPE), &type, err)) != 0)
            return rc;
        rs->kind = kinds[type]; /* the option's values, in order */
    }
    if ((rc = get_int(conf, CFG(RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS), &rs->attempts, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(RESTART_STRATEGY_FIXED_DELAY_DELAY), &rs->delay_ms,
                                     err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF),
                                     &rs->initial_backoff_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF),
                                     &rs->max_backoff_ms, err)) != 0 ||
        (rc = config_get_double(conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER),
                                &rs->backoff_multiplier, err)) != 0 ||
        (rc = config_get_duration_ms(
             conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD),
             &rs->reset_backoff_threshold_ms, err)) != 0 ||
        (rc = config_get_double(conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR),
                                &rs->jitter_factor, err)) != 0 ||
        (rc = get_int(conf, CFG(RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS_BEFORE_RESET),
                      &rs->attempts_before_reset, err)) != 0 ||
        (rc = get_int(conf, CFG(RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES),
                      &rs->max_failures_per_interval, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(RESTART_STRATEGY_FAILURE_RATE_INTERVAL),
                                     &rs->failure_rate_interval_ms, err)) != 0)
        return rc;
    /* failure-rate has a delay key of its own. */
    if (rs->kind == RESTART_FAILURE_RATE &&
        (rc = config_get_duration_ms(conf, CFG(RESTART_STRATEGY_FAILURE_RATE_DELAY), &rs->delay_ms,
                                     err)) != 0)
        return rc;
    return 0;
}

static int
read_checkpointing(const struct config *conf, struct checkpoint_settings *cp, spate_error *err)
{
    const char *dir = NULL;
    int rc, v;

    if (conf == NULL)
        return 0;
    if (config_is_set(conf, CFG(EXECUTION_CHECKPOINTING_INTERVAL)) &&
        (rc = config_get_duration_ms(conf, CFG(EXECUTION_CHECKPOINTING_INTERVAL), &cp->interval_ms,
                                     err)) != 0)
        return rc;
    if ((rc = config_get_duration_ms(conf, CFG(EXECUTION_CHECKPOINTING_TIMEOUT), &cp->timeout_ms,
                                     err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(EXECUTION_CHECKPOINTING_MIN_PAUSE),
                                     &cp->min_pause_ms, err)) != 0 ||
        (rc = get_int(conf, CFG(EXECUTION_CHECKPOINTING_MAX_CONCURRENT), &cp->max_concurrent,
                      err)) != 0 ||
        (rc = get_int(conf, CFG(EXECUTION_CHECKPOINTING_TOLERABLE_FAILED), &cp->tolerable_failures,
                      err)) != 0 ||
        (rc = get_int(conf, CFG(STATE_CHECKPOINTS_NUM_RETAINED), &cp->num_retained, err)) != 0)
        return rc;
    if ((rc = config_get_enum(conf, CFG(EXECUTION_CHECKPOINTING_MODE), &v, err)) != 0)
        return rc;
    cp->exactly_once = v == 0;
    if ((rc = config_get_enum(conf, CFG(EXECUTION_CHECKPOINTING_RETENTION), &v, err)) != 0)
        return rc;
    cp->retention = v == 0 ? RETAIN_NEVER : v == 1 ? RETAIN_ON_FAILURE : RETAIN_ON_CANCELLATION;
    if (config_is_set(conf, CFG(EXECUTION_CHECKPOINTING_INCREMENTAL))) {
        bool on;

        if ((rc = config_get_bool(conf, CFG(EXECUTION_CHECKPOINTING_INCREMENTAL), &on, err)) != 0)
            return rc;
        cp->incremental = on;
    }
    if (config_get_string(conf, CFG(STATE_CHECKPOINTS_DIR), &dir, NULL) == 0 && dir && *dir &&
        (rc = absolute_dir("state.checkpoints.dir", dir, &cp->checkpoints_dir, err)) != 0)
        return rc;
    dir = NULL;
    if (config_get_string(conf, CFG(STATE_SAVEPOINTS_DIR), &dir, NULL) == 0 && dir && *dir &&
        (rc = absolute_dir("state.savepoints.dir", dir, &cp->savepoints_dir, err)) != 0)
        return rc;
    return 0;
}

/* A YAML double-quoted scalar: quotes, backslashes and control bytes
 * escaped, the rest as it is. */
static void
put_quoted(FILE *f, const char *value)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\x%02x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

/* The keys the job set, by their own names (a fallback key's value under
 * the option's key), with the job's code's overrides; NULL: none. */
static char *
job_config_text(const struct config *conf, int64_t interval_ms, int mode)
{
    char *text = NULL, *dir = NULL, ms[32];
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);

    if (f == NULL)
        abort(); /* as any small allocation that fails */
    for (size_t i = 0; i < NSETTINGS_KEYS; i++) {
        const struct config_option *opt = settings_keys[i];
        const char *value = NULL, *origin;

        if (opt == CFG(EXECUTION_CHECKPOINTING_INTERVAL) && interval_ms > 0) {
            snprintf(ms, sizeof ms, "%lld ms", (long long)interval_ms);
            value = ms;
        } else if (opt == CFG(EXECUTION_CHECKPOINTING_MODE) && mode >= 0) {
            value = mode == 1 ? "EXACTLY_ONCE" : "AT_LEAST_ONCE";
        } else if (conf != NULL && config_is_set(conf, opt)) {
            config_effective(conf, opt, &value, &origin);
        }
        if (value == NULL || (is_folder(opt) && *value == '\0'))
            continue;
        if (is_folder(opt)) {
            if (absolute_dir(opt->key, value, &dir, NULL) != 0)
                dir = xstrdup(value); /* read_checkpointing says what is wrong */
            value = dir;
        }
        fprintf(f, "%s: ", opt->key);
        put_quoted(f, value);
        fputc('\n', f);
        free(dir);
        dir = NULL;
    }
    fclose(f);
    if (size == 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The settings conf gives, spate's defaults for the rest. */
static int
resolve(const struct config *conf, int64_t interval_ms, int mode, struct checkpoint_settings *cp,
        struct restart_settings *rs, spate_error *err)
{
    int rc;

    checkpoint_defaults(cp);
    restart_defaults(rs);
    if ((rc = read_checkpointing(conf, cp, err)) != 0)
        goto fail;
    if (interval_ms > 0)
        cp->interval_ms = interval_ms;
    if (mode >= 0)
        cp->exactly_once = mode == 1;
    if ((rc = read_restart(conf, cp->interval_ms > 0, rs, err)) != 0 ||
        (rc = restart_check(rs, err)) != 0)
        goto fail;
    return 0;
fail:
    job_settings_release(cp);
    return rc;
}

int
job_settings_from_config(const struct config *conf, int64_t interval_ms, int mode,
                         struct checkpoint_settings *cp, struct restart_settings *rs,
                         spate_error *err)
{
    int rc = resolve(conf, interval_ms, mode, cp, rs, err);

    if (rc == 0)
        cp->job_config = job_config_text(conf, interval_ms, mode);
    return rc;
}

/* Where the job's keys come from, in messages and as their origin. */
static const char job_origin[] = "the job's configuration";

/* The job's keys (checked: known, folders absolute) over the cluster's
 * configuration, in *out. */
static int
lay_over(const char *job_config, const struct config *cluster, struct config **out,
         spate_error *err)
{
    struct config *own = config_new();
    struct config *conf = cluster != NULL ? config_copy(cluster) : config_new();
    const char *key, *value, *origin;
    int rc = 0;

    if (job_config != NULL &&
        (rc = config_load_string(own, job_config, strlen(job_config), job_origin, err)) != 0)
        goto fail;
    for (size_t i = 0; i < config_count(own); i++) {
        const struct config_option *opt;

        config_entry(own, i, &key, &value, &origin);
        if ((opt = settings_key(key)) == NULL) {
            rc = spate_error_set(err, SPATE_EINVAL,
                                 "%s sets '%s', which is not a checkpointing or restart setting",
                                 job_origin, key);
            goto fail;
        }
        if (is_folder(opt) && value[0] != '/') {
            rc = spate_error_set(err, SPATE_EINVAL, "%s sets %s to '%s', which is not absolute",
                                 job_origin, key, value);
            goto fail;
        }
        config_set(conf, key, value, job_origin);
    }
    config_free(own);
    *out = conf;
    return 0;
fail:
    config_free(own);
    config_free(conf);
    return rc;
}

int
job_settings_complete(struct checkpoint_settings *cp, struct restart_settings *rs,
                      const struct config *cluster, const char *job, spate_error *err)
{
    struct checkpoint_settings ncp;
    struct restart_settings nrs;
    struct config *conf = NULL;
    char from[512];
    size_t n = 0;
    int rc;

    if ((rc = lay_over(cp->job_config, cluster, &conf, err)) != 0)
        return rc;
    rc = resolve(conf, 0, -1, &ncp, &nrs, err);
    for (size_t i = 0; rc == 0 && i < NSETTINGS_KEYS && n < sizeof from; i++) {
        const char *origin = NULL, *value;

        config_effective(conf, settings_keys[i], &value, &origin);
        if (value != NULL && config_is_set(conf, settings_keys[i]) &&
            strcmp(origin, job_origin) != 0)
            n += (size_t)snprintf(from + n, sizeof from - n, "%s%s", n ? ", " : "",
                                  settings_keys[i]->key);
    }
    config_free(conf);
    if (rc != 0)
        return rc;
    if (n > 0)
        SPATE_LOG_INFO("streaming", "job %s: from the cluster's configuration: %s%s", job, from,
                       n >= sizeof from ? "..." : "");
    if (ncp.interval_ms > 0 && ncp.checkpoints_dir == NULL) {
        ncp.checkpoints_dir = default_checkpoints_dir(cluster);
        SPATE_LOG_INFO("streaming",
                       "job %s: state.checkpoints.dir is set neither by the job nor "
                       "by the cluster: checkpoints go to '%s'",
                       job, ncp.checkpoints_dir);
    }
    ncp.job_config = cp->job_config;
    cp->job_config = NULL;
    job_settings_release(cp);
    *cp = ncp;
    *rs = nrs;
    return 0;
}

void
job_settings_release(struct checkpoint_settings *cp)
{
    if (cp == NULL)
        return;
    free(cp->checkpoints_dir);
    free(cp->savepoints_dir);
    free(cp->job_config);
    cp->checkpoints_dir = cp->savepoints_dir = cp->job_config = NULL;
}

void
job_settings_encode(const struct checkpoint_settings *cp, const struct restart_settings *rs,
                    Jobgraph__CheckpointSettings *pcp, Jobgraph__RestartSettings *prs)
{
    jobgraph__checkpoint_settings__init(pcp);
    pcp->interval_ms = cp->interval_ms;
    pcp->timeout_ms = cp->timeout_ms;
    pcp->min_pause_ms = cp->min_pause_ms;
    pcp->max_concurrent = cp->max_concurrent;
    pcp->tolerable_failures = cp->tolerable_failures;
    pcp->mode = cp->exactly_once ? CHECKPOINT__CHECKPOINTING_MODE__EXACTLY_ONCE
                                 : CHECKPOINT__CHECKPOINTING_MODE__AT_LEAST_ONCE;
    pcp->checkpoints_dir = cp->checkpoints_dir ? cp->checkpoints_dir : "";
    pcp->num_retained = cp->num_retained;
    pcp->retain_on_cancellation = cp->retention == RETAIN_ON_CANCELLATION;
    pcp->retain_on_failure = cp->retention != RETAIN_NEVER;
    pcp->savepoints_dir = cp->savepoints_dir ? cp->savepoints_dir : "";
    pcp->job_config = cp->job_config ? cp->job_config : "";
    pcp->incremental = cp->incremental + 1;

    jobgraph__restart_settings__init(prs);
    prs->type = (char *)restart_kind_name(rs->kind);
    prs->attempts = rs->attempts;
    prs->delay_ms = rs->delay_ms;
    prs->initial_backoff_ms = rs->initial_backoff_ms;
    prs->max_backoff_ms = rs->max_backoff_ms;
    prs->backoff_multiplier = rs->backoff_multiplier;
    prs->reset_backoff_threshold_ms = rs->reset_backoff_threshold_ms;
    prs->jitter_factor = rs->jitter_factor;
    prs->max_failures_per_interval = rs->max_failures_per_interval;
    prs->failure_rate_interval_ms = rs->failure_rate_interval_ms;
    prs->attempts_before_reset = rs->attempts_before_reset;
}

static int
bad(spate_error *err, const char *what)
{
    return spate_error_set(err, SPATE_EINVAL, "malformed job graph: %s", what);
}

int
job_settings_decode(const Jobgraph__CheckpointSettings *pcp, const Jobgraph__RestartSettings *prs,
                    struct checkpoint_settings *cp, struct restart_settings *rs, spate_error *err)
{
    int rc;

    checkpoint_defaults(cp);
    restart_defaults(rs);
    if (pcp != NULL) {
        if (pcp->interval_ms < 0 || pcp->timeout_ms < 0 || pcp->min_pause_ms < 0 ||
            pcp->tolerable_failures < 0 || pcp->incremental < 0 || pcp->incremental > 2 ||
            (pcp->interval_ms > 0 &&
             (pcp->timeout_ms <= 0 || pcp->max_concurrent < 1 || pcp->num_retained < 1)) ||
            (pcp->checkpoints_dir != NULL && pcp->checkpoints_dir[0] != '\0' &&
             pcp->checkpoints_dir[0] != '/') ||
            (pcp->savepoints_dir != NULL && pcp->savepoints_dir[0] != '\0' &&
             pcp->savepoints_dir[0] != '/'))
            return bad(err, "checkpoint settings out of range, or a folder not absolute");
        if (pcp->mode != CHECKPOINT__CHECKPOINTING_MODE__EXACTLY_ONCE &&
            pcp->mode != CHECKPOINT__CHECKPOINTING_MODE__AT_LEAST_ONCE)
            return bad(err, "unknown checkpointing mode");
        cp->interval_ms = pcp->interval_ms;
        cp->timeout_ms = pcp->timeout_ms > 0 ? pcp->timeout_ms : cp->timeout_ms;
        cp->min_pause_ms = pcp->min_pause_ms;
        cp->max_concurrent = pcp->max_concurrent > 0 ? pcp->max_concurrent : 1;
        cp->tolerable_failures = pcp->tolerable_failures;
        cp->exactly_once = pcp->mode == CHECKPOINT__CHECKPOINTING_MODE__EXACTLY_ONCE;
        cp->num_retained = pcp->num_retained > 0 ? pcp->num_retained : 1;
        cp->incremental = pcp->incremental - 1;
        cp->retention = pcp->retain_on_cancellation ? RETAIN_ON_CANCELLATION
                        : pcp->retain_on_failure    ? RETAIN_ON_FAILURE
                                                    : RETAIN_NEVER;
        if (pcp->checkpoints_dir && *pcp->checkpoints_dir)
            cp->checkpoints_dir = xstrdup(pcp->checkpoints_dir);
        if (pcp->savepoints_dir && *pcp->savepoints_dir)
            cp->savepoints_dir = xstrdup(pcp->savepoints_dir);
        if (pcp->job_config && *pcp->job_config)
            cp->job_config = xstrdup(pcp->job_config);
    }
    if (prs == NULL || prs->type == NULL || *prs->type == '\0')
        return 0; /* no restarts */
    for (rs->kind = RESTART_NONE; rs->kind <= RESTART_FAILURE_RATE; rs->kind++)
        if (strcmp(prs->type, restart_names[rs->kind]) == 0)
            break;
    if (rs->kind > RESTART_FAILURE_RATE) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "malformed job graph: unknown restart strategy '%s'", prs->type);
        goto fail;
    }
    rs->attempts = prs->attempts;
    rs->delay_ms = prs->delay_ms;
    rs->initial_backoff_ms = prs->initial_backoff_ms;
    rs->max_backoff_ms = prs->max_backoff_ms;
    rs->backoff_multiplier = prs->backoff_multiplier;
    rs->reset_backoff_threshold_ms = prs->reset_backoff_threshold_ms;
    rs->jitter_factor = prs->jitter_factor;
    rs->max_failures_per_interval = prs->max_failures_per_interval;
    rs->failure_rate_interval_ms = prs->failure_rate_interval_ms;
    rs->attempts_before_reset = prs->attempts_before_reset;
    if (rs->attempts < 0 || rs->delay_ms < 0 ||
        (rs->kind == RESTART_EXPONENTIAL_DELAY &&
         (rs->initial_backoff_ms < 1 || rs->reset_backoff_threshold_ms < 1 ||
          !(rs->jitter_factor >= 0 && rs->jitter_factor <= 1) || rs->attempts_before_reset < 1)) ||
        (rs->kind == RESTART_FAILURE_RATE &&
         (rs->max_failures_per_interval < 1 || rs->failure_rate_interval_ms < 1))) {
        rc = bad(err, "restart settings out of range");
        goto fail;
    }
    if ((rc = restart_check(rs, err)) != 0)
        goto fail;
    return 0;
fail:
    job_settings_release(cp);
    return rc;
}

int
job_settings_reencode(const uint8_t *graph, size_t len, const struct checkpoint_settings *cp,
                      const struct restart_settings *rs, uint8_t **out, size_t *out_len,
                      spate_error *err)
{
    Jobgraph__JobGraph *g = jobgraph__job_graph__unpack(NULL, len, graph);
    Jobgraph__CheckpointSettings pcp, *submitted_cp;
    Jobgraph__RestartSettings prs, *submitted_rs;

    if (g == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed job graph: cannot decode %zu bytes",
                               len);
    job_settings_encode(cp, rs, &pcp, &prs);
    submitted_cp = g->checkpointing;
    submitted_rs = g->restart;
    g->checkpointing = &pcp;
    g->restart = &prs;
    *out_len = jobgraph__job_graph__get_packed_size(g);
    *out = xmalloc(*out_len ? *out_len : 1);
    jobgraph__job_graph__pack(g, *out);
    /* free_unpacked frees what unpack made, not ours. */
    g->checkpointing = submitted_cp;
    g->restart = submitted_rs;
    jobgraph__job_graph__free_unpacked(g, NULL);
    return 0;
}

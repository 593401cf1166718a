/* The source coordinator (source_coordinator.h) and the split enumerator's
 * context of the Source API (include/spate/source.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "connectors/source_operator.h"
#include "connectors/source_coordinator.h"

/* A split the enumerator assigned. Fetched ones stay until a restore
 * decides whether their reader's restored state has them (fetched before
 * the restored snapshot) or the enumerator must have them back. */
struct sc_assignment {
    int subtask;
    bool fetched;
    uint64_t epoch; /* the coordinator's snapshots when it was fetched */
    size_t len;
    uint8_t *split;
};

struct spate_split_enumerator_context {
    struct source_coordinator *c;
    uint8_t *state; /* snapshot_state's bytes */
    size_t state_len, state_cap;
};

struct source_coordinator {
    const struct operator_settings *settings;
    const spate_split_enumerator *en;
    const void *config;
    void *enumerator; /* NULL when a restore could not make it */
    int parallelism;
    spate_split_enumerator_context ctx;
    struct sc_assignment *as;
    size_t nas, cap;
    bool *no_more;  /* per subtask: signal_no_more_splits came */
    uint64_t epoch; /* snapshots taken (or the restored state's) */
    int64_t valve;  /* the checkpoint of the last snapshot while it runs, else 0 */
    char failure[sizeof((spate_error *)0)->message];
};

int
spate_enumerator_context_parallelism(const spate_split_enumerator_context *ctx)
{
    return ctx->c->parallelism;
}

const void *
spate_enumerator_context_params(const spate_split_enumerator_context *ctx, size_t *len)
{
    *len = ctx->c->settings->params_len;
    return ctx->c->settings->params;
}

static void
sc_add(struct source_coordinator *c, int subtask, const void *split, size_t len)
{
    struct sc_assignment *a;

    xgrow((void **)&c->as, &c->cap, c->nas + 1, sizeof *c->as);
    a = &c->as[c->nas++];
    *a = (struct sc_assignment){ .subtask = subtask, .len = len, .split = xmalloc(len + 1) };
    if (len > 0)
        memcpy(a->split, split, len);
}

void
spate_enumerator_context_assign_split(spate_split_enumerator_context *ctx, int subtask,
                                      const void *split, size_t len)
{
    struct source_coordinator *c = ctx->c;

    if (subtask < 0 || subtask >= c->parallelism) {
        SPATE_LOG_ERROR("jobmaster", "a split enumerator assigned a split to subtask %d of %d",
                        subtask, c->parallelism);
        return;
    }
    sc_add(c, subtask, split, len);
    c->no_more[subtask] = false;
}

void
spate_enumerator_context_signal_no_more_splits(spate_split_enumerator_context *ctx, int subtask)
{
    if (subtask >= 0 && subtask < ctx->c->parallelism)
        ctx->c->no_more[subtask] = true;
}

void
spate_enumerator_context_save_state(spate_split_enumerator_context *ctx, const void *bytes,
                                    size_t len)
{
    if (len == 0)
        return;
    xgrow((void **)&ctx->state, &ctx->state_cap, ctx->state_len + len, 1);
    memcpy(ctx->state + ctx->state_len, bytes, len);
    ctx->state_len += len;
}

static void
sc_remove(struct source_coordinator *c, size_t i)
{
    free(c->as[i].split);
    c->as[i] = c->as[--c->nas];
}

static void
sc_clear(struct source_coordinator *c)
{
    while (c->nas > 0)
        sc_remove(c, c->nas - 1);
    memset(c->no_more, 0, (size_t)c->parallelism * sizeof *c->no_more);
}

/* A new enumerator from state (NULL: fresh), its unfetched assignments
 * queued again (for a subtask the job no longer has: back to it). */
static int
sc_create(struct source_coordinator *c, const Checkpoint__SourceCoordinatorState *state,
          spate_error *err)
{
    if (c->enumerator != NULL)
        c->en->close(c->enumerator);
    sc_clear(c);
    c->valve = 0;
    /* An empty state is a state (every split assigned), not a fresh
     * start: never NULL then, though protobuf-c decodes it as NULL. */
    c->enumerator = c->en->create(
        &c->ctx, c->config,
        state ? (state->enumerator.data ? (const void *)state->enumerator.data : "") : NULL,
        state ? state->enumerator.len : 0, err);
    if (c->enumerator == NULL) {
        snprintf(c->failure, sizeof c->failure, "%s",
                 err && err->message[0] ? err->message : "the split enumerator failed");
        return err && err->code ? err->code : SPATE_EINVAL;
    }
    if (state == NULL)
        return 0;
    if (state->epoch > c->epoch)
        c->epoch = state->epoch;
    for (size_t i = 0; i < state->n_pending; i++) {
        const Checkpoint__PendingSplit *p = state->pending[i];

        if (p->subtask >= 0 && p->subtask < c->parallelism)
            sc_add(c, p->subtask, p->split.data, p->split.len);
        else
            c->en->add_split_back(c->enumerator, p->subtask % c->parallelism, p->split.data,
                                  p->split.len);
    }
    return 0;
}

int
source_coordinator_new(const struct operator_settings *settings, int parallelism,
                       const Checkpoint__SourceCoordinatorState *state,
                       struct source_coordinator **out, spate_error *err)
{
    struct source_coordinator *c;
    const void *config;
    const spate_source *source = source_operator_source(settings, &config);
    int rc;

    if (source == NULL)
        return spate_error_set(err, SPATE_EINVAL, "operator '%s' is not a source",
                               settings->name ? settings->name : "");
    c = xcalloc(1, sizeof *c);
    c->settings = settings;
    c->en = source->enumerator;
    c->config = config;
    c->parallelism = parallelism;
    c->ctx.c = c;
    c->no_more = xcalloc((size_t)parallelism, sizeof *c->no_more);
    if ((rc = sc_create(c, state, err)) != 0) {
        source_coordinator_free(c);
        return rc;
    }
    *out = c;
    return 0;
}

void
source_coordinator_free(struct source_coordinator *c)
{
    if (c == NULL)
        return;
    if (c->enumerator != NULL)
        c->en->close(c->enumerator);
    sc_clear(c);
    free(c->as);
    free(c->no_more);
    free(c->ctx.state);
    free(c);
}

int
source_coordinator_request(struct source_coordinator *c, int subtask, bool register_reader,
                           bool request_split, int64_t last_checkpoint,
                           Cluster__SplitAssignment *out, spate_error *err)
{
    size_t n = 0;

    if (c->enumerator == NULL)
        return spate_error_set(err, SPATE_ESTATE, "no split enumerator: %s", c->failure);
    if (subtask < 0 || subtask >= c->parallelism)
        return spate_error_set(err, SPATE_EINVAL, "no reader subtask %d of %d", subtask,
                               c->parallelism);
    if (register_reader && c->en->add_reader != NULL)
        c->en->add_reader(c->enumerator, subtask);
    if (c->valve != 0 && last_checkpoint < c->valve) {
        /* Closed: the reader asks again, after its barrier. */
        out->splits = NULL;
        out->n_splits = 0;
        out->no_more_splits = false;
        return 0;
    }
    if (request_split)
        c->en->handle_split_request(c->enumerator, subtask);
    for (size_t i = 0; i < c->nas; i++)
        n += c->as[i].subtask == subtask && !c->as[i].fetched;
    out->splits = xcalloc(n + 1, sizeof *out->splits);
    out->n_splits = 0;
    for (size_t i = 0; i < c->nas; i++) {
        struct sc_assignment *a = &c->as[i];

        if (a->subtask != subtask || a->fetched)
            continue;
        a->fetched = true;
        a->epoch = c->epoch;
        out->splits[out->n_splits++] = (ProtobufCBinaryData){ a->len, a->split };
    }
    out->no_more_splits = c->no_more[subtask];
    return 0;
}

void
source_coordinator_checkpoint_ended(struct source_coordinator *c, int64_t checkpoint_id)
{
    if (c->valve == checkpoint_id)
        c->valve = 0;
}

Checkpoint__SourceCoordinatorState *
source_coordinator_snapshot(struct source_coordinator *c, int64_t checkpoint_id)
{
    Checkpoint__SourceCoordinatorState *s = xmalloc(sizeof *s);

    c->valve = checkpoint_id;
    checkpoint__source_coordinator_state__init(s);
    s->epoch = ++c->epoch;
    c->ctx.state_len = 0;
    if (c->enumerator != NULL)
        c->en->snapshot_state(c->enumerator, &c->ctx);
    s->enumerator.len = c->ctx.state_len;
    s->enumerator.data = xmalloc(c->ctx.state_len + 1);
    if (c->ctx.state_len > 0) /* else ctx.state may be NULL, which memcpy may not get */
        memcpy(s->enumerator.data, c->ctx.state, c->ctx.state_len);
    s->pending = xcalloc(c->nas + 1, sizeof *s->pending);
    for (size_t i = 0; i < c->nas; i++) {
        Checkpoint__PendingSplit *p;

        if (c->as[i].fetched)
            continue;
        p = xmalloc(sizeof *p);
        checkpoint__pending_split__init(p);
        p->subtask = c->as[i].subtask;
        p->split.len = c->as[i].len;
        p->split.data = xmalloc(c->as[i].len + 1);
        memcpy(p->split.data, c->as[i].split, c->as[i].len);
        s->pending[s->n_pending++] = p;
    }
    return s;
}

int
source_coordinator_restore(struct source_coordinator *c,
                           const Checkpoint__SourceCoordinatorState *state, const bool *restarting,
                           spate_error *err)
{
    if (state != NULL && restarting == NULL)
        return sc_create(c, state, err);
    if (c->enumerator == NULL)
        return spate_error_set(err, SPATE_ESTATE, "no split enumerator: %s", c->failure);
    for (size_t i = c->nas; i-- > 0;) {
        struct sc_assignment *a = &c->as[i];

        if ((restarting != NULL && !restarting[a->subtask]) || !a->fetched)
            continue;
        /* Fetched after the snapshot restored (or with none): the new
         * reader will not have it. Before: its restored state has it, or
         * it was read to its end. */
        if (state == NULL || a->epoch >= state->epoch)
            c->en->add_split_back(c->enumerator, a->subtask, a->split, a->len);
        sc_remove(c, i);
    }
    for (int s = 0; s < c->parallelism; s++)
        if (restarting == NULL || restarting[s])
            c->no_more[s] = false;
    return 0;
}

/* A sink of your own on spate's Sink API (include/spate/sink.h, Flink's
 * SinkV2 TwoPhaseCommittingSink): an append-only ledger per writer, kept
 * exactly once across failures by two-phase commit.
 *
 * The writer of subtask s stages the records of each checkpoint interval
 * in a hidden batch file ".batch-s-q" (q counts its batches); at the
 * barrier it syncs and closes the batch, and the committable names it (s,
 * q). Once the checkpoint completes, the committer appends the batch to
 * "ledger-s.txt" and records, in "ledger-s.state" (replaced atomically),
 * the last batch committed and the ledger's length after it. A commit is
 * idempotent: a batch at or below the recorded one is done already, and an
 * append cut short by a crash is truncated away before it is made again.
 * A restored writer deletes the batches that no completed checkpoint
 * prepared (Flink's abortLingeringTransactions) and numbers its batches past
 * the committed ones.
 *
 * The records are the numbers 0 .. count-1 of the data generator, at most
 * --rate a second over all subtasks.
 *
 *   spate run [-p N] build/examples/ledger_sink.so --output DIR
 *       [--count N] [--rate N]
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spate/sink.h>
#include <spate/spate.h>

/* The job's parameters, in the sink's spate_params. */
struct ledger_params {
    char dir[512];
};

/* A committable: the batch's writer and number. */
struct batch_ref {
    uint32_t writer;
    uint32_t seq;
};

/* What ledger-w.state says: the last batch committed and the ledger's
 * length after it (0, 0 before any). */
struct ledger_state {
    uint32_t seq;
    uint64_t length;
};

static const char *
ledger_dir(spate_sink_context *ctx)
{
    size_t len;
    const struct ledger_params *p = spate_sink_context_params(ctx, &len);

    return len == sizeof *p ? p->dir : ".";
}

static void
batch_path(char *buf, size_t cap, const char *dir, uint32_t writer, uint32_t seq)
{
    snprintf(buf, cap, "%s/.batch-%" PRIu32 "-%" PRIu32, dir, writer, seq);
}

/* -1 with err set when the state exists but cannot be read. */
static int
read_state(const char *dir, uint32_t writer, struct ledger_state *st, spate_error *err)
{
    char path[600];
    FILE *f;
    int ok;

    *st = (struct ledger_state){ 0, 0 };
    snprintf(path, sizeof path, "%s/ledger-%" PRIu32 ".state", dir, writer);
    if ((f = fopen(path, "r")) == NULL) {
        if (errno == ENOENT)
            return 0;
        return spate_error_set(err, SPATE_EIO, "ledger: cannot read '%s': %s", path,
                               strerror(errno));
    }
    ok = fscanf(f, "%" SCNu32 " %" SCNu64, &st->seq, &st->length) == 2;
    fclose(f);
    if (!ok)
        return spate_error_set(err, SPATE_EPROTO,
                               "ledger: '%s' is not \"<batch> <length>\": it was not written "
                               "by this sink",
                               path);
    return 0;
}

/* ---- the writer ---- */

struct writer {
    const char *dir;
    uint32_t subtask;
    uint32_t seq; /* the batch being written, or the next one */
    FILE *batch;  /* NULL until a record comes */
};

/* Deletes the batches of writers whose index mod fold is this subtask
 * (fold 0: none), and numbers this writer's batches past the committed
 * one and every batch of its own that stays. */
static int
settle(struct writer *w, uint32_t fold, spate_error *err)
{
    struct ledger_state st;
    struct dirent *de;
    DIR *d;

    if (read_state(w->dir, w->subtask, &st, err) != 0)
        return -1;
    w->seq = st.seq + 1;
    if ((d = opendir(w->dir)) == NULL)
        return spate_error_set(err, SPATE_EIO, "ledger: cannot read '%s': %s", w->dir,
                               strerror(errno));
    while ((de = readdir(d)) != NULL) {
        uint32_t writer, seq;
        char path[600];

        if (sscanf(de->d_name, ".batch-%" SCNu32 "-%" SCNu32, &writer, &seq) != 2)
            continue;
        if (fold != 0 && writer % fold == w->subtask) {
            snprintf(path, sizeof path, "%s/%s", w->dir, de->d_name);
            unlink(path);
        } else if (writer == w->subtask && seq >= w->seq) {
            w->seq = seq + 1;
        }
    }
    closedir(d);
    return 0;
}

static void *
writer_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    struct writer *w = calloc(1, sizeof *w);
    uint32_t fold = 0;

    (void)config;
    if (w == NULL)
        abort();
    w->dir = ledger_dir(ctx);
    w->subtask = (uint32_t)spate_sink_context_subtask(ctx);
    /* Restored: the committed batches are committed by now, and what is
     * left of the writers folding onto this subtask no checkpoint that
     * completed prepared. Restarted without a checkpoint: the job replays
     * from the start, so this writer's batches go. */
    if (spate_sink_context_restored(ctx))
        fold = (uint32_t)spate_sink_context_parallelism(ctx);
    else if (spate_sink_context_attempt(ctx) > 0)
        fold = UINT32_MAX;
    if (settle(w, fold, err) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

static int
writer_write(void *writer, const void *record, int64_t timestamp_ms, spate_error *err)
{
    struct writer *w = writer;
    int64_t v;

    (void)timestamp_ms;
    if (w->batch == NULL) {
        char path[600];

        batch_path(path, sizeof path, w->dir, w->subtask, w->seq);
        if ((w->batch = fopen(path, "we")) == NULL)
            return spate_error_set(err, SPATE_EIO, "ledger: cannot open '%s': %s", path,
                                   strerror(errno));
    }
    memcpy(&v, record, sizeof v);
    fprintf(w->batch, "%" PRId64 "\n", v);
    return 0;
}

static int
writer_prepare_commit(void *writer, int64_t checkpoint_id, spate_sink_context *ctx,
                      spate_error *err)
{
    struct writer *w = writer;
    struct batch_ref ref = { w->subtask, w->seq };
    int bad;

    (void)checkpoint_id;
    if (w->batch == NULL)
        return 0; /* nothing written since the last barrier */
    bad = fflush(w->batch) != 0 || fsync(fileno(w->batch)) != 0;
    bad |= fclose(w->batch) != 0;
    w->batch = NULL;
    if (bad)
        return spate_error_set(err, SPATE_EIO, "ledger: cannot sync batch %" PRIu32 ": %s", ref.seq,
                               strerror(errno));
    w->seq++;
    spate_sink_context_save_committable(ctx, &ref, sizeof ref);
    return 0;
}

static void
writer_close(void *writer)
{
    struct writer *w = writer;

    if (w->batch != NULL)
        fclose(w->batch); /* never prepared: the next attempt deletes it */
    free(w);
}

/* ---- the committer ---- */

/* Appends the batch to the ledger unless it is there already. */
static spate_commit_result
committer_commit(void *committer, const void *committable, size_t len, spate_error *err)
{
    const char *dir = committer;
    struct batch_ref ref;
    struct ledger_state st;
    char batch[600], ledger[600], state[600], tmp[620], buf[1 << 16];
    FILE *f;
    int in, out;
    ssize_t n;
    off_t length;

    if (len != sizeof ref) {
        spate_error_set(err, SPATE_EPROTO, "ledger: a committable of %zu bytes, not %zu", len,
                        sizeof ref);
        return SPATE_COMMIT_FAILED;
    }
    memcpy(&ref, committable, sizeof ref);
    if (read_state(dir, ref.writer, &st, err) != 0)
        return SPATE_COMMIT_FAILED;
    if (ref.seq <= st.seq)
        return SPATE_COMMIT_OK; /* committed before a failure */
    batch_path(batch, sizeof batch, dir, ref.writer, ref.seq);
    snprintf(ledger, sizeof ledger, "%s/ledger-%" PRIu32 ".txt", dir, ref.writer);
    snprintf(state, sizeof state, "%s/ledger-%" PRIu32 ".state", dir, ref.writer);
    if ((in = open(batch, O_RDONLY | O_CLOEXEC)) < 0) {
        /* Not committed and not there: this is no sink's to mend. */
        spate_error_set(err, SPATE_EIO,
                        "ledger: batch %" PRIu32 " of writer %" PRIu32 " ('%s') is gone: %s",
                        ref.seq, ref.writer, batch, strerror(errno));
        return SPATE_COMMIT_FAILED;
    }
    if ((out = open(ledger, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0 ||
        ftruncate(out, (off_t)st.length) != 0 || lseek(out, (off_t)st.length, SEEK_SET) < 0) {
        spate_error_set(err, SPATE_EIO, "ledger: cannot open '%s' at %" PRIu64 ": %s", ledger,
                        st.length, strerror(errno));
        close(in);
        if (out >= 0)
            close(out);
        return SPATE_COMMIT_RETRY_LATER;
    }
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            n = -1;
    length = lseek(out, 0, SEEK_CUR);
    if (n < 0 || fsync(out) != 0 || length < 0) {
        spate_error_set(err, SPATE_EIO, "ledger: cannot append to '%s': %s", ledger,
                        strerror(errno));
        close(in);
        close(out);
        return SPATE_COMMIT_RETRY_LATER;
    }
    close(in);
    close(out);
    /* The state names the batch: written whole, then renamed over. */
    snprintf(tmp, sizeof tmp, "%s.tmp", state);
    if ((f = fopen(tmp, "we")) == NULL) {
        spate_error_set(err, SPATE_EIO, "ledger: cannot write '%s': %s", tmp, strerror(errno));
        return SPATE_COMMIT_RETRY_LATER;
    }
    fprintf(f, "%" PRIu32 " %" PRIu64 "\n", ref.seq, (uint64_t)length);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, state) != 0) {
        spate_error_set(err, SPATE_EIO, "ledger: cannot write '%s': %s", state, strerror(errno));
        return SPATE_COMMIT_RETRY_LATER;
    }
    unlink(batch);
    return SPATE_COMMIT_OK;
}

static void *
committer_create(spate_sink_context *ctx, const void *config, spate_error *err)
{
    const char *dir = ledger_dir(ctx);

    (void)config;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        spate_error_set(err, SPATE_EIO, "ledger: cannot make '%s': %s", dir, strerror(errno));
        return NULL;
    }
    return (void *)dir;
}

static const spate_sink_writer ledger_writer = {
    .create = writer_create,
    .write = writer_write,
    .prepare_commit = writer_prepare_commit,
    .close = writer_close,
};

static const spate_committer ledger_committer = {
    .create = committer_create,
    .commit = committer_commit,
};

static const spate_committing_sink ledger_sink = { &ledger_writer, &ledger_committer };

static void
number(spate_ctx *ctx, uint64_t index, void *out)
{
    int64_t v = (int64_t)index;

    (void)ctx;
    memcpy(out, &v, sizeof v);
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    struct ledger_params p = { "" };
    const char *output = NULL;
    long long count = 100000, rate = 0;
    spate_stream *numbers;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) {
            output = argv[++i];
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            count = atoll(argv[++i]);
        } else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc) {
            rate = atoll(argv[++i]);
        } else {
            fprintf(stderr,
                    "ledger_sink: unknown argument '%s' (--output DIR, --count N, --rate N)\n",
                    argv[i]);
            return SPATE_EINVAL;
        }
    }
    if (output == NULL || *output == '\0' || strlen(output) >= sizeof p.dir) {
        fprintf(stderr, "ledger_sink: --output DIR is missing (or longer than %zu bytes)\n",
                sizeof p.dir - 1);
        return SPATE_EINVAL;
    }
    if (count < 1 || rate < 0) {
        fprintf(stderr, "ledger_sink: --count must be >= 1 and --rate >= 0\n");
        return SPATE_EINVAL;
    }
    /* The writers and committers run in TaskManagers elsewhere: the path
     * must not depend on their working folder. */
    if (output[0] != '/') {
        char cwd[256];

        if (getcwd(cwd, sizeof cwd) == NULL ||
            (size_t)snprintf(p.dir, sizeof p.dir, "%s/%s", cwd, output) >= sizeof p.dir) {
            fprintf(stderr, "ledger_sink: --output '%s': its absolute path is too long\n", output);
            return SPATE_EINVAL;
        }
    } else {
        snprintf(p.dir, sizeof p.dir, "%s", output);
    }
    numbers =
        spate_source_generator(env, number, spate_type_int64(), (uint64_t)count, (double)rate);
    numbers = spate_uid(spate_name(numbers, "Numbers"), "numbers");
    spate_uid(spate_name(spate_params(spate_sink_committing(numbers, &ledger_sink), &p, sizeof p),
                         "Ledger"),
              "ledger");
    return spate_execute(env, "Ledger Sink");
}

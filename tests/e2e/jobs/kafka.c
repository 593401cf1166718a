/* The Kafka tests' jobs (tests/e2e/test_kafka.py), one library:
 *   copy:  records of the source topic written to the sink topic as they
 *          are (string records; a map in between)
 *   keyed: words counted per word with a rolling count (keyed state), each
 *          update "word n" written (exactly_once.py's rolling counts)
 *   json:  JSON records {"word":w,"n":k} (a (string,int64) tuple) written
 *          as "word k"
 *   tuples: those tuples written as they are (the sink's value.format,
 *          fields, key.fields and key.format say how)
 *   tagged: string records written as "s<subtask> <record>", the index of
 *          the subtask that wrote them before each (the partitioners, and
 *          which reader read a partition)
 * Arguments: the job's name, then --source KEY=VALUE and --sink KEY=VALUE
 * (the connectors' options, repeated), -c MS (checkpoint interval). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct word_count {
    spate_str word;
    int64_t count;
};

#define MAX_OPTIONS 64

static void
copy(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(spate_str *)out = *(const spate_str *)in;
}

static void
tokenize(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    struct word_count wc = { { NULL, 0 }, 1 };
    size_t i = 0;

    while (i < line->len) {
        size_t start;

        while (i < line->len && line->data[i] == ' ')
            i++;
        for (start = i; i < line->len && line->data[i] != ' '; i++)
            ;
        if (i > start) {
            wc.word = (spate_str){ line->data + start, i - start };
            spate_emit(ctx, &wc);
        }
    }
}

static void
as_line(spate_ctx *ctx, const void *in, void *out)
{
    const struct word_count *wc = in;
    char *s = spate_ctx_alloc(ctx, wc->word.len + 32);
    int n = snprintf(s, wc->word.len + 32, "%.*s %lld", (int)wc->word.len, wc->word.data,
                     (long long)wc->count);

    *(spate_str *)out = (spate_str){ s, (size_t)n };
}

static void
tag(spate_ctx *ctx, const void *in, void *out)
{
    const spate_str *rec = in;
    char *s = spate_ctx_alloc(ctx, rec->len + 16);
    int n = snprintf(s, rec->len + 16, "s%d %.*s", spate_ctx_subtask_index(ctx), (int)rec->len,
                     rec->data);

    *(spate_str *)out = (spate_str){ s, (size_t)n };
}

/* Splits KEY=VALUE into options (key, value pairs); false when full or
 * malformed. */
static bool
add_option(const char **options, int *n, char *kv)
{
    char *eq = strchr(kv, '=');

    if (eq == NULL || *n + 3 > MAX_OPTIONS)
        return false;
    *eq = '\0';
    options[(*n)++] = kv;
    options[(*n)++] = eq + 1;
    options[*n] = NULL;
    return true;
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *source[MAX_OPTIONS + 1] = { NULL }, *sink[MAX_OPTIONS + 1] = { NULL };
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *wc = spate_type_tuple(env, 2, fields);
    const char *job = argc > 1 ? argv[1] : "";
    int nsource = 0, nsink = 0;
    spate_stream *s;

    for (int i = 2; i + 1 < argc; i += 2) {
        bool ok = true;

        if (strcmp(argv[i], "--source") == 0)
            ok = add_option(source, &nsource, argv[i + 1]);
        else if (strcmp(argv[i], "--sink") == 0)
            ok = add_option(sink, &nsink, argv[i + 1]);
        else if (strcmp(argv[i], "-c") == 0)
            spate_env_enable_checkpointing(env, atoll(argv[i + 1]), true);
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "kafka job: bad argument '%s %s'\n", argv[i], argv[i + 1]);
            return SPATE_EINVAL;
        }
    }
    if (strcmp(job, "copy") == 0) {
        s = spate_from_source(env, "kafka", spate_type_string(), source);
        s = spate_map(spate_uid(s, "source"), copy, spate_type_string());
    } else if (strcmp(job, "keyed") == 0) {
        s = spate_from_source(env, "kafka", spate_type_string(), source);
        s = spate_flat_map(spate_uid(s, "source"), tokenize, wc);
        s = spate_uid(spate_sum(spate_key_by_field(s, 0), 1), "counts");
        s = spate_map(s, as_line, spate_type_string());
    } else if (strcmp(job, "json") == 0) {
        s = spate_from_source(env, "kafka", wc, source);
        s = spate_map(spate_uid(s, "source"), as_line, spate_type_string());
    } else if (strcmp(job, "tagged") == 0) {
        s = spate_from_source(env, "kafka", spate_type_string(), source);
        s = spate_map(spate_uid(s, "source"), tag, spate_type_string());
    } else if (strcmp(job, "tuples") == 0) {
        s = spate_uid(spate_from_source(env, "kafka", wc, source), "source");
    } else {
        fprintf(stderr,
                "kafka job: the first argument is copy, keyed, json, tuples or tagged, not '%s'\n",
                job);
        return SPATE_EINVAL;
    }
    spate_uid(spate_sink_to(s, "kafka", sink), "sink");
    return spate_execute(env, "Kafka test job");
}

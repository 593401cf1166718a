/* The jars resources of the REST API (rest_int.h): job libraries uploaded
 * to web.upload.dir, listed, deleted, planned and run. A job's main never
 * runs in the JobManager: `spate job-graph` runs it in a
 * child process that returns the JobGraph over a pipe, killed after
 * web.submit.timeout. Off with web.submit.enable: false. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/id.h"
#include "core/log.h"
#include "core/tmp_dir.h"
#include "core/util.h"
#include "rest/rest_int.h"

extern char **environ;

#define REST_CHILD_MAX_RESULT (256 << 20)
#define REST_CHILD_STDERR_MAX 4000

int
rest_jars_start(struct rest_server *rs, spate_error *err)
{
    const char *base = NULL;
    char exe[PATH_MAX], buf[512];
    ssize_t n;
    int rc;

    if (config_get_string(rs->conf, CFG(WEB_UPLOAD_DIR), &base, NULL) != 0 || base == NULL)
        base = tmp_dir_base(rs->conf, buf, sizeof buf);
    if ((rc = tmp_dir_make(base, "web", &rs->web_dir, err)) != 0)
        return spate_error_wrap(err, "the upload folder (web.upload.dir)");
    rs->upload_dir = xasprintf("%s/jars", rs->web_dir.path);
    rs->incoming_dir = xasprintf("%s/incoming", rs->web_dir.path);
    mkdir(rs->upload_dir, 0700);
    mkdir(rs->incoming_dir, 0700);
    n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    rs->self_exe = xstrdup(exe);
    return 0;
}

void
rest_jars_stop(struct rest_server *rs)
{
    if (rs->upload_dir == NULL)
        return;
    tmp_dir_remove(&rs->web_dir);
    free(rs->upload_dir);
    free(rs->incoming_dir);
    free(rs->self_exe);
    rs->upload_dir = rs->incoming_dir = rs->self_exe = NULL;
}

/* A jar id names one file of the upload folder: no path, no dot files. */
static bool
rest_jar_id_ok(const char *id)
{
    return id[0] != '\0' && id[0] != '.' && strchr(id, '/') == NULL && strlen(id) < 200;
}

static char *
rest_jar_path(const struct rest_server *rs, const char *id)
{
    return xasprintf("%s/%s", rs->upload_dir, id);
}

/* POST /jars/upload: the first file of a multipart body (curl -F
 * "jarfile=@job.so"), kept as "<32 hex digits>_<its name>". */
static enum MHD_Result
rest_jar_upload(struct rest_request *rq)
{
    struct rest_part *p = NULL;
    char name[128], *id, *path;
    size_t n = 0;
    spate_id unique;

    for (size_t i = 0; i < rq->nparts && p == NULL; i++)
        if (rq->parts[i].path != NULL)
            p = &rq->parts[i];
    if (p == NULL)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "the upload has no file (send it as multipart/form-data, e.g. curl -F "
                          "\"jarfile=@job.so\")");
    /* Only the base name, in a safe alphabet. */
    for (const char *s = strrchr(p->filename, '/') ? strrchr(p->filename, '/') + 1 : p->filename;
         *s != '\0' && n < sizeof name - 1; s++)
        name[n++] = (char)((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                                   (*s >= '0' && *s <= '9') || *s == '.' || *s == '-' || *s == '_'
                               ? *s
                               : '_');
    name[n] = '\0';
    if (n == 0)
        snprintf(name, sizeof name, "job.so");
    id_random(&unique);
    id = xasprintf("%s_%s", id_str(&unique).s, name);
    path = rest_jar_path(rq->rs, id);
    if (rename(p->path, path) != 0) {
        enum MHD_Result ret =
            rest_error(rq->c, MHD_HTTP_INTERNAL_SERVER_ERROR, "cannot keep the upload '%s': %s",
                       p->filename, spate_strerror(-errno));

        free(id);
        free(path);
        return ret;
    }
    SPATE_LOG_INFO(REST_LOG, "uploaded job library %s (%zu bytes)", id, p->len);
    free(p->path);
    p->path = NULL;
    free(id);
    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:s%, s:s}", "filename", path, strlen(path), "status", "success"));
}

/* GET /jars: Flink's JarListInfo; a job library's one entry point is its
 * spate_job_main. */
static enum MHD_Result
rest_jar_list(struct rest_request *rq)
{
    DIR *d = opendir(rq->rs->upload_dir);
    json_t *files = json_array();
    const char *host = "localhost";
    struct dirent *e;
    char address[300];

    config_get_string(rq->rs->conf, CFG(REST_ADDRESS), &host, NULL);
    snprintf(address, sizeof address, "%s://%s:%d", rest_tls_on(&rq->rs->tls) ? "https" : "http",
             host, rq->rs->port);
    while (d != NULL && (e = readdir(d)) != NULL) {
        const char *name = strchr(e->d_name, '_');
        struct stat st;
        char *path;

        if (e->d_name[0] == '.' || name == NULL)
            continue;
        path = rest_jar_path(rq->rs, e->d_name);
        if (stat(path, &st) == 0)
            json_array_append_new(
                files,
                json_pack("{s:s, s:s, s:I, s:[{s:s, s:n}]}", "id", e->d_name, "name", name + 1,
                          "uploaded",
                          (json_int_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000,
                          "entry", "name", "spate_job_main", "description"));
        free(path);
    }
    if (d != NULL)
        closedir(d);
    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:s, s:o}", "address", address, "files", files));
}

/* DELETE /jars/:jarid */
static enum MHD_Result
rest_jar_delete(struct rest_request *rq)
{
    char *path;
    int rc;

    if (!rest_jar_id_ok(rq->params[0]))
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "'%s' is not a jar id", rq->params[0]);
    path = rest_jar_path(rq->rs, rq->params[0]);
    rc = unlink(path);
    free(path);
    if (rc != 0)
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND, "jar '%s' was not uploaded (or is deleted)",
                          rq->params[0]);
    SPATE_LOG_INFO(REST_LOG, "deleted job library %s", rq->params[0]);
    return rest_send(rq->c, MHD_HTTP_OK, json_object());
}

/* ---- running a job's main in a child process --------------------------------------- */

/* What a jar's run or plan asks for: from the JSON body (Flink's
 * JarRunRequestBody) and the query (programArg, parallelism). */
struct rest_program {
    char **args;
    int nargs;
    char **conf; /* "key=value" of flinkConfiguration */
    int nconf;
    int parallelism;
    struct rest_resume resume; /* path points into resume_path */
    char *resume_path;
};

static void
rest_program_release(struct rest_program *p)
{
    for (int i = 0; i < p->nargs; i++)
        free(p->args[i]);
    for (int i = 0; i < p->nconf; i++)
        free(p->conf[i]);
    free(p->resume_path);
    free(p->args);
    free(p->conf);
}

static void
rest_program_arg(struct rest_program *p, const char *a, size_t len)
{
    p->args = xrealloc(p->args, (size_t)(p->nargs + 1) * sizeof *p->args);
    p->args[p->nargs++] = xstrndup(a, len);
}

/* Splits on spaces (Flink's programArgs; no quoting) or commas (programArg). */
static void
rest_program_split(struct rest_program *p, const char *s, char sep)
{
    while (*s != '\0') {
        const char *e = strchrnul(s, sep);

        if (e > s)
            rest_program_arg(p, s, (size_t)(e - s));
        s = *e ? e + 1 : e;
    }
}

static int
rest_program_parse(struct rest_request *rq, struct rest_program *p, spate_error *err)
{
    const char *q_args = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "programArg");
    const char *q_par = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "parallelism");
    json_t *body = NULL, *v;
    json_error_t jerr;

    memset(p, 0, sizeof *p);
    if (rq->json_len > 0 && (body = json_loadb(rq->json, rq->json_len, 0, &jerr)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "the body is not JSON: %s (line %d, column %d)",
                               jerr.text, jerr.line, jerr.column);
    if (body != NULL && !json_is_object(body)) {
        json_decref(body);
        return spate_error_set(err, SPATE_EINVAL, "the body must be a JSON object");
    }
    if ((v = json_object_get(body, "programArgsList")) != NULL && !json_is_null(v)) {
        size_t i;
        json_t *a;

        if (!json_is_array(v))
            goto bad_list;
        json_array_foreach(v, i, a)
        {
            if (!json_is_string(a))
                goto bad_list;
            rest_program_arg(p, json_string_value(a), json_string_length(a));
        }
    } else if ((v = json_object_get(body, "programArgs")) != NULL && json_is_string(v)) {
        rest_program_split(p, json_string_value(v), ' ');
    } else if (q_args != NULL) {
        rest_program_split(p, q_args, ',');
    }
    v = json_object_get(body, "parallelism");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 32768) {
            json_decref(body);
            return spate_error_set(err, SPATE_EINVAL,
                                   "parallelism must be a number from 1 to "
                                   "32768");
        }
        p->parallelism = (int)json_integer_value(v);
    } else if (q_par != NULL) {
        char *end;
        long n = strtol(q_par, &end, 10);

        if (*end != '\0' || n < 1 || n > 32768) {
            json_decref(body);
            return spate_error_set(err, SPATE_EINVAL,
                                   "parallelism '%s' is not a number from 1 to 32768", q_par);
        }
        p->parallelism = (int)n;
    }
    if ((v = json_object_get(body, "jobId")) != NULL && !json_is_null(v)) {
        json_decref(body);
        return spate_error_set(err, SPATE_ENOTSUP,
                               "jobId: a job's id comes from its JobGraph; choosing it is not "
                               "supported");
    }
    if (rest_resume_parse(body, &p->resume, err) != 0) {
        json_decref(body);
        return err->code;
    }
    if (p->resume.path != NULL)
        p->resume.path = p->resume_path = xstrdup(p->resume.path);
    if ((v = json_object_get(body, "flinkConfiguration")) != NULL && json_is_object(v)) {
        const char *key;
        json_t *val;

        json_object_foreach(v, key, val)
        {
            if (!json_is_string(val)) {
                json_decref(body);
                return spate_error_set(err, SPATE_EINVAL,
                                       "flinkConfiguration: the value of '%s' must be a string",
                                       key);
            }
            p->conf = xrealloc(p->conf, (size_t)(p->nconf + 1) * sizeof *p->conf);
            p->conf[p->nconf++] = xasprintf("%s=%s", key, json_string_value(val));
        }
    }
    json_decref(body);
    return 0;
bad_list:
    json_decref(body);
    return spate_error_set(err, SPATE_EINVAL, "programArgsList must be an array of strings");
}

/* What the child wrote: 8-byte length, the JobGraph, 8-byte length, the plan. */
struct rest_child_out {
    uint8_t *data;
    size_t len;
    char err[REST_CHILD_STDERR_MAX + 1]; /* the end of its standard error */
    size_t err_len;
};

static void
rest_child_stderr(struct rest_child_out *o, const char *buf, size_t n)
{
    if (n > REST_CHILD_STDERR_MAX) {
        buf += n - REST_CHILD_STDERR_MAX;
        n = REST_CHILD_STDERR_MAX;
    }
    if (o->err_len + n > REST_CHILD_STDERR_MAX) {
        size_t drop = o->err_len + n - REST_CHILD_STDERR_MAX;

        memmove(o->err, o->err + drop, o->err_len - drop);
        o->err_len -= drop;
    }
    memcpy(o->err + o->err_len, buf, n);
    o->err_len += n;
    o->err[o->err_len] = '\0';
}

/* A pipe whose ends are above the standard descriptors and the result fd. */
static int
rest_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -errno;
    for (int i = 0; i < 2; i++) {
        if (fds[i] < 10) {
            int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);

            close(fds[i]);
            fds[i] = moved;
        }
    }
    return fds[0] >= 0 && fds[1] >= 0 ? 0 : SPATE_EIO;
}

/* `spate job-graph` for the jar with the program's arguments: the
 * JobManager's configuration as -D (but no secret: a command line is
 * world-readable in /proc, and the plan needs none), then
 * flinkConfiguration. par is the caller's storage for -p. Free with
 * rest_child_argv_free. */
static char **
rest_child_argv(struct rest_server *rs, const char *jar, const struct rest_program *prog,
                char par[16])
{
    size_t nconf = config_count(rs->conf);
    char **argv;
    int n = 0;

    argv = xcalloc(2 * nconf + 2 * (size_t)prog->nconf + (size_t)prog->nargs + 12, sizeof *argv);
    argv[n++] = rs->self_exe;
    for (size_t i = 0; i < nconf; i++) {
        const char *k, *v, *origin;

        config_entry(rs->conf, i, &k, &v, &origin);
        if (config_key_is_sensitive(k))
            continue;
        argv[n++] = "-D";
        argv[n++] = xasprintf("%s=%s", k, v);
    }
    for (int i = 0; i < prog->nconf; i++) {
        argv[n++] = "-D";
        argv[n++] = xstrdup(prog->conf[i]);
    }
    argv[n++] = "job-graph";
    argv[n++] = "--result-fd";
    argv[n++] = "3";
    if (prog->parallelism > 0) {
        snprintf(par, 16, "%d", prog->parallelism);
        argv[n++] = "-p";
        argv[n++] = par;
    }
    argv[n++] = (char *)jar;
    for (int i = 0; i < prog->nargs; i++)
        argv[n++] = prog->args[i];
    return argv;
}

static void
rest_child_argv_free(char **argv)
{
    /* The -D values, up to the command. */
    for (size_t i = 1; strcmp(argv[i], "job-graph") != 0; i += 2)
        free(argv[i + 1]);
    free(argv);
}

/* The JobManager's environment, but only errors logged. */
static char **
rest_child_envp(void)
{
    char **envp;
    int ne = 0;

    for (char **e = environ; *e != NULL; e++)
        ne++;
    envp = xcalloc((size_t)ne + 2, sizeof *envp);
    ne = 0;
    for (char **e = environ; *e != NULL; e++)
        if (strncmp(*e, "SPATE_LOG_LEVEL=", 16) != 0)
            envp[ne++] = *e;
    envp[ne++] = (char *)"SPATE_LOG_LEVEL=error";
    return envp;
}

/* Starts the child in a process group of its own: standard input
 * /dev/null, standard output and error errp[1] (the job's own words, which
 * a failure reports), the result res[1] as fd 3, nothing else of ours;
 * default signal handling. */
static int
rest_child_spawn(struct rest_server *rs, char **argv, char **envp, const int res[2],
                 const int errp[2], pid_t *pid, spate_error *err)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    int rc;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
    posix_spawn_file_actions_adddup2(&fa, res[1], 3);
    /* Nothing else of the JobManager's (descriptors some library opened
     * without close-on-exec) reaches user code. */
    posix_spawn_file_actions_addclosefrom_np(&fa, 4);
    posix_spawnattr_init(&attr);
    sigemptyset(&none);
    sigfillset(&all);
    sigdelset(&all, SIGKILL);
    sigdelset(&all, SIGSTOP);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                        POSIX_SPAWN_SETPGROUP);
    rc = posix_spawn(pid, rs->self_exe, &fa, &attr, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0)
        return spate_error_set(err, -rc, "cannot start '%s' for the job's main: %s", rs->self_exe,
                               spate_strerror(-rc));
    return 0;
}

/* Reads the child's result and standard error until it closes both or the
 * deadline passes; false when it has to be killed (deadline, or a result
 * beyond REST_CHILD_MAX_RESULT). */
static bool
rest_child_read(int res, int errp, uint64_t deadline, struct rest_child_out *o)
{
    bool res_open = true, err_open = true;
    size_t cap = 0;

    while (res_open || err_open) {
        struct pollfd p[2] = { { .fd = res_open ? res : -1, .events = POLLIN },
                               { .fd = err_open ? errp : -1, .events = POLLIN } };
        uint64_t now = clock_mono_ms();
        char buf[65536];
        ssize_t got;

        if (now >= deadline)
            return false;
        if (poll(p, 2, (int)(deadline - now)) <= 0)
            continue;
        if (p[0].revents != 0) {
            got = read(res, buf, sizeof buf);
            if (got <= 0) {
                res_open = false;
            } else if (o->len + (size_t)got > REST_CHILD_MAX_RESULT) {
                return false;
            } else {
                xgrow((void **)&o->data, &cap, o->len + (size_t)got, 1);
                memcpy(o->data + o->len, buf, (size_t)got);
                o->len += (size_t)got;
            }
        }
        if (p[1].revents != 0) {
            got = read(errp, buf, sizeof buf);
            if (got <= 0)
                err_open = false;
            else
                rest_child_stderr(o, buf, (size_t)got);
        }
    }
    return true;
}

/* Waits for the child (killed, its process group with it, when killed is
 * set or the deadline passes) and says how it ended. */
static int
rest_child_reap(struct rest_server *rs, const char *jar_id, pid_t pid, uint64_t deadline,
                bool killed, const struct rest_child_out *o, spate_error *err)
{
    int status;

    /* Its pipes are closed: it is ending. Wait until the deadline, then kill
     * its process group. */
    while (!killed && waitpid(pid, &status, WNOHANG) == 0) {
        if (clock_mono_ms() >= deadline) {
            killed = true;
            break;
        }
        usleep(1000);
    }
    if (killed) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        SPATE_LOG_WARN(REST_LOG, "the main of %s did not end within %lld ms: killed process %d",
                       jar_id, (long long)rs->plan_timeout_ms, (int)pid);
        return spate_error_set(err, SPATE_ETIMEDOUT,
                               "spate_job_main of '%s' did not return a JobGraph within %lld ms "
                               "(web.submit.timeout): its process was killed",
                               jar_id, (long long)rs->plan_timeout_ms);
    }
    if (WIFSIGNALED(status))
        return spate_error_set(err, SPATE_EUSER,
                               "spate_job_main of '%s' crashed: its process died of signal %d (%s)",
                               jar_id, WTERMSIG(status), strsignal(WTERMSIG(status)));
    if (WEXITSTATUS(status) != 0) {
        const char *msg = o->err;
        const char *prefix = strstr(msg, "spate job-graph: ");
        const char *sanitizer = strstr(msg, "ERROR: AddressSanitizer: ");
        int own = prefix != NULL ? (int)(prefix - o->err) : 0;

        /* spate's line says how it failed; or, under a sanitizer, the
         * sanitizer's report of a crash. */
        if (prefix != NULL)
            msg = prefix + strlen("spate job-graph: ");
        else if (sanitizer != NULL)
            msg = sanitizer + strlen("ERROR: ");
        /* What the job's main printed before it (its usage, its reasons),
         * as Flink reports a program's System.out and System.err. */
        while (own > 0 && (o->err[own - 1] == '\n' || o->err[own - 1] == ' '))
            own--;
        if (own > 0)
            return spate_error_set(err, SPATE_EUSER,
                                   "the job's main failed: %.*s; its output:\n%.*s",
                                   (int)strcspn(msg, "\n") > 0 ? (int)strcspn(msg, "\n") : 200, msg,
                                   own > 400 ? 400 : own, o->err + (own > 400 ? own - 400 : 0));
        return spate_error_set(err, SPATE_EUSER, "the job's main failed: %.*s",
                               (int)strcspn(msg, "\n") > 0 ? (int)strcspn(msg, "\n") : 200,
                               *msg ? msg : "(it said nothing)");
    }
    return 0;
}

/* Runs the job's main in a child process (`spate job-graph`) and collects
 * what it wrote within web.submit.timeout. */
static int
rest_child_run(struct rest_server *rs, const char *jar_id, const char *jar,
               const struct rest_program *prog, struct rest_child_out *o, spate_error *err)
{
    char **argv = NULL, **envp = NULL, par[16];
    int res[2] = { -1, -1 }, errp[2] = { -1, -1 }, rc;
    uint64_t deadline = clock_mono_ms() + (uint64_t)rs->plan_timeout_ms;
    bool done;
    pid_t pid;

    argv = rest_child_argv(rs, jar, prog, par);
    envp = rest_child_envp();
    if (rest_pipe(res) != 0 || rest_pipe(errp) != 0) {
        rc = spate_error_set(err, SPATE_EIO, "cannot make pipes for the job's main: %s",
                             spate_strerror(-errno));
        goto out;
    }
    rc = rest_child_spawn(rs, argv, envp, res, errp, &pid, err);
    close(res[1]);
    close(errp[1]);
    res[1] = errp[1] = -1;
    if (rc != 0)
        goto out;
    SPATE_LOG_INFO(REST_LOG, "running the main of %s in process %d", jar_id, (int)pid);
    done = rest_child_read(res[0], errp[0], deadline, o);
    rc = rest_child_reap(rs, jar_id, pid, deadline, !done, o, err);
out:
    for (int i = 0; i < 2; i++) {
        if (res[i] >= 0)
            close(res[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    rest_child_argv_free(argv);
    free(envp);
    return rc;
}

/* Splits the child's output; graph and plan point into o->data. */
static int
rest_child_result(const char *jar_id, const struct rest_child_out *o, const uint8_t **graph,
                  size_t *glen, const char **plan, size_t *plen, spate_error *err)
{
    uint64_t a = 0, b = 0;

    if (o->len >= 8)
        for (int i = 0; i < 8; i++)
            a = a << 8 | o->data[i];
    if (o->len >= 16 && a <= o->len - 16)
        for (int i = 0; i < 8; i++)
            b = b << 8 | o->data[8 + a + (size_t)i];
    if (o->len < 16 || a > o->len - 16 || b != o->len - 16 - a)
        return spate_error_set(err, SPATE_EPROTO,
                               "the process running the main of '%s' returned %zu bytes that are "
                               "not a JobGraph",
                               jar_id, o->len);
    *graph = o->data + 8;
    *glen = (size_t)a;
    *plan = (const char *)o->data + 16 + a;
    *plen = (size_t)b;
    return 0;
}

/* POST /jars/:jarid/run and /plan. */
static enum MHD_Result
rest_jar_main(struct rest_request *rq, bool run)
{
    struct rest_child_out out = { 0 };
    struct rest_program prog;
    const uint8_t *graph = NULL;
    const char *plan = NULL;
    size_t glen = 0, plen = 0;
    spate_error err = { 0 };
    enum MHD_Result ret;
    struct stat st;
    char *path;

    if (!rest_jar_id_ok(rq->params[0]))
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "'%s' is not a jar id", rq->params[0]);
    path = rest_jar_path(rq->rs, rq->params[0]);
    if (stat(path, &st) != 0) {
        free(path);
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND, "jar '%s' was not uploaded (or is deleted)",
                          rq->params[0]);
    }
    if (rest_program_parse(rq, &prog, &err) != 0) {
        free(path);
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "%s", err.message);
    }
    if (rest_child_run(rq->rs, rq->params[0], path, &prog, &out, &err) != 0 ||
        rest_child_result(rq->params[0], &out, &graph, &glen, &plan, &plen, &err) != 0) {
        SPATE_LOG_WARN(REST_LOG, "%s of %s failed: %s", run ? "run" : "plan", rq->params[0],
                       err.message);
        ret = rest_error(
            rq->c, err.code == SPATE_EIO ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_BAD_REQUEST,
            "%s", err.message);
    } else if (!run) {
        json_t *pj = json_loadb(plan, plen, 0, NULL);

        ret = rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "plan", pj ? pj : json_object()));
    } else {
        uint8_t key[SHA256_BYTES];
        spate_id job;

        if (blob_server_put_file(rq->rs->blobs, path, false, key, &err) != 0) {
            ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "%s", err.message);
        } else {
            if (rest_submit_graph(rq->rs, graph, glen, key, &prog.resume, &job, &err) != 0)
                ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "job submission failed: %s",
                                 err.message);
            else
                ret = rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:s}", "jobid", id_str(&job).s));
            blob_server_unref(rq->rs->blobs, key);
        }
    }
    rest_program_release(&prog);
    free(out.data);
    free(path);
    return ret;
}

static enum MHD_Result
rest_jar_run(struct rest_request *rq)
{
    return rest_jar_main(rq, true);
}

static enum MHD_Result
rest_jar_plan(struct rest_request *rq)
{
    return rest_jar_main(rq, false);
}

const struct rest_route rest_jars_routes[] = {
    { "POST", "/jars/upload", rest_jar_upload, REST_BODY_MULTIPART, REST_SUBMIT },
    { "GET", "/jars", rest_jar_list, REST_BODY_NONE, REST_SUBMIT },
    { "DELETE", "/jars/:jarid", rest_jar_delete, REST_BODY_NONE, REST_SUBMIT },
    { "POST", "/jars/:jarid/plan", rest_jar_plan, REST_BODY_JSON, REST_SUBMIT },
    { "POST", "/jars/:jarid/run", rest_jar_run, REST_BODY_JSON, REST_SUBMIT },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};

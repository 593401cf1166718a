/* Every configuration option spate reads: Flink's key, type, spate's default
 * (where it differs from Flink's), range, and a description.
 * One table, so that validation, `spate config` and docs/config.md agree.
 * Use: config_get_int(conf, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &n, err). */
#ifndef SPATE_CORE_CONFIG_OPTIONS_H
#define SPATE_CORE_CONFIG_OPTIONS_H

#include <stdint.h>

enum config_type {
    CONFIG_STRING,
    CONFIG_INT,
    CONFIG_DOUBLE,
    CONFIG_BOOL,
    CONFIG_DURATION, /* min/max in milliseconds */
    CONFIG_MEMORY,   /* min/max in bytes */
    CONFIG_ENUM,
};

struct config_option {
    const char *key;
    enum config_type type;
    const char *default_value; /* NULL: no default, unset unless given */
    int64_t min, max;          /* for INT, DURATION, MEMORY (and DOUBLE) */
    const char *enum_values;   /* ENUM: "none|fixed-delay|..." */
    const char *fallback_key;  /* an older name that is still read */
    const char *description;
};

#define CFG_NOLIMIT_LO INT64_MIN
#define CFG_NOLIMIT_HI INT64_MAX
#define CFG_KB         1024LL
#define CFG_MB         (1024LL * 1024)
#define CFG_GB         (1024LL * 1024 * 1024)

/* X(NAME, key, type, default, min, max, enum values, fallback key, description) */
#define CONFIG_OPTIONS(X)                                                                          \
    /* processes and addresses */                                                                  \
    X(JOBMANAGER_RPC_ADDRESS, "jobmanager.rpc.address", STRING, "localhost", 0, 0, NULL, NULL,     \
      "host the JobManager's RPC endpoint is reached at")                                          \
    X(JOBMANAGER_RPC_PORT, "jobmanager.rpc.port", INT, "6123", 0, 65535, NULL, NULL,               \
      "the JobManager's RPC port (0: ephemeral)")                                                  \
    X(JOBMANAGER_BIND_HOST, "jobmanager.bind-host", STRING, "127.0.0.1", 0, 0, NULL, NULL,         \
      "local address the JobManager's RPC service binds")                                          \
    X(TASKMANAGER_HOST, "taskmanager.host", STRING, "127.0.0.1", 0, 0, NULL, NULL,                 \
      "host other processes reach this TaskManager at")                                            \
    X(TASKMANAGER_BIND_HOST, "taskmanager.bind-host", STRING, "127.0.0.1", 0, 0, NULL, NULL,       \
      "local address the TaskManager's services bind")                                             \
    X(TASKMANAGER_RPC_PORT, "taskmanager.rpc.port", STRING, "0", 0, 0, NULL, NULL,                 \
      "the TaskManager's RPC port, a port or a range such as 50100-50200 (0: ephemeral)")          \
    X(TASKMANAGER_DATA_PORT, "taskmanager.data.port", STRING, "0", 0, 0, NULL, NULL,               \
      "the TaskManager's data (shuffle) port or range (0: ephemeral)")                             \
    X(TASKMANAGER_NUMBER_OF_TASK_SLOTS, "taskmanager.numberOfTaskSlots", INT, "1", 1, 65536, NULL, \
      NULL, "slots a TaskManager offers")                                                          \
    X(TASKMANAGER_RESOURCE_ID, "taskmanager.resource-id", STRING, NULL, 0, 0, NULL, NULL,          \
      "the TaskManager's resource id (default: 32 random hex digits)")                             \
    X(TASKMANAGER_REGISTRATION_TIMEOUT, "taskmanager.registration.timeout", DURATION, "5 min", 1,  \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "a TaskManager that cannot register with a ResourceManager this long exits")                 \
    X(TASKMANAGER_SLOT_TIMEOUT, "taskmanager.slot.timeout", DURATION, "10 s", 1, CFG_NOLIMIT_HI,   \
      NULL, NULL, "a slot given to a job and not accepted by its JobMaster this long is freed")    \
    X(TASK_CANCELLATION_TIMEOUT, "task.cancellation.timeout", DURATION, "180 s", 0,                \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "a task that does not stop this long after cancel ends its TaskManager (0: never)")          \
    X(IO_TMP_DIRS, "io.tmp.dirs", STRING, NULL, 0, 0, NULL, NULL,                                  \
      "folder for temporary files (default: $TMPDIR, else /tmp)")                                  \
    X(LOCAL_NUMBER_TASKMANAGER, "local.number-taskmanager", INT, "1", 1, 1024, NULL, NULL,         \
      "TaskManagers of the embedded mini cluster (spate run --local)")                             \
    /* RPC */                                                                                      \
    X(RPC_ASK_TIMEOUT, "rpc.ask.timeout", DURATION, "10 s", 1, CFG_NOLIMIT_HI, NULL,               \
      "pekko.ask.timeout", "default timeout of an RPC ask")                                        \
    X(RPC_MAX_FRAME_SIZE, "rpc.max-frame-size", MEMORY, "10 mb", 1024, CFG_GB, NULL,               \
      "pekko.framesize", "largest RPC frame accepted or sent")                                     \
    X(RPC_FRAME_TIMEOUT, "rpc.frame-timeout", DURATION, "60 s", 1, CFG_NOLIMIT_HI, NULL, NULL,     \
      "spate: a frame whose first bytes came must be whole this soon, else its connection closes") \
    X(RPC_MAX_BUFFERED, "rpc.max-buffered", MEMORY, "256 mb", 1024, 64 * CFG_GB, NULL, NULL,       \
      "spate: most memory incoming RPC frames not yet whole may hold, all connections together")   \
    X(CLUSTER_CONNECTIONS_MAX, "cluster.connections.max", INT, "1024", 1, 1000000, NULL, NULL,     \
      "spate: connections each RPC, data and blob port keeps open at most; more are refused busy") \
    X(CLUSTER_CONNECTIONS_MAX_PER_PEER, "cluster.connections.max-per-peer", INT, "256", 1,         \
      1000000, NULL, NULL, "spate: of those, connections from one IP address at most")             \
    X(CLUSTER_CONNECTIONS_MAX_HANDSHAKING, "cluster.connections.max-handshaking", INT, "128", 1,   \
      1000000, NULL, NULL,                                                                         \
      "spate: connections still in their handshake each port keeps; the oldest goes for a new "    \
      "one")                                                                                       \
    X(CLUSTER_CONNECTIONS_HANDSHAKE_TIMEOUT, "cluster.connections.handshake-timeout", DURATION,    \
      "10 s", 1, CFG_NOLIMIT_HI, NULL, NULL,                                                       \
      "spate: an accepted connection that has not finished its handshake this long is closed")     \
    X(SECURITY_RPC_SECRET, "security.rpc.secret", STRING, NULL, 0, 0, NULL, NULL,                  \
      "shared secret every RPC, data and blob connection proves (unset: the secret file; empty: "  \
      "none)")                                                                                     \
    X(SECURITY_RPC_SECRET_FILE, "security.rpc.secret-file", STRING, "~/.spate/secret", 0, 0, NULL, \
      NULL,                                                                                        \
      "where the secret is read (and made at first start) when security.rpc.secret is unset")      \
    X(SECURITY_SSL_INTERNAL_ENABLED, "security.ssl.internal.enabled", BOOL, "false", 0, 0, NULL,   \
      NULL, "TLS with mutual authentication on every RPC, data and blob connection")               \
    X(SECURITY_SSL_INTERNAL_CERT, "security.ssl.internal.cert", STRING, NULL, 0, 0, NULL, NULL,    \
      "spate: PEM file of this process's certificate (chain) for internal connections")            \
    X(SECURITY_SSL_INTERNAL_KEY, "security.ssl.internal.key", STRING, NULL, 0, 0, NULL, NULL,      \
      "spate: PEM file of the private key of security.ssl.internal.cert")                          \
    X(SECURITY_SSL_INTERNAL_TRUSTSTORE, "security.ssl.internal.truststore", STRING, NULL, 0, 0,    \
      NULL, NULL, "PEM file of the CA certificates a peer's certificate must chain to")            \
    X(SECURITY_SSL_REST_ENABLED, "security.ssl.rest.enabled", BOOL, "false", 0, 0, NULL, NULL,     \
      "HTTPS on the REST endpoint (and for the CLI that calls it)")                                \
    X(SECURITY_SSL_REST_CERT, "security.ssl.rest.cert", STRING, NULL, 0, 0, NULL, NULL,            \
      "spate: PEM file of the REST server's certificate (chain)")                                  \
    X(SECURITY_SSL_REST_KEY, "security.ssl.rest.key", STRING, NULL, 0, 0, NULL, NULL,              \
      "spate: PEM file of the private key of security.ssl.rest.cert")                              \
    X(SECURITY_SSL_REST_TRUSTSTORE, "security.ssl.rest.truststore", STRING, NULL, 0, 0, NULL,      \
      NULL,                                                                                        \
      "PEM file of the CA certificates the REST server's (and clients') certificates chain to")    \
    X(SECURITY_SSL_REST_AUTHENTICATION_ENABLED, "security.ssl.rest.authentication-enabled", BOOL,  \
      "false", 0, 0, NULL, NULL, "REST clients must present a certificate the truststore trusts")  \
    X(SECURITY_SSL_PROTOCOL, "security.ssl.protocol", ENUM, "TLSv1.2", 0, 0, "TLSv1.2|TLSv1.3",    \
      NULL, "the lowest TLS version spoken")                                                       \
    X(SECURITY_SSL_ALGORITHMS, "security.ssl.algorithms", STRING, NULL, 0, 0, NULL, NULL,          \
      "spate: TLS 1.2 cipher suites in OpenSSL's names, colon separated (unset: OpenSSL's "        \
      "default)")                                                                                  \
    X(HEARTBEAT_INTERVAL, "heartbeat.interval", DURATION, "1 s", 1, CFG_NOLIMIT_HI, NULL, NULL,    \
      "time between heartbeat requests")                                                           \
    X(HEARTBEAT_TIMEOUT, "heartbeat.timeout", DURATION, "5 s", 1, CFG_NOLIMIT_HI, NULL, NULL,      \
      "a peer not heard from this long is lost")                                                   \
    X(CLUSTER_REGISTRATION_INITIAL_TIMEOUT, "cluster.registration.initial-timeout", DURATION,      \
      "100 ms", 1, CFG_NOLIMIT_HI, NULL, NULL, "first timeout of a registration attempt")          \
    X(CLUSTER_REGISTRATION_MAX_TIMEOUT, "cluster.registration.max-timeout", DURATION, "5 s", 1,    \
      CFG_NOLIMIT_HI, NULL, NULL, "largest timeout of a registration attempt (doubling)")          \
    X(CLUSTER_REGISTRATION_ERROR_DELAY, "cluster.registration.error-delay", DURATION, "1 s", 0,    \
      CFG_NOLIMIT_HI, NULL, NULL, "pause after a failed registration attempt")                     \
    X(CLUSTER_REGISTRATION_REFUSED_DELAY, "cluster.registration.refused-registration-delay",       \
      DURATION, "1 s", 0, CFG_NOLIMIT_HI, NULL, NULL, "pause after a refused registration")        \
    X(SLOT_REQUEST_TIMEOUT, "slot.request.timeout", DURATION, "60 s", 1, CFG_NOLIMIT_HI, NULL,     \
      NULL, "a slot request not met this long fails")                                              \
    X(SLOT_IDLE_TIMEOUT, "slot.idle.timeout", DURATION, "50 s", 1, CFG_NOLIMIT_HI, NULL, NULL,     \
      "a slot a JobMaster holds and no task uses this long goes back to its TaskManager")          \
    /* REST */                                                                                     \
    X(REST_ADDRESS, "rest.address", STRING, "localhost", 0, 0, NULL, NULL,                         \
      "host clients reach the REST server at")                                                     \
    X(REST_PORT, "rest.port", INT, "8081", 0, 65535, NULL, NULL, "the REST server's port")         \
    X(REST_BIND_ADDRESS, "rest.bind-address", STRING, "127.0.0.1", 0, 0, NULL, NULL,               \
      "local address the REST server binds")                                                       \
    X(REST_BIND_PORT, "rest.bind-port", STRING, NULL, 0, 0, NULL, NULL,                            \
      "port or range the REST server binds (default: rest.port)")                                  \
    X(REST_SERVER_MAX_CONTENT_LENGTH, "rest.server.max-content-length", MEMORY, "100 mb", 1024,    \
      CFG_NOLIMIT_HI, NULL, NULL, "largest request body, uploads included")                        \
    X(REST_SERVER_CONNECTION_LIMIT, "rest.server.connection-limit", INT, "256", 1, 10000, NULL,    \
      NULL, "spate: most REST connections open at once (a thread each); more are closed at once")  \
    X(REST_SERVER_PER_IP_CONNECTION_LIMIT, "rest.server.per-ip-connection-limit", INT, "32", 1,    \
      10000, NULL, NULL,                                                                           \
      "spate: most REST connections open at once from one client address, so that slow clients "   \
      "from one address cannot take every connection")                                             \
    X(REST_SERVER_CONNECTION_TIMEOUT, "rest.server.connection-timeout", DURATION, "30 s", 1000,    \
      3600000, NULL, NULL, "spate: a REST connection silent this long is closed")                  \
    X(REST_SERVER_REQUEST_TIMEOUT, "rest.server.request-timeout", DURATION, "10 s", 100, 3600000,  \
      NULL, NULL,                                                                                  \
      "spate: a REST connection still sending a request's line and headers (or idle between "      \
      "requests) this long is closed when another arrives")                                        \
    X(WEB_SUBMIT_ENABLE, "web.submit.enable", BOOL, "false", 0, 0, NULL, NULL,                     \
      "whether job libraries may be uploaded (/jars) and run over REST (spate: off by default)")   \
    X(WEB_CANCEL_ENABLE, "web.cancel.enable", BOOL, "true", 0, 0, NULL, NULL,                      \
      "whether the dashboard offers to cancel jobs (the REST API cancels either way, as Flink's)") \
    X(WEB_REFRESH_INTERVAL, "web.refresh-interval", DURATION, "3 s", 100, CFG_NOLIMIT_HI, NULL,    \
      NULL, "how often the dashboard fetches its figures again")                                   \
    X(WEB_CHECKPOINTS_HISTORY, "web.checkpoints.history", INT, "10", 1, 1000000, NULL, NULL,       \
      "checkpoints of a job whose statistics REST and the dashboard keep")                         \
    X(REST_AUTHENTICATION_TOKEN_FILE, "rest.authentication.token-file", STRING, NULL, 0, 0, NULL,  \
      NULL,                                                                                        \
      "spate: bearer tokens, one a line; set, every REST request that changes something "          \
      "needs one")                                                                                 \
    X(REST_AUTHENTICATION_CREDENTIALS_FILE, "rest.authentication.credentials-file", STRING, NULL,  \
      0, 0, NULL, NULL,                                                                            \
      "spate: user:password lines for HTTP basic authentication of REST requests that change "     \
      "something")                                                                                 \
    X(WEB_UPLOAD_DIR, "web.upload.dir", STRING, NULL, 0, 0, NULL, NULL,                            \
      "folder of uploaded job libraries (default: a folder in io.tmp.dirs)")                       \
    X(WEB_SUBMIT_TIMEOUT, "web.submit.timeout", DURATION, "30 s", 1, CFG_NOLIMIT_HI, NULL, NULL,   \
      "spate: longest a job's main may take in the child process of /jars/:jarid/run or /plan")    \
    X(JOBSTORE_MAX_CAPACITY, "jobstore.max-capacity", INT, "1000", 1, 1000000, NULL, NULL,         \
      "finished jobs the Dispatcher keeps in its archive (the oldest go first)")                   \
    /* BlobServer */                                                                               \
    X(BLOB_SERVER_PORT, "blob.server.port", STRING, "0", 0, 0, NULL, NULL,                         \
      "the BlobServer's port or range (0: ephemeral)")                                             \
    X(BLOB_STORAGE_DIRECTORY, "blob.storage.directory", STRING, NULL, 0, 0, NULL, NULL,            \
      "folder of the BlobServer's and BlobCaches' files (default: io.tmp.dirs)")                   \
    X(BLOB_MAX_SIZE, "blob.max-size", MEMORY, "100 mb", 1, CFG_NOLIMIT_HI, NULL, NULL,             \
      "spate: largest blob (job library) the BlobServer stores and a BlobCache fetches")           \
    X(METRICS_FETCHER_UPDATE_INTERVAL, "metrics.fetcher.update-interval", DURATION, "1 s", 1,      \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "how old the REST server's copy of the TaskManagers' metrics may get before it asks again "  \
      "(Flink: 10 s)")                                                                             \
    X(HISTORYSERVER_LOG_JOBMANAGER_URL_PATTERN, "historyserver.log.jobmanager.url-pattern",        \
      STRING, NULL, 0, 0, NULL, NULL,                                                              \
      "URL of a job's JobManager log elsewhere, <jobid> filled in "                                \
      "(/jobs/:jobid/jobmanager/log-url)")                                                         \
    X(HISTORYSERVER_LOG_TASKMANAGER_URL_PATTERN, "historyserver.log.taskmanager.url-pattern",      \
      STRING, NULL, 0, 0, NULL, NULL,                                                              \
      "URL of a TaskManager's log elsewhere, <jobid> and <tmid> filled in")                        \
    X(METRICS_REPORTERS, "metrics.reporters", STRING, NULL, 0, 0, NULL, NULL,                      \
      "names of the configured reporters to start (default: every configured one)")                \
    X(METRICS_REPORTER_PROM_FACTORY_CLASS, "metrics.reporter.prom.factory.class", STRING, NULL, 0, \
      0, NULL, "metrics.reporter.prom.class",                                                      \
      "the Prometheus reporter: org.apache.flink.metrics.prometheus.PrometheusReporterFactory or " \
      "spate's short form prometheus")                                                             \
    X(METRICS_REPORTER_PROM_PORT, "metrics.reporter.prom.port", STRING, "9249", 0, 0, NULL, NULL,  \
      "port or range the Prometheus reporter's HTTP server binds, the first free one (0: "         \
      "ephemeral)")                                                                                \
    X(METRICS_LATENCY_INTERVAL, "metrics.latency.interval", DURATION, "0 ms", 0, CFG_NOLIMIT_HI,   \
      NULL, NULL, "how often sources emit latency markers (0: latency tracking off)")              \
    X(METRICS_LATENCY_GRANULARITY, "metrics.latency.granularity", ENUM, "operator", 0, 0,          \
      "single|operator|subtask", NULL,                                                             \
      "latency histograms per operator (single), per operator and source (operator), or per "      \
      "operator and source subtask (subtask)")                                                     \
    X(METRICS_LATENCY_HISTORY_SIZE, "metrics.latency.history-size", INT, "128", 1, 1048576, NULL,  \
      NULL, "latencies each latency histogram keeps")                                              \
    /* jobs */                                                                                     \
    X(PARALLELISM_DEFAULT, "parallelism.default", INT, "1", 1, 32768, NULL, NULL,                  \
      "parallelism of operators that do not set one")                                              \
    X(PIPELINE_MAX_PARALLELISM, "pipeline.max-parallelism", INT, "128", 1, 32768, NULL, NULL,      \
      "number of key groups")                                                                      \
    X(PIPELINE_AUTO_WATERMARK_INTERVAL, "pipeline.auto-watermark-interval", DURATION, "200 ms", 0, \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "how often periodic watermarks are emitted (0: after each record that advances it)")         \
    X(TABLE_EXEC_STATE_TTL, "table.exec.state.ttl", DURATION, "0 ms", 0, CFG_NOLIMIT_HI, NULL,     \
      NULL,                                                                                        \
      "SQL: how long a regular join keeps a key's rows after their last change (0: for "           \
      "ever)")                                                                                     \
    X(EXECUTION_TARGET, "execution.target", ENUM, NULL, 0, 0, "local|remote", NULL,                \
      "where spate run runs jobs (default: remote when rest.address or jobmanager.rpc.address "    \
      "is configured, else local)")                                                                \
    X(EXECUTION_BUFFER_TIMEOUT, "execution.buffer-timeout", DURATION, "5 ms", 0, CFG_NOLIMIT_HI,   \
      NULL, NULL, "longest a partly filled network buffer waits (0: flush every record)")          \
    X(RESTART_STRATEGY_TYPE, "restart-strategy.type", ENUM, NULL, 0, 0,                            \
      "none|off|disable|fixed-delay|fixeddelay|failure-rate|failurerate|exponential-delay|"        \
      "exponentialdelay",                                                                          \
      "restart-strategy",                                                                          \
      "restart strategy (default: exponential-delay with checkpoints, none "                       \
      "without)")                                                                                  \
    X(RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, "restart-strategy.fixed-delay.attempts", INT, "1", 0, \
      INT32_MAX, NULL, NULL, "fixed-delay: restarts before the job fails")                         \
    X(RESTART_STRATEGY_FIXED_DELAY_DELAY, "restart-strategy.fixed-delay.delay", DURATION, "1 s",   \
      0, CFG_NOLIMIT_HI, NULL, NULL, "fixed-delay: pause before each restart")                     \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF,                                          \
      "restart-strategy.exponential-delay.initial-backoff", DURATION, "50 ms", 1, CFG_NOLIMIT_HI,  \
      NULL, NULL, "exponential-delay: the first pause before a restart (Flink: 1 s)")              \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF,                                              \
      "restart-strategy.exponential-delay.max-backoff", DURATION, "10 s", 1, CFG_NOLIMIT_HI, NULL, \
      NULL, "exponential-delay: the longest pause before a restart (Flink: 1 min)")                \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER,                                       \
      "restart-strategy.exponential-delay.backoff-multiplier", DOUBLE, "1.5", 1, 1000000, NULL,    \
      NULL, "exponential-delay: the pause grows by this factor per restart (above 1)")             \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD,                                  \
      "restart-strategy.exponential-delay.reset-backoff-threshold", DURATION, "1 h", 1,            \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "exponential-delay: a job that runs this long without failing starts again from the "        \
      "initial backoff")                                                                           \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR,                                            \
      "restart-strategy.exponential-delay.jitter-factor", DOUBLE, "0.1", 0, 1, NULL, NULL,         \
      "exponential-delay: each pause varies randomly by up to this fraction")                      \
    X(RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS_BEFORE_RESET,                                    \
      "restart-strategy.exponential-delay.attempts-before-reset-backoff", INT, "2147483647", 1,    \
      INT32_MAX, NULL, NULL,                                                                       \
      "exponential-delay: restarts before the job fails (reset with the "                          \
      "backoff)")                                                                                  \
    X(RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES,                                                  \
      "restart-strategy.failure-rate.max-failures-per-interval", INT, "1", 1, INT32_MAX, NULL,     \
      NULL, "failure-rate: restarts allowed within failure-rate-interval")                         \
    X(RESTART_STRATEGY_FAILURE_RATE_INTERVAL,                                                      \
      "restart-strategy.failure-rate.failure-rate-interval", DURATION, "1 min", 1, CFG_NOLIMIT_HI, \
      NULL, NULL,                                                                                  \
      "failure-rate: the window failures are "                                                     \
      "counted in")                                                                                \
    X(RESTART_STRATEGY_FAILURE_RATE_DELAY, "restart-strategy.failure-rate.delay", DURATION, "1 s", \
      0, CFG_NOLIMIT_HI, NULL, NULL, "failure-rate: pause before each restart")                    \
    /* network */                                                                                  \
    X(TASKMANAGER_MEMORY_SEGMENT_SIZE, "taskmanager.memory.segment-size", MEMORY, "32 kb", 4096,   \
      64 * CFG_MB, NULL, NULL, "size of a network buffer")                                         \
    X(TASKMANAGER_MEMORY_NETWORK_MIN, "taskmanager.memory.network.min", MEMORY, "64 mb",           \
      32 * CFG_KB, CFG_NOLIMIT_HI, NULL, NULL, "network buffer memory of a TaskManager")           \
    X(TASKMANAGER_MEMORY_NETWORK_MAX, "taskmanager.memory.network.max", MEMORY, "64 mb",           \
      32 * CFG_KB, CFG_NOLIMIT_HI, NULL, NULL, "network buffer memory of a TaskManager, at most")  \
    X(TASKMANAGER_NETWORK_BUFFERS_PER_CHANNEL, "taskmanager.network.memory.buffers-per-channel",   \
      INT, "2", 1, 1024, NULL, NULL, "exclusive buffers of each remote input channel")             \
    X(TASKMANAGER_NETWORK_FLOATING_BUFFERS_PER_GATE,                                               \
      "taskmanager.network.memory.floating-buffers-per-gate", INT, "32", 1, 65536, NULL, NULL,     \
      "buffers an input gate shares among its channels as their backlog asks, and a result "       \
      "partition among its subpartitions beyond buffers-per-channel each")                         \
    X(TASKMANAGER_NETWORK_REQUEST_BACKOFF_INITIAL, "taskmanager.network.request-backoff.initial",  \
      DURATION, "1 ms", 1, CFG_NOLIMIT_HI, NULL, NULL,                                             \
      "first pause before a partition request is retried, doubling (producer not running yet; "    \
      "Flink: 100 ms)")                                                                            \
    X(TASKMANAGER_NETWORK_REQUEST_BACKOFF_MAX, "taskmanager.network.request-backoff.max",          \
      DURATION, "10 s", 1, CFG_NOLIMIT_HI, NULL, NULL,                                             \
      "a partition request still not found after backing off this far fails")                      \
    X(TASKMANAGER_NETWORK_COMPRESSION_CODEC, "taskmanager.network.compression.codec", ENUM,        \
      "none", 0, 0, "none|lz4", NULL, "compression of network buffers between TaskManagers")       \
    X(TASKMANAGER_NETWORK_BUSY_POLL, "taskmanager.network.busy-poll", DURATION, "250 us", 0, 1000, \
      NULL, NULL,                                                                                  \
      "spate: how long the network I/O loop and a waiting task poll before sleeping (0: never)")   \
    X(TASKMANAGER_TASKS_BATCH_SCHEDULING, "taskmanager.tasks.batch-scheduling", BOOL, "true", 0,   \
      0, NULL, NULL,                                                                               \
      "spate: task threads run as SCHED_BATCH (woken, they wait for the running thread's time "    \
      "slice instead of preempting it: fewer switches when tasks share cores; false: the "         \
      "default policy)")                                                                           \
    /* checkpoints and state */                                                                    \
    X(EXECUTION_CHECKPOINTING_INTERVAL, "execution.checkpointing.interval", DURATION, NULL, 10,    \
      CFG_NOLIMIT_HI, NULL, NULL, "time between checkpoints (unset: no checkpoints)")              \
    X(EXECUTION_CHECKPOINTING_TIMEOUT, "execution.checkpointing.timeout", DURATION, "10 min", 10,  \
      CFG_NOLIMIT_HI, NULL, NULL, "a checkpoint not complete this long after its trigger fails")   \
    X(EXECUTION_CHECKPOINTING_MIN_PAUSE, "execution.checkpointing.min-pause", DURATION, "0 ms", 0, \
      CFG_NOLIMIT_HI, NULL, NULL,                                                                  \
      "least time from the end of one checkpoint to the trigger of the next")                      \
    X(EXECUTION_CHECKPOINTING_MAX_CONCURRENT,                                                      \
      "execution.checkpointing.max-concurrent-checkpoints", INT, "1", 1, 1000, NULL, NULL,         \
      "checkpoints in progress at once, at most")                                                  \
    X(EXECUTION_CHECKPOINTING_TOLERABLE_FAILED,                                                    \
      "execution.checkpointing.tolerable-failed-checkpoints", INT, "0", 0, INT32_MAX, NULL, NULL,  \
      "failed checkpoints in a row (timed out, declined, not written) the job tolerates; one "     \
      "more fails the job")                                                                        \
    X(EXECUTION_CHECKPOINTING_MODE, "execution.checkpointing.mode", ENUM, "EXACTLY_ONCE", 0, 0,    \
      "EXACTLY_ONCE|AT_LEAST_ONCE", NULL, "EXACTLY_ONCE aligns barriers; AT_LEAST_ONCE does not")  \
    X(EXECUTION_CHECKPOINTING_RETENTION,                                                           \
      "execution.checkpointing.externalized-checkpoint-retention", ENUM,                           \
      "NO_EXTERNALIZED_CHECKPOINTS", 0, 0,                                                         \
      "NO_EXTERNALIZED_CHECKPOINTS|DELETE_ON_CANCELLATION|RETAIN_ON_CANCELLATION", NULL,           \
      "whether completed checkpoints stay when the job ends: never, when it fails, always")        \
    X(STATE_CHECKPOINTS_NUM_RETAINED, "state.checkpoints.num-retained", INT, "1", 1, 10000, NULL,  \
      NULL, "completed checkpoints kept; older ones are deleted")                                  \
    X(STATE_CHECKPOINTS_DIR, "state.checkpoints.dir", STRING, NULL, 0, 0, NULL, NULL,              \
      "folder of checkpoint data and metadata, shared by the JobManager and every TaskManager "    \
      "(default: spate-checkpoints under the first io.tmp.dirs)")                                  \
    X(STATE_SAVEPOINTS_DIR, "state.savepoints.dir", STRING, NULL, 0, 0, NULL, NULL,                \
      "default folder for savepoints")                                                             \
    X(STATE_BACKEND_TYPE, "state.backend.type", ENUM, "hashmap", 0, 0, "hashmap|rocksdb",          \
      "state.backend",                                                                             \
      "where keyed state lives: the TaskManager's heap, or RocksDB on local disk (a plugin)")      \
    X(STATE_BACKEND_ROCKSDB_LOCALDIR, "state.backend.rocksdb.localdir", STRING, NULL, 0, 0, NULL,  \
      NULL,                                                                                        \
      "folder of RocksDB's working folders, one per operator instance (default: io.tmp.dirs)")     \
    X(STATE_BACKEND_ROCKSDB_BLOCK_CACHE_SIZE, "state.backend.rocksdb.block.cache-size", MEMORY,    \
      "64 mb", 0, CFG_NOLIMIT_HI, NULL, NULL, "block cache of each RocksDB instance")              \
    X(STATE_BACKEND_ROCKSDB_WRITEBUFFER_SIZE, "state.backend.rocksdb.writebuffer.size", MEMORY,    \
      "16 mb", 0, CFG_NOLIMIT_HI, NULL, NULL,                                                      \
      "memtable of each state (column family) of a RocksDB instance")                              \
    X(TASKMANAGER_MEMORY_MANAGED_SIZE, "taskmanager.memory.managed.size", MEMORY, "512 mb",        \
      CFG_MB, CFG_NOLIMIT_HI, NULL, NULL,                                                          \
      "memory of a TaskManager that RocksDB state uses, divided evenly among its slots")           \
    X(STATE_BACKEND_ROCKSDB_MEMORY_MANAGED, "state.backend.rocksdb.memory.managed", BOOL, "true",  \
      0, 0, NULL, NULL,                                                                            \
      "the RocksDB instances of a slot share one block cache and write buffer manager within "     \
      "the slot's managed memory (block.cache-size and writebuffer.size then do not apply)")       \
    X(STATE_BACKEND_ROCKSDB_MEMORY_WRITE_BUFFER_RATIO,                                             \
      "state.backend.rocksdb.memory.write-buffer-ratio", DOUBLE, "0.5", 0, 1, NULL, NULL,          \
      "managed memory: the fraction that memtables (write buffers) may take")                      \
    X(STATE_BACKEND_ROCKSDB_MEMORY_HIGH_PRIO_POOL_RATIO,                                           \
      "state.backend.rocksdb.memory.high-prio-pool-ratio", DOUBLE, "0.1", 0, 1, NULL, NULL,        \
      "managed memory: the fraction of the block cache kept for index and filter blocks")          \
    X(STATE_BACKEND_ROCKSDB_COMPACTION_STYLE, "state.backend.rocksdb.compaction.style", ENUM,      \
      "LEVEL", 0, 0, "LEVEL|UNIVERSAL", NULL,                                                      \
      "RocksDB's compaction: LEVEL, or UNIVERSAL (tiered: incremental checkpoints upload less, "   \
      "reads go over more files)")                                                                 \
    X(STATE_BACKEND_ROCKSDB_TIMER_SERVICE_FACTORY, "state.backend.rocksdb.timer-service.factory",  \
      ENUM, "HEAP", 0, 0, "HEAP|ROCKSDB", NULL,                                                    \
      "where the RocksDB backend keeps timers: HEAP, or ROCKSDB (a column family, the head of "    \
      "each key group's timers cached)")                                                           \
    X(EXECUTION_CHECKPOINTING_INCREMENTAL, "execution.checkpointing.incremental", BOOL, "false",   \
      0, 0, NULL, "state.backend.incremental",                                                     \
      "RocksDB checkpoints upload only the files that are new since the last completed one")       \
    /* high availability */                                                                        \
    X(HIGH_AVAILABILITY_TYPE, "high-availability.type", ENUM, "none", 0, 0,                        \
      "none|embedded|zookeeper", "high-availability", "high-availability services")                \
    X(HIGH_AVAILABILITY_ZOOKEEPER_QUORUM, "high-availability.zookeeper.quorum", STRING, NULL, 0,   \
      0, NULL, NULL, "ZooKeeper servers, host:port,host:port")                                     \
    X(HIGH_AVAILABILITY_ZOOKEEPER_PATH_ROOT, "high-availability.zookeeper.path.root", STRING,      \
      "/flink", 0, 0, NULL, NULL, "znode under which every cluster keeps its HA data")             \
    X(HIGH_AVAILABILITY_CLUSTER_ID, "high-availability.cluster-id", STRING, "/default", 0, 0,      \
      NULL, NULL, "this cluster's znode under the root and folder under the storage directory")    \
    X(HIGH_AVAILABILITY_STORAGE_DIR, "high-availability.storageDir", STRING, NULL, 0, 0, NULL,     \
      NULL, "folder of job graphs and checkpoint pointers' data (ZooKeeper holds pointers)")       \
    X(HIGH_AVAILABILITY_ZOOKEEPER_SESSION_TIMEOUT,                                                 \
      "high-availability.zookeeper.client.session-timeout", DURATION, "6 s", 1, CFG_NOLIMIT_HI,    \
      NULL, NULL, "ZooKeeper session timeout (the server may grant another)")                      \
    X(HIGH_AVAILABILITY_ZOOKEEPER_CONNECTION_TIMEOUT,                                              \
      "high-availability.zookeeper.client.connection-timeout", DURATION, "15 s", 1,                \
      CFG_NOLIMIT_HI, NULL, NULL, "wait for the first ZooKeeper connection, per attempt")          \
    X(HIGH_AVAILABILITY_ZOOKEEPER_RETRY_WAIT, "high-availability.zookeeper.client.retry-wait",     \
      DURATION, "5 s", 0, CFG_NOLIMIT_HI, NULL, NULL,                                              \
      "pause between connection attempts (doubling) and before retrying a failed operation")       \
    X(HIGH_AVAILABILITY_ZOOKEEPER_MAX_RETRY_ATTEMPTS,                                              \
      "high-availability.zookeeper.client.max-retry-attempts", INT, "3", 0, 1000, NULL, NULL,      \
      "connection attempts after the first before a process gives up")                             \
    X(JOB_RESULT_STORE_STORAGE_PATH, "job-result-store.storage-path", STRING, NULL, 0, 0, NULL,    \
      NULL,                                                                                        \
      "folder of finished jobs' results (default: <storageDir>/job-result-store/<cluster-id>)")    \
    /* logging */                                                                                  \
    X(LOG_LEVEL, "log.level", ENUM, "info", 0, 0, "trace|debug|info|warn|error|off", NULL,         \
      "log threshold (SPATE_LOG_LEVEL overrides it)")                                              \
    X(ENV_LOG_DIR, "env.log.dir", STRING, "log", 0, 0, NULL, NULL,                                 \
      "folder of the per-process log files of the cluster processes")                              \
    X(LOG_FILE, "log.file", STRING, NULL, 0, 0, NULL, NULL,                                        \
      "file a JobManager or TaskManager logs to, appending (default: standard error)")             \
    X(LOG_FILE_MAX_SIZE, "log.file.max-size", MEMORY, "100 mb", 0, CFG_NOLIMIT_HI, NULL, NULL,     \
      "log.file rolls over at this size into log.file.1 ... .10, the oldest dropped (0: never)")   \
    X(ENV_SSH_OPTS, "env.ssh.opts", STRING, "", 0, 0, NULL, NULL,                                  \
      "options of the ssh command start-cluster.sh and stop-cluster.sh run on remote hosts")

enum config_option_id {
#define CONFIG_OPTION_ENUM(name, ...) CONFIG_##name,
    CONFIG_OPTIONS(CONFIG_OPTION_ENUM)
#undef CONFIG_OPTION_ENUM
        CONFIG_OPTION_COUNT
};

extern const struct config_option config_options[CONFIG_OPTION_COUNT];

#define CFG(name) (&config_options[CONFIG_##name])

/* The known option named key (or whose fallback key it is), or NULL. */
const struct config_option *config_option_find(const char *key);
const char *config_type_name(enum config_type type);

#endif

/* Structures shared inside src/network (SQLite's btreeInt.h idea): result
 * partitions and their readers, input gates and channels, connections (their
 * server and client sides) and the network environment. Each field says who
 * may touch it. */
#ifndef SPATE_NETWORK_NET_INT_H
#define SPATE_NETWORK_NET_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <uv.h>

#include "core/hmap.h"
#include "core/log.h"
#include "core/mailbox.h"
#include "core/notifier.h"
#include "core/tls.h"
#include "metrics/task_metrics.h"
#include "network/buffer.h"
#include "network/input_gate.h"
#include "network/net_env.h"
#include "network/partition_id.h"
#include "network/protocol.h"
#include "network/result_partition.h"
#include "rpc/handshake.h"

#define NET_LOG "network"

/* ---- commands to the network I/O thread (its mailbox) ---- */

enum net_cmd_kind {
    NET_CMD_READER_AVAILABLE, /* a subpartition of a remote reader has data */
    NET_CMD_ANNOUNCE_CREDIT,  /* a remote channel got buffers back */
    NET_CMD_GATE_START,       /* request a gate's remote channels */
    NET_CMD_GATE_DETACH,      /* forget a gate's remote channels; then post done */
    NET_CMD_STOP,
};

struct net_cmd {
    struct mpsc_node node;
    enum net_cmd_kind kind;
};

struct net_cmd_gate {
    struct net_cmd base;
    struct input_gate *gate;
    uv_sem_t *done; /* DETACH */
};

void net_env_post(struct net_env *env, struct net_cmd *cmd);

/* ---- result partitions ---- */

/* Who reads a subpartition: a local input channel or a remote reader on the
 * network I/O thread. notify runs with the subpartition's lock held, when
 * the queue goes from empty to non-empty or the partition fails: it must not
 * block nor take that lock. */
struct subpartition_reader {
    void (*notify)(struct subpartition_reader *reader);
};

struct result_subpartition {
    pthread_mutex_t lock; /* guards every field below but the constants */
    struct result_partition *partition;
    uint32_t index;
    struct net_buffer *head, *tail;
    uint32_t backlog; /* data buffers queued */
    struct subpartition_reader *reader;
    bool attached; /* a reader came: a second one is refused */
    bool ended;    /* end-of-partition queued */
    bool consumed; /* end-of-partition taken by the reader */
};

struct result_partition {
    struct result_partition_id id;
    struct net_env *env;
    uint32_t num_subpartitions;
    struct result_subpartition *subs;
    struct local_buffer_pool *pool;
    _Atomic int refs; /* producer, partition manager, each attached reader */
    /* 0, or the code of the failure; release store after error is written,
     * so that an acquire load that sees it may read error. */
    _Atomic int failed;
    pthread_mutex_t lock; /* guards error, consumed, registered, producer */
    char error[SPATE_ERROR_MESSAGE_MAX];
    uint32_t consumed;
    bool registered;
    bool finished;
    struct notifier *producer;
};

/* The subpartition's next buffer for its reader: 1 with *out (the reader's
 * now), 0 when there is none (or only data and allow_data is false), or the
 * partition's failure. *backlog: data buffers left; *more: something left;
 * *next_is_event: the next is an event (sendable without credit). */
int result_subpartition_poll(struct result_subpartition *sp, bool allow_data,
                             struct net_buffer **out, uint32_t *backlog, bool *more,
                             bool *next_is_event, spate_error *err);
void result_subpartition_add(struct result_subpartition *sp, struct net_buffer *buf);
/* Finds partition id's subpartition and attaches reader (notified at once if
 * data waits). SPATE_ENOENT when no such partition is registered. */
int result_partition_manager_attach(struct net_env *env, const struct result_partition_id *id,
                                    uint32_t subpartition, struct subpartition_reader *reader,
                                    struct result_subpartition **out, spate_error *err);
/* Detaches the reader. Unless it took the end of the partition, the partition
 * fails with why. Drops the reader's reference. */
void result_subpartition_release_reader(struct result_subpartition *sp, int code, const char *why);
void result_partition_fail(struct result_partition *rp, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The producer's end-of-partition events are queued (record_writer_finish). */
void result_partition_mark_finished(struct result_partition *rp);
/* The partition manager's table and lock, in the environment's storage. */
void result_partition_manager_init(struct net_env *env);
void result_partition_manager_release(struct net_env *env);
/* Registered partitions. */
size_t result_partition_manager_count(struct net_env *env);
/* Drops every registered partition (environment shut-down). */
void result_partition_manager_clear(struct net_env *env);

/* ---- input gates and channels ---- */

enum channel_kind { CHANNEL_UNSET, CHANNEL_LOCAL, CHANNEL_REMOTE };

/* Remote channel states, the network I/O thread's. */
enum remote_state {
    REMOTE_IDLE,
    REMOTE_CONNECTING, /* waiting for the connection's handshake */
    REMOTE_REQUESTED,  /* request sent, buffers may flow */
    REMOTE_BACKOFF,    /* partition not found yet: asks again at retry_at_ms */
    REMOTE_DONE,       /* end of partition received, or failed */
};

struct net_conn;

struct input_channel {
    struct input_gate *gate;
    uint32_t index;
    enum channel_kind kind;
    struct result_partition_id partition;
    uint32_t subpartition;

    /* gate lock */
    bool queued; /* in the gate's available queue */
    struct input_channel *avail_next;
    int error; /* 0 or why the channel failed */
    char *error_msg;

    /* task thread */
    bool ended;
    bool blocked; /* checkpoint alignment: not polled until resumed */

    /* local: the task thread's */
    struct subpartition_reader reader;
    struct result_subpartition *sp;
    uint64_t retry_at_ns; /* 0: not waiting */
    uint64_t backoff_ms;

    /* remote */
    char *host;
    int port;
    char peer[80]; /* host:port */
    uint32_t num_exclusive;
    /* gate lock: */
    struct net_buffer *recv_head, *recv_tail; /* received, for the task */
    struct net_buffer *free_head;             /* to receive into (credit given) */
    uint32_t num_free;
    uint32_t unannounced; /* buffers that came back since the last ADD_CREDIT */
    int32_t backlog;      /* the sender's, as of its last buffer */
    bool waiting_floating;
    struct input_channel *floating_next;
    bool closing; /* the gate is being freed */
    /* any thread, with the gate lock held to set; network thread clears */
    struct net_cmd credit_cmd;
    _Atomic bool credit_queued;
    /* network I/O thread: */
    enum remote_state rstate;
    struct net_conn *conn;
    uint32_t receiver;
    uint32_t expected_seq;
    uint64_t retry_at_ms;
    uint64_t rbackoff_ms;
    uint64_t first_request_ms;
    struct input_channel *rnext; /* the connection's pending list or the retry list */
    struct hmap_node conn_node;  /* in conn->channels, by receiver, while conn is set */
};

struct input_gate {
    struct net_env *env;
    struct notifier *notifier;
    struct task_io_metrics *metrics;
    uint32_t num_channels;
    struct input_channel *channels;
    pthread_mutex_t lock; /* guards the available queue, floating buffers and the
                             channels' fields marked "gate lock" */
    struct input_channel *avail_head, *avail_tail;
    struct net_buffer *floating;
    uint32_t floating_total;
    struct input_channel *floating_waiters;
    /* task thread */
    uint32_t ended;
    uint32_t num_remote;
    uint32_t exclusive_total;
    bool started;
};

/* The network thread's side of remote channels (input_gate.c). */
void input_gate_deliver(struct input_channel *ch, struct net_buffer *buf);
/* Takes a buffer to receive into; NULL when the channel has none (the sender
 * exceeded its credit). */
struct net_buffer *input_gate_take_free(struct input_channel *ch);
/* Notes the sender's backlog, assigns floating buffers; returns the credit to
 * announce now (and forgets it). */
uint32_t input_gate_on_backlog(struct input_channel *ch, int32_t backlog);
/* Credit that came back since the last announcement (and forgets it). */
uint32_t input_gate_take_unannounced(struct input_channel *ch);
/* At (re)request: every free buffer is credit; forgets unannounced. */
uint32_t input_gate_initial_credit(struct input_channel *ch);
/* Fails the channel with a message; the task sees it on its next poll. */
void input_gate_fail_channel(struct input_channel *ch, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- connections (net_conn.c); the network I/O thread's ---- */

#define NET_STAGE_SIZE 4096
/* What a read of a buffer's body takes past it, into its segment's tail
 * room: the next frame's header and the start of its body, copied to the
 * stage. */
#define NET_RX_TAIL 512
_Static_assert(NET_RX_TAIL <= SEGMENT_TAIL_ROOM && NET_RX_TAIL <= NET_STAGE_SIZE, "rx tail");
#define NET_COMPRESS_SLOTS 4

/* CONN_CHALLENGE: a client waits for the server's challenge; CONN_HANDSHAKE:
 * a server waits for the hello, a client for the reply (rpc/handshake.h). */
enum conn_state { CONN_CONNECTING, CONN_CHALLENGE, CONN_HANDSHAKE, CONN_ACTIVE, CONN_CLOSING };
enum rx_mode { RX_STAGE, RX_DIRECT, RX_DISCARD };

struct net_reader;

struct compress_slot {
    uv_write_t req;
    uint8_t header[NET_FRAME_HEADER_SIZE];
    uint8_t *data;
    uint32_t len;
    bool busy;
    struct net_conn *conn;
};

/* One TCP connection: to a remote consumer (is_server: its partition
 * requests, our buffers) or to a remote producer (our channels' requests,
 * its buffers). */
struct net_conn {
    uv_tcp_t tcp;
    struct tls_stream *tls; /* security.ssl.internal; NULL: plaintext */
    struct net_env *env;
    struct net_conn *next;
    bool is_server;
    enum conn_state state;
    char peer[80];
    /* receiving */
    uint8_t stage[NET_STAGE_SIZE];
    uint32_t stage_len;
    enum rx_mode rx_mode;
    struct net_frame rx;
    uint8_t *rx_dst;
    uint32_t rx_have;
    uint32_t rx_tail; /* bytes past the body rx_dst may take (a segment's tail room) */
    struct net_buffer *rx_buf;
    struct input_channel *rx_channel;
    uint8_t *scratch; /* compressed bodies, discarded bodies */
    uint32_t scratch_size;
    /* sending */
    size_t bytes_in_flight;
    struct handshake_nonces nonces;
    uint8_t hs_out[HANDSHAKE_SIZE]; /* the challenge (server) or the hello (client) */
    uv_write_t hs_req;
    uint8_t hs_reply[HANDSHAKE_SIZE]; /* server: the reply */
    uint64_t accepted_ms;             /* server: when accepted (the handshake's deadline) */
    uv_write_t hs_reply_req;
    bool close_after_handshake;
    /* server side (net_server.c) */
    struct hmap readers; /* struct net_reader by receiver */
    struct net_reader *ready_head, *ready_tail;
    struct compress_slot slots[NET_COMPRESS_SLOTS];
    /* client side (net_client.c) */
    uv_connect_t connect_req;
    struct hmap channels;          /* struct input_channel (conn_node) by receiver */
    struct input_channel *pending; /* waiting for the handshake */
    uint32_t next_receiver;
};

/* Writes on c as uv_write does; under TLS the bytes are encrypted first
 * (on this thread, the I/O thread). The plaintext path is uv_write itself. */
static inline int
net_conn_write(struct net_conn *c, uv_write_t *req, const uv_buf_t bufs[], unsigned int nbufs,
               uv_write_cb cb)
{
    if (c->tls != NULL)
        return tls_stream_write(c->tls, req, bufs, nbufs, cb);
    return uv_write(req, (uv_stream_t *)&c->tcp, bufs, nbufs, cb);
}

/* A connection in env->conns, its socket open, nothing read yet. */
struct net_conn *net_conn_new(struct net_env *env, bool is_server);
/* Reads frames (net_conn.c) and hands them to the side's handlers. */
void net_conn_read_start(struct net_conn *c);
/* Sends a small control frame (requests, credit, errors) on an active
 * connection. */
void net_conn_send_ctl(struct net_conn *c, struct net_frame *f, const void *body, uint32_t len);
void net_conn_send_error(struct net_conn *c, uint32_t receiver, int code, const char *msg);
/* Closes c (once): its readers' partitions or its channels fail with why;
 * c is freed in its close callback. */
void net_conn_close(struct net_conn *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A numeric address or a host name (resolved on the calling thread). */
int net_conn_resolve(const char *host, int port, struct sockaddr_storage *ss);

/* The server side (net_server.c): remote consumers' readers. */
void net_server_on_connection(uv_stream_t *server, int status);
/* Each second: closes accepted connections past their handshake deadline. */
void net_server_sweep(uv_timer_t *t);
void net_server_handshake(struct net_conn *c, const uint8_t *hello);
void net_server_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body);
/* A READER_AVAILABLE command from the mailbox. */
void net_server_reader_available(struct net_cmd *cmd);
/* c closes: every reader's consumer is gone. */
void net_server_conn_closing(struct net_conn *c, const char *why);

/* The client side (net_client.c): this TaskManager's remote channels. */
void net_client_challenge(struct net_conn *c, const uint8_t *challenge);
void net_client_handshake(struct net_conn *c, const uint8_t *reply);
void net_client_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body);
/* A BUFFER header arrived: where its body goes; its body is complete. */
void net_client_begin_buffer(struct net_conn *c, const struct net_frame *f);
void net_client_end_buffer(struct net_conn *c);
/* c closes: its channels fail. */
void net_client_conn_closing(struct net_conn *c, const char *why);
/* Requests the gate's remote channels / forgets them. */
void net_client_gate_start(struct net_env *env, struct input_gate *g);
void net_client_gate_detach(struct input_gate *g);
/* An ANNOUNCE_CREDIT command from the mailbox. */
void net_client_announce_credit(struct input_channel *ch);

/* ---- the environment ---- */

struct net_env {
    struct net_env_config cfg; /* strings owned */
    struct network_buffer_pool *pool;
    struct handshake_params hs;
    int port;
    uv_loop_t loop;
    uv_thread_t thread;
    struct mailbox mailbox;
    uv_tcp_t server;
    uv_timer_t retry_timer;
    uv_timer_t sweep_timer;        /* each second: handshakes past their deadline */
    struct log_ratelimit refusals; /* lines about peers' bad input and refusals */
    pthread_mutex_t pm_lock;       /* result_partition.c's: guards the partition manager's table */
    struct result_partition **parts;
    size_t num_parts, parts_cap;
    /* network I/O thread */
    struct net_conn *conns;
    struct input_channel *retry_list;
    bool stopping;
    uint64_t activity; /* events handled: the loop spins while it grows */
    /* stats: written by the network thread, read anywhere (relaxed) */
    _Atomic size_t n_client, n_server;
    _Atomic uint64_t n_dropped;
};

/* A task thread: forgets the gate's remote channels on the I/O thread, and
 * waits until it has. */
void net_env_gate_detach(struct net_env *env, struct input_gate *g);

#endif

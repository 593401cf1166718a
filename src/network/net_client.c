/* The client side of data connections (net_int.h): this TaskManager's
 * remote input channels request their partitions from the producers' data
 * ports (one connection per address), ask again with back-off while a
 * partition is not there yet, receive buffers straight into the channels'
 * buffers and announce credit. Runs on the network I/O thread. */
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "network/net_int.h"

static struct input_channel *
channel_find(struct net_conn *c, uint32_t receiver)
{
    struct hmap_node *node;

    HMAP_FOR_EACH_WITH_HASH(node, hmap_hash_u64(receiver), &c->channels)
    {
        struct input_channel *ch = container_of(node, struct input_channel, conn_node);

        if (ch->receiver == receiver)
            return ch;
    }
    return NULL;
}

/* ---- channels ---- */

static void
retry_list_remove(struct net_env *env, struct input_channel *ch)
{
    for (struct input_channel **p = &env->retry_list; *p != NULL; p = &(*p)->rnext) {
        if (*p == ch) {
            *p = ch->rnext;
            break;
        }
    }
}

static void
pending_remove(struct net_conn *c, struct input_channel *ch)
{
    for (struct input_channel **p = &c->pending; *p != NULL; p = &(*p)->rnext) {
        if (*p == ch) {
            *p = ch->rnext;
            break;
        }
    }
}

static void
channel_send_request(struct net_conn *c, struct input_channel *ch)
{
    struct net_frame f = { .type = NET_MSG_PARTITION_REQUEST,
                           .receiver = ch->receiver,
                           .a = ch->subpartition };
    uint8_t body[RESULT_PARTITION_ID_BYTES];

    f.b = (int32_t)input_gate_initial_credit(ch);
    memcpy(body, ch->partition.partition.bytes, ID_BYTES);
    memcpy(body + ID_BYTES, ch->partition.producer.bytes, ID_BYTES);
    ch->rstate = REMOTE_REQUESTED;
    ch->expected_seq = 0;
    net_conn_send_ctl(c, &f, body, sizeof body);
}

/* The channel is over on this connection (ended, failed, detached). */
static void
channel_forget(struct input_channel *ch)
{
    struct net_conn *c = ch->conn;

    if (ch->rstate == REMOTE_BACKOFF)
        retry_list_remove(c ? c->env : ch->gate->env, ch);
    if (c != NULL) {
        if (ch->rstate == REMOTE_CONNECTING)
            pending_remove(c, ch);
        hmap_remove(&c->channels, &ch->conn_node);
        if (c->rx_channel == ch) {
            /* Mid-frame: the rest of the body is read and dropped. */
            if (c->rx_buf != NULL)
                net_buffer_recycle(c->rx_buf);
            c->rx_buf = NULL;
            c->rx_channel = NULL;
            if (c->rx_mode == RX_DIRECT)
                c->rx_mode = RX_DISCARD;
        }
    }
    ch->rstate = REMOTE_DONE;
    ch->conn = NULL;
}

static void
channel_fail(struct input_channel *ch, int code, const char *why)
{
    const char *peer = ch->peer;

    input_gate_fail_channel(ch, code, "partition %s subpartition %u from the producer at %s: %s",
                            result_partition_id_str(&ch->partition).s, ch->subpartition, peer, why);
    channel_forget(ch);
}

static void retry_timer_arm(struct net_env *env);

static void
client_on_not_found(struct net_conn *c, struct input_channel *ch)
{
    struct net_env *env = c->env;
    uint64_t now = clock_mono_ms();

    ch->rbackoff_ms = ch->rbackoff_ms == 0 ? env->cfg.backoff_initial_ms : 2 * ch->rbackoff_ms;
    if (ch->rbackoff_ms > env->cfg.backoff_max_ms) {
        char why[160];

        snprintf(why, sizeof why, "partition not found (gave up after %llu ms of retries)",
                 (unsigned long long)(now - ch->first_request_ms));
        channel_fail(ch, SPATE_ENOENT, why);
        return;
    }
    ch->rstate = REMOTE_BACKOFF;
    ch->retry_at_ms = now + ch->rbackoff_ms;
    ch->rnext = env->retry_list;
    env->retry_list = ch;
    retry_timer_arm(env);
}

static void
retry_timer_fired(uv_timer_t *t)
{
    struct net_env *env = t->data;
    uint64_t now = clock_mono_ms();
    struct input_channel **p = &env->retry_list;

    while (*p != NULL) {
        struct input_channel *ch = *p;

        if (ch->retry_at_ms > now) {
            p = &ch->rnext;
            continue;
        }
        *p = ch->rnext;
        if (ch->conn != NULL && ch->conn->state == CONN_ACTIVE)
            channel_send_request(ch->conn, ch);
    }
    retry_timer_arm(env);
}

static void
retry_timer_arm(struct net_env *env)
{
    uint64_t next = UINT64_MAX, now = clock_mono_ms();

    if (env->stopping)
        return;
    for (struct input_channel *ch = env->retry_list; ch != NULL; ch = ch->rnext)
        next = MIN(next, ch->retry_at_ms);
    if (next == UINT64_MAX)
        uv_timer_stop(&env->retry_timer);
    else
        uv_timer_start(&env->retry_timer, retry_timer_fired, next > now ? next - now : 0, 0);
}

/* ---- receiving ---- */

/* A BUFFER header arrived: where its body goes. */
void
net_client_begin_buffer(struct net_conn *c, const struct net_frame *f)
{
    struct input_channel *ch = channel_find(c, f->receiver);

    c->rx = *f;
    c->rx_have = 0;
    c->rx_tail = 0;
    c->rx_buf = NULL;
    c->rx_channel = NULL;
    c->rx_mode = RX_DIRECT;
    if (ch == NULL || ch->rstate != REMOTE_REQUESTED) {
        c->rx_mode = RX_DISCARD; /* a channel that went away: the frame was in flight */
        return;
    }
    if (f->a != ch->expected_seq) {
        net_conn_close(c, SPATE_EPROTO,
                       "dropping data connection to %s: buffer %u of receiver %u "
                       "out of order (expected %u)",
                       c->peer, f->a, f->receiver, ch->expected_seq);
        return;
    }
    ch->expected_seq++;
    c->rx_channel = ch;
    if (f->flags & NET_FLAG_EVENT) {
        c->rx_buf = net_buffer_new_heap(f->length);
        c->rx_dst = c->rx_buf->data;
    } else if (f->flags & NET_FLAG_COMPRESSED) {
        c->rx_dst = c->scratch;
    } else {
        c->rx_buf = input_gate_take_free(ch);
        if (c->rx_buf == NULL) {
            net_conn_close(c, SPATE_EPROTO,
                           "dropping data connection to %s: receiver %u got a "
                           "buffer without credit",
                           c->peer, f->receiver);
            return;
        }
        c->rx_dst = c->rx_buf->data;
        if (c->rx_buf->seg != NULL && c->rx_buf->data == c->rx_buf->seg->data)
            c->rx_tail = NET_RX_TAIL;
    }
}

void
net_client_end_buffer(struct net_conn *c)
{
    struct input_channel *ch = c->rx_channel;
    struct net_buffer *buf = c->rx_buf;
    const struct net_frame *f = &c->rx;
    bool eop = false;

    c->rx_mode = RX_STAGE;
    c->rx_buf = NULL;
    c->rx_channel = NULL;
    if (ch == NULL)
        return; /* discarded */
    if (f->flags & NET_FLAG_COMPRESSED) {
        int n;

        buf = input_gate_take_free(ch);
        if (buf == NULL) {
            net_conn_close(c, SPATE_EPROTO,
                           "dropping data connection to %s: receiver %u got a "
                           "buffer without credit",
                           c->peer, f->receiver);
            return;
        }
        n = LZ4_decompress_safe((const char *)c->scratch, (char *)buf->data, (int)f->length,
                                (int)buf->capacity);
        if (n < 0 || (uint32_t)n != f->c) {
            net_buffer_recycle(buf);
            net_conn_close(c, SPATE_EPROTO,
                           "dropping data connection to %s: a compressed buffer "
                           "does not decompress to its %u bytes",
                           c->peer, f->c);
            return;
        }
    }
    buf->size = (f->flags & NET_FLAG_COMPRESSED) ? f->c : f->length;
    if (f->flags & NET_FLAG_EVENT) {
        buf->type = NET_BUFFER_EVENT;
        eop = net_buffer_event_type(buf) == NET_EVENT_END_OF_PARTITION;
    } else {
        buf->type = NET_BUFFER_DATA;
    }
    input_gate_deliver(ch, buf);
    if (eop) {
        channel_forget(ch); /* the producer released its reader when it sent this */
    } else if (!(f->flags & NET_FLAG_EVENT)) {
        uint32_t credit = input_gate_on_backlog(ch, f->b);

        if (credit > 0) {
            struct net_frame cf = { .type = NET_MSG_ADD_CREDIT,
                                    .receiver = ch->receiver,
                                    .a = credit };

            net_conn_send_ctl(c, &cf, NULL, 0);
        }
    }
}

void
net_client_on_frame(struct net_conn *c, const struct net_frame *f, const uint8_t *body)
{
    struct input_channel *ch = channel_find(c, f->receiver);
    char msg[NET_ERROR_MAX + 1];

    switch (f->type) {
    case NET_MSG_ERROR:
        memcpy(msg, body, f->length);
        msg[f->length] = '\0';
        if (f->receiver == NET_RECEIVER_NONE) {
            net_conn_close(c, SPATE_EREMOTE, "the producer at %s closed the connection: %s",
                           c->peer, msg);
        } else if (ch != NULL) {
            int code = f->a > 0 && f->a < 5000 ? -(int)f->a : SPATE_EREMOTE;

            channel_fail(ch, code, msg);
        }
        break;
    case NET_MSG_PARTITION_NOT_FOUND:
        if (ch != NULL && ch->rstate == REMOTE_REQUESTED)
            client_on_not_found(c, ch);
        break;
    default:
        break;
    }
}

/* ---- connections to remote producers ---- */

void
net_client_challenge(struct net_conn *c, const uint8_t *challenge)
{
    spate_error err;
    uv_buf_t buf;

    if (handshake_answer_challenge(&c->env->hs, challenge, &c->nonces, c->hs_out, &err) != 0) {
        net_conn_close(c, SPATE_EPROTO, "data connection to %s: %s", c->peer, err.message);
        return;
    }
    c->state = CONN_HANDSHAKE;
    buf = uv_buf_init((char *)c->hs_out, HANDSHAKE_SIZE);
    net_conn_write(c, &c->hs_req, &buf, 1, NULL);
}

void
net_client_handshake(struct net_conn *c, const uint8_t *reply)
{
    spate_error err;

    if (handshake_check_reply(&c->env->hs, &c->nonces, reply, &err) != 0) {
        net_conn_close(c, SPATE_EPROTO, "data connection to %s: %s", c->peer, err.message);
        return;
    }
    c->state = CONN_ACTIVE;
    SPATE_LOG_DEBUG(NET_LOG, "data connection to %s is up", c->peer);
    while (c->pending != NULL) {
        struct input_channel *ch = c->pending;

        c->pending = ch->rnext;
        channel_send_request(c, ch);
    }
}

static void
client_on_connect(uv_connect_t *req, int status)
{
    struct net_conn *c = req->handle->data;
    if (status == UV_ECANCELED || c->state == CONN_CLOSING)
        return;
    if (status < 0) {
        net_conn_close(c, SPATE_ECONNLOST, "cannot connect to %s: %s", c->peer,
                       uv_strerror(status));
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->state = CONN_CHALLENGE; /* the server speaks first */
    net_conn_read_start(c);
}

static struct net_conn *
client_conn_get(struct net_env *env, struct input_channel *ch)
{
    struct sockaddr_storage ss;
    struct net_conn *c;
    int rc;

    for (c = env->conns; c != NULL; c = c->next)
        if (!c->is_server && c->state != CONN_CLOSING && strcmp(c->peer, ch->peer) == 0)
            return c;
    c = net_conn_new(env, false);
    snprintf(c->peer, sizeof c->peer, "%s", ch->peer);
    c->state = CONN_CONNECTING;
    rc = net_conn_resolve(ch->host, ch->port, &ss);
    if (rc == 0)
        rc = uv_tcp_connect(&c->connect_req, &c->tcp, (struct sockaddr *)&ss, client_on_connect);
    if (rc != 0) {
        net_conn_close(c, SPATE_ECONNLOST, "cannot connect to %s: %s", c->peer,
                       rc == SPATE_ENOENT ? "unknown host" : uv_strerror(rc));
        return NULL;
    }
    return c;
}

static void
channel_start(struct net_env *env, struct input_channel *ch)
{
    struct net_conn *c = client_conn_get(env, ch);

    if (c == NULL) {
        channel_fail(ch, SPATE_ECONNREFUSED, "cannot connect");
        return;
    }
    ch->conn = c;
    ch->receiver = c->next_receiver++;
    if (c->next_receiver == NET_RECEIVER_NONE)
        c->next_receiver = 0;
    ch->first_request_ms = clock_mono_ms();
    ch->rbackoff_ms = 0;
    if (c->state == CONN_ACTIVE) {
        hmap_insert(&c->channels, &ch->conn_node, hmap_hash_u64(ch->receiver));
        channel_send_request(c, ch);
        return;
    }
    hmap_insert(&c->channels, &ch->conn_node, hmap_hash_u64(ch->receiver));
    ch->rstate = REMOTE_CONNECTING;
    ch->rnext = c->pending;
    c->pending = ch;
}

void
net_client_gate_start(struct net_env *env, struct input_gate *g)
{
    for (uint32_t i = 0; i < g->num_channels; i++)
        if (g->channels[i].kind == CHANNEL_REMOTE)
            channel_start(env, &g->channels[i]);
}

static void
channel_detach(struct input_channel *ch)
{
    struct net_conn *c = ch->conn;

    if (c != NULL && c->state == CONN_ACTIVE &&
        (ch->rstate == REMOTE_REQUESTED || ch->rstate == REMOTE_BACKOFF)) {
        struct net_frame f = { .type = NET_MSG_CANCEL_REQUEST, .receiver = ch->receiver };

        net_conn_send_ctl(c, &f, NULL, 0);
    }
    if (ch->rstate != REMOTE_DONE && ch->rstate != REMOTE_IDLE)
        channel_forget(ch);
}

void
net_client_gate_detach(struct input_gate *g)
{
    for (uint32_t i = 0; i < g->num_channels; i++)
        if (g->channels[i].kind == CHANNEL_REMOTE)
            channel_detach(&g->channels[i]);
}

void
net_client_announce_credit(struct input_channel *ch)
{
    uint32_t credit = input_gate_take_unannounced(ch);

    if (credit > 0 && ch->rstate == REMOTE_REQUESTED && ch->conn != NULL) {
        struct net_frame f = { .type = NET_MSG_ADD_CREDIT, .receiver = ch->receiver, .a = credit };

        net_conn_send_ctl(ch->conn, &f, NULL, 0);
    }
}

void
net_client_conn_closing(struct net_conn *c, const char *why)
{
    struct hmap_node *node;

    while (c->pending != NULL) {
        struct input_channel *ch = c->pending;

        c->pending = ch->rnext;
        ch->rstate = REMOTE_IDLE; /* off the pending list already */
        channel_fail(ch, SPATE_ECONNLOST, why);
    }
    /* A failed channel leaves the map (channel_forget). */
    while ((node = hmap_first(&c->channels)) != NULL) {
        struct input_channel *ch = container_of(node, struct input_channel, conn_node);

        SPATE_ASSERT(ch->conn == c);
        channel_fail(ch, SPATE_ECONNLOST, why);
    }
    if (c->rx_buf != NULL)
        net_buffer_recycle(c->rx_buf);
    c->rx_buf = NULL;
}

/* Intrusive circular doubly linked lists (the Linux kernel's and libuv's
 * QUEUE): a node lives inside the object it links. Header only; a list is
 * owned by whoever owns its head and is not thread-safe. */
#ifndef SPATE_CORE_LIST_H
#define SPATE_CORE_LIST_H

#include <stdbool.h>
#include <stddef.h>

struct list_node {
    struct list_node *prev, *next;
};

static inline void
list_init(struct list_node *head)
{
    head->prev = head->next = head;
}

static inline bool
list_empty(const struct list_node *head)
{
    return head->next == head;
}

/* A node that was removed with list_remove (or never added) is unlinked. */
static inline bool
list_linked(const struct list_node *node)
{
    return node->next != NULL && node->next != node;
}

static inline void
list_insert_before(struct list_node *pos, struct list_node *node)
{
    node->prev = pos->prev;
    node->next = pos;
    pos->prev->next = node;
    pos->prev = node;
}

static inline void
list_push_back(struct list_node *head, struct list_node *node)
{
    list_insert_before(head, node);
}

static inline void
list_push_front(struct list_node *head, struct list_node *node)
{
    list_insert_before(head->next, node);
}

/* Unlinks node and leaves it pointing at itself, so a second remove is harmless. */
static inline void
list_remove(struct list_node *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
}

static inline struct list_node *
list_pop_front(struct list_node *head)
{
    struct list_node *n = head->next;

    if (n == head)
        return NULL;
    list_remove(n);
    return n;
}

static inline size_t
list_size(const struct list_node *head)
{
    size_t n = 0;

    for (const struct list_node *p = head->next; p != head; p = p->next)
        n++;
    return n;
}

#define list_entry(node, type, member) ((type *)((char *)(node)-offsetof(type, member)))

/* Iterates where the body may remove the current node. */
#define list_for_each_safe(pos, tmp, head)                           \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
         (pos) = (tmp), (tmp) = (pos)->next)

#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#endif

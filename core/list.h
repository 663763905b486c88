/* SPDX-License-Identifier: BSD-2-Clause */
/* core/list.h - intrusive doubly linked list, the kernel's list_head. */
#ifndef SEMD_LIST_H
#define SEMD_LIST_H

#include <stddef.h>

struct list_head {
	struct list_head *next, *prev;
};

#define LIST_HEAD_INIT(name) { &(name), &(name) }

#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first_entry(head, type, member) list_entry((head)->next, type, member)

#define list_for_each(pos, head) \
	for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

#define list_for_each_safe(pos, n, head) \
	for ((pos) = (head)->next, (n) = (pos)->next; (pos) != (head); \
	     (pos) = (n), (n) = (pos)->next)

/* Make an empty list. */
static inline void INIT_LIST_HEAD(struct list_head *h)
{
	h->next = h;
	h->prev = h;
}

static inline void list_insert_(struct list_head *e, struct list_head *prev,
    struct list_head *next)
{
	next->prev = e;
	e->next = next;
	e->prev = prev;
	prev->next = e;
}

/* Insert e right after head (stack order). */
static inline void list_add(struct list_head *e, struct list_head *head)
{
	list_insert_(e, head, head->next);
}

/* Insert e at the tail (queue order). */
static inline void list_add_tail(struct list_head *e, struct list_head *head)
{
	list_insert_(e, head->prev, head);
}

/* Unlink e and leave it pointing at itself, so list_empty(e) holds after. */
static inline void list_del_init(struct list_head *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	INIT_LIST_HEAD(e);
}

static inline int list_empty(const struct list_head *h)
{
	return h->next == h;
}

#endif

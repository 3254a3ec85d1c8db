/*
 * container_of.h — the struct holding a member, given a pointer to the
 * member: libuv handles and list links are embedded in their owners and
 * reached back with it.
 */
#ifndef CEP_CONTAINER_OF_H
#define CEP_CONTAINER_OF_H

#include <stddef.h>

#define container_of(ptr, type, member)                                        \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif

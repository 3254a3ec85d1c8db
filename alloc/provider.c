/*
 * provider.c — the counting wrappers around a physical-memory provider's
 * operations (alloc/provider.h). The implementations live in
 * provider_host.c and provider_cuda.c; counting here keeps both honest in
 * the same way.
 */
#include "alloc/provider.h"

int alloc_provider_reserve(struct alloc_provider *p, uint64_t *base, size_t *bytes)
{
	int ret = p->iface.reserve(p->context, base, bytes);

	if (ret)
		p->counters.failures++;
	return ret;
}

void alloc_provider_unreserve(struct alloc_provider *p, uint64_t base, size_t bytes)
{
	p->iface.unreserve(p->context, base, bytes);
}

int alloc_provider_create(struct alloc_provider *p, alloc_handle *out)
{
	int ret = p->iface.create(p->context, out);

	if (ret)
		p->counters.failures++;
	else
		p->counters.creates++;
	return ret;
}

void alloc_provider_release(struct alloc_provider *p, alloc_handle h)
{
	p->iface.release(p->context, h);
	p->counters.releases++;
}

int alloc_provider_map(struct alloc_provider *p, uint64_t va,
		       const alloc_handle *handles, size_t n)
{
	int ret = p->iface.map(p->context, va, handles, n);

	if (ret)
		p->counters.failures++;
	else
		p->counters.maps += n;
	return ret;
}

int alloc_provider_unmap(struct alloc_provider *p, uint64_t va, size_t n)
{
	int ret = p->iface.unmap(p->context, va, n);

	if (ret)
		p->counters.failures++;
	else
		p->counters.unmaps += n;
	return ret;
}

void alloc_provider_free(struct alloc_provider *p)
{
	if (p == NULL)
		return;
	p->iface.free(p->context);
}

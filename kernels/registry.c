/*
 * registry.c — the operator registry (kernels/registry.h): the families of
 * kernels/families.h gathered once into two sorted indexes, one of schemas
 * and one of kernels, searched by (domain, op_type) with a binary search.
 * Lookups that fail build the sentence that says why.
 */
#include "kernels/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Strong references on purpose: binaries link the daemon's core as a
 * static archive, and the linker takes an archive member only to resolve
 * a strong undefined symbol. Weak references link too, but then pull in no
 * family at all and the registry comes up empty ("unknown op MatMul").
 * A family's line in families.h therefore arrives with its file.
 */
#define OP_FAMILY(name) extern const struct op_family op_family_##name;
#include "kernels/families.h"
#undef OP_FAMILY

static const struct op_family *const families[] = {
#define OP_FAMILY(name) &op_family_##name,
#include "kernels/families.h"
#undef OP_FAMILY
};

/* Generous bounds: the whole ONNX operator set has under 200 operators. */
#define MAX_SCHEMAS 1024
#define MAX_KERNELS 4096

static const struct op_schema *schemas[MAX_SCHEMAS];
static const struct op_kernel *kernels[MAX_KERNELS];
static int n_schemas, n_kernels;
static pthread_once_t index_once = PTHREAD_ONCE_INIT;

static const char *norm_domain(const char *d)
{
	return d == NULL || strcmp(d, "ai.onnx") == 0 ? "" : d;
}

bool op_domain_equal(const char *a, const char *b)
{
	return strcmp(norm_domain(a), norm_domain(b)) == 0;
}

const char *op_domain_name(const char *domain)
{
	return norm_domain(domain)[0] ? domain : "ai.onnx";
}

static int key_cmp(const char *da, const char *oa, const char *db, const char *ob)
{
	int c = strcmp(norm_domain(da), norm_domain(db));

	return c ? c : strcmp(oa, ob);
}

static int schema_cmp(const void *a, const void *b)
{
	const struct op_schema *x = *(const struct op_schema *const *)a;
	const struct op_schema *y = *(const struct op_schema *const *)b;
	int c = key_cmp(x->domain, x->op_type, y->domain, y->op_type);

	return c ? c : x->since - y->since;
}

static int kernel_cmp(const void *a, const void *b)
{
	const struct op_kernel *x = *(const struct op_kernel *const *)a;
	const struct op_kernel *y = *(const struct op_kernel *const *)b;
	int c = key_cmp(x->domain, x->op_type, y->domain, y->op_type);

	return c ? c : x->since - y->since;
}

static void index_build(void)
{
	size_t f;
	int i;

	for (f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		const struct op_family *fam = families[f];

		for (i = 0; i < fam->n_schemas && n_schemas < MAX_SCHEMAS; i++)
			schemas[n_schemas++] = &fam->schemas[i];
		for (i = 0; i < fam->n_kernels && n_kernels < MAX_KERNELS; i++)
			kernels[n_kernels++] = &fam->kernels[i];
	}
	qsort(schemas, (size_t)n_schemas, sizeof(schemas[0]), schema_cmp);
	qsort(kernels, (size_t)n_kernels, sizeof(kernels[0]), kernel_cmp);
}

static void index_ready(void)
{
	pthread_once(&index_once, index_build);
}

/* The first schema index with key >= (domain, op_type). */
static int schema_lower(const char *domain, const char *op_type)
{
	int lo = 0, hi = n_schemas;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (key_cmp(schemas[mid]->domain, schemas[mid]->op_type, domain, op_type) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int kernel_lower(const char *domain, const char *op_type)
{
	int lo = 0, hi = n_kernels;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (key_cmp(kernels[mid]->domain, kernels[mid]->op_type, domain, op_type) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Appends "a-b" ranges to buf, comma separated. */
static void range_append(char *buf, size_t len, int since, int until)
{
	size_t at = strlen(buf);

	if (at < len)
		snprintf(buf + at, len - at, "%s%d-%d", at ? ", " : "", since, until);
}

int op_schema_find(const char *domain, const char *op_type, int opset,
		   const struct op_schema **out)
{
	char ranges[128] = "";
	int i, since = -1, until = -1;

	*out = NULL;
	index_ready();
	/* Schemas are sorted by since; adjacent ranges are shown as one. */
	for (i = schema_lower(domain, op_type); i < n_schemas; i++) {
		const struct op_schema *s = schemas[i];

		if (key_cmp(s->domain, s->op_type, domain, op_type) != 0)
			break;
		if (opset >= s->since && opset <= s->until) {
			*out = s;
			return 0;
		}
		if (since >= 0 && s->since == until + 1) {
			until = s->until;
			continue;
		}
		if (since >= 0)
			range_append(ranges, sizeof(ranges), since, until);
		since = s->since;
		until = s->until;
	}
	if (since >= 0)
		range_append(ranges, sizeof(ranges), since, until);
	if (!ranges[0])
		return cep__set_error(CEP_EUNSUPPORTED, "unknown op %s in domain %s",
				      op_type, op_domain_name(domain));
	return cep__set_error(CEP_EUNSUPPORTED, "%s: opset %d is not supported (supported %s)",
			      op_type, opset, ranges);
}

int op_kernel_find(const struct op_schema *s, int opset,
		   enum backend_kind backend, cep_dtype dtype,
		   const struct op_kernel **out)
{
	char types[160];
	uint32_t seen = 0;
	bool any = false;
	int i;

	*out = NULL;
	index_ready();
	for (i = kernel_lower(s->domain, s->op_type); i < n_kernels; i++) {
		const struct op_kernel *k = kernels[i];

		if (key_cmp(k->domain, k->op_type, s->domain, s->op_type) != 0)
			break;
		if (k->backend != backend || opset < k->since || opset > k->until)
			continue;
		any = true;
		seen |= k->dtypes;
		if (op_dtype_in(dtype, k->dtypes)) {
			*out = k;
			return 0;
		}
	}
	if (!any)
		return cep__set_error(CEP_EUNSUPPORTED, "%s (opset %d) has no kernel on the %s backend",
				      s->op_type, opset, backend_kind_name(backend));
	op_dtypes_format(seen, types, sizeof(types));
	return cep__set_error(CEP_EUNSUPPORTED,
			      "%s: dtype %s is not supported on the %s backend (supported: %s)",
			      s->op_type, cep_dtype_name(dtype), backend_kind_name(backend),
			      types);
}

cep_dtype op_kernel_dtype(const struct op_schema *s, const struct op_tensor *in,
			  int n_in, const struct op_tensor *out, int n_out)
{
	if (s->type_input >= 0 && s->type_input < n_in)
		return in[s->type_input].dtype;
	return n_out > 0 ? out[0].dtype : CEP_DTYPE_UNDEFINED;
}

int op_schema_count(void)
{
	index_ready();
	return n_schemas;
}

const struct op_schema *op_schema_at(int i)
{
	index_ready();
	return i >= 0 && i < n_schemas ? schemas[i] : NULL;
}

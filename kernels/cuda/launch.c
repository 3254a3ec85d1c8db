/*
 * launch.c — helpers of the launchers of kernels/cuda (launch.h): type
 * suffixes, copy units, the broadcasting layout of binary kernels and
 * the layouts their fast paths cover.
 */
#include "kernels/cuda/launch.h"

#include <string.h>

const char *cuda_dtype_suffix(cep_dtype dtype)
{
	switch (dtype) {
	case CEP_DTYPE_FLOAT32: return "f32";
	case CEP_DTYPE_FLOAT16: return "f16";
	case CEP_DTYPE_BFLOAT16: return "bf16";
	case CEP_DTYPE_INT64: return "i64";
	case CEP_DTYPE_INT32: return "i32";
	case CEP_DTYPE_INT8: return "i8";
	case CEP_DTYPE_UINT8: return "u8";
	case CEP_DTYPE_BOOL: return "bool";
	case CEP_DTYPE_FLOAT64: return "f64";
	case CEP_DTYPE_INT16: return "i16";
	case CEP_DTYPE_UINT16: return "u16";
	case CEP_DTYPE_UINT32: return "u32";
	case CEP_DTYPE_UINT64: return "u64";
	case CEP_DTYPE_INT4: return "i4";
	case CEP_DTYPE_UINT4: return "u4";
	case CEP_DTYPE_FLOAT4E2M1: return "f4";
	case CEP_DTYPE_FLOAT8E4M3FN: return "e4m3fn";
	case CEP_DTYPE_FLOAT8E4M3FNUZ: return "e4m3fnuz";
	case CEP_DTYPE_FLOAT8E5M2: return "e5m2";
	case CEP_DTYPE_FLOAT8E5M2FNUZ: return "e5m2fnuz";
	default: return NULL;
	}
}

bool cuda_dtype_wide(cep_dtype dtype)
{
	switch (dtype) {
	case CEP_DTYPE_FLOAT64:
	case CEP_DTYPE_INT16:
	case CEP_DTYPE_UINT16:
	case CEP_DTYPE_UINT32:
	case CEP_DTYPE_UINT64:
		return true;
	default:
		return false;
	}
}

unsigned cuda_unit(const uint64_t *v, int n)
{
	unsigned u = 16;
	int i;

	for (i = 0; i < n; i++) {
		while (v[i] % u != 0)
			u /= 2;
	}
	return u;
}

void cuda_bcast_init(struct cuda_bcast *p, const struct op_tensor *out,
		     const struct op_tensor *a, const struct op_tensor *b)
{
	const struct op_tensor *ops[2] = { a, b };
	int64_t st[2][CEP_MAX_RANK];
	int r = out->rank, m = 0, i, k;

	memset(p, 0, sizeof(*p));
	p->n = op_dims_product(out, 0, r);
	for (k = 0; k < 2; k++) {
		int64_t s = 1;

		for (i = r - 1; i >= 0; i--) {
			int ii = i - (r - ops[k]->rank);

			if (ii >= 0 && ops[k]->dims[ii] != 1) {
				st[k][i] = s;
				s *= ops[k]->dims[ii];
			} else {
				st[k][i] = 0;
			}
		}
	}
	/* From the innermost dim outwards, merging a dim into the one inside
	 * it when both operands step across the pair as across one dim; the
	 * result is built reversed and turned around at the end. */
	for (i = r - 1; i >= 0; i--) {
		bool merge = m > 0;

		if (out->dims[i] == 1)
			continue;
		for (k = 0; k < 2 && merge; k++)
			merge = st[k][i] == p->stride[k][m - 1] * p->dims[m - 1];
		if (merge) {
			p->dims[m - 1] *= out->dims[i];
			continue;
		}
		p->dims[m] = out->dims[i];
		for (k = 0; k < 2; k++)
			p->stride[k][m] = st[k][i];
		m++;
	}
	if (m == 0) {
		/* A single element (or none): rank 1 of size 1. */
		p->dims[0] = 1;
		p->stride[0][0] = p->stride[1][0] = 0;
		m = 1;
	}
	for (i = 0; i < m / 2; i++) {
		int j = m - 1 - i;
		int64_t t = p->dims[i];

		p->dims[i] = p->dims[j];
		p->dims[j] = t;
		for (k = 0; k < 2; k++) {
			t = p->stride[k][i];
			p->stride[k][i] = p->stride[k][j];
			p->stride[k][j] = t;
		}
	}
	p->rank = m;
}

/* The enum cuda_opnd_mode of operand k of p (of rank 1 or 2) read from
 * its strides, or -1 for a layout no fast path covers. */
static int fast_mode(const struct cuda_bcast *p, int k)
{
	if (p->rank == 1)
		return p->stride[k][0] == 0 ? CUDA_OPND_SCALAR : CUDA_OPND_FULL;
	if (p->stride[k][1] != 1)
		return -1;
	return p->stride[k][0] == 0 ? CUDA_OPND_ROW
	     : p->stride[k][0] == p->dims[1] ? CUDA_OPND_FULL : -1;
}

bool cuda_fast_init(struct cuda_fast *f, const struct cuda_bcast *p)
{
	static const char letter[] = { 'f', 'r', 's' };
	int k;

	memset(f, 0, sizeof(*f));
	if (p->rank > 2)
		return false;
	for (k = 0; k < 2; k++) {
		f->mode[k] = fast_mode(p, k);
		if (f->mode[k] < 0)
			return false;
	}
	/* Two single elements make one output element: read both at 0. */
	if (f->mode[0] == CUDA_OPND_SCALAR && f->mode[1] == CUDA_OPND_SCALAR)
		f->mode[0] = f->mode[1] = CUDA_OPND_FULL;
	/* Rank 2 has two full operands only when its dims would not merge,
	 * and a row against a row cannot fill a larger output. */
	if (f->mode[0] != CUDA_OPND_FULL && f->mode[1] != CUDA_OPND_FULL)
		return false;
	f->cols = p->rank == 2 ? p->dims[1] : 1;
	f->name[0] = letter[f->mode[0]];
	f->name[1] = letter[f->mode[1]];
	f->name[2] = '\0';
	return true;
}

void cuda_bcastn_init(struct cuda_bcastn *p, const struct op_tensor *out,
		      const struct op_tensor *const *ins, int n)
{
	uint32_t bits[CUDA_BCASTN_MAX], prev[CUDA_BCASTN_MAX];
	int64_t dims[CEP_MAX_RANK];
	int r = out->rank, m = 0, i, k;

	memset(p, 0, sizeof(*p));
	p->n = op_dims_product(out, 0, r);
	p->n_in = n;
	/* From the innermost dim outwards, as cuda_bcast_init() does, but an
	 * operand is described by where it broadcasts alone: a dim merges
	 * into the one inside it when every operand broadcasts along both or
	 * along neither. The masks are built reversed, then turned around. */
	for (i = r - 1; i >= 0; i--) {
		bool merge = m > 0;

		if (out->dims[i] == 1)
			continue;
		for (k = 0; k < n; k++) {
			const struct op_tensor *t = ins[k];
			int ii = t != NULL ? i - (r - t->rank) : i;

			bits[k] = t != NULL && (ii < 0 || t->dims[ii] == 1);
			merge = merge && bits[k] == prev[k];
		}
		if (merge) {
			dims[m - 1] *= out->dims[i];
			continue;
		}
		dims[m] = out->dims[i];
		for (k = 0; k < n; k++) {
			p->bmask[k] |= bits[k] << m;
			prev[k] = bits[k];
		}
		m++;
	}
	if (m == 0) {
		/* A single element (or none): rank 1 of size 1, read by all. */
		dims[0] = 1;
		m = 1;
	}
	for (i = 0; i < m; i++)
		p->dims[i] = dims[m - 1 - i];
	for (k = 0; k < n; k++) {
		uint32_t rev = 0;

		for (i = 0; i < m; i++)
			rev |= ((p->bmask[k] >> i) & 1u) << (m - 1 - i);
		p->bmask[k] = rev;
	}
	p->rank = m;
}

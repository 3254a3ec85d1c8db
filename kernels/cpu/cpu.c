/*
 * cpu.c — the broadcasting iterator of the reference kernels
 * (kernels/cpu/cpu.h): per-input element strides aligned to the output,
 * with dimensions merged wherever every operand is contiguous across them.
 */
#include "kernels/cpu/cpu.h"

void cpu_bcast_init(struct cpu_bcast *bc, const struct op_tensor *out,
		    const struct op_tensor *const *in, int n)
{
	int64_t st[CPU_BCAST_MAX_IN][CEP_MAX_RANK];
	int64_t rdims[CEP_MAX_RANK], rst[CPU_BCAST_MAX_IN][CEP_MAX_RANK];
	int r = out->rank, m = 0;
	int i, k;

	memset(bc, 0, sizeof(*bc));
	bc->n = n;
	/* Nothing to iterate. Checked first: the dimensions of an input
	 * with a 0 (which makes the output's 0 too) may multiply past int64. */
	for (i = 0; i < r; i++) {
		if (out->dims[i] == 0) {
			bc->rows = 0;
			bc->inner = 0;
			return;
		}
	}
	for (k = 0; k < n; k++) {
		int64_t s = 1;

		for (i = r - 1; i >= 0; i--) {
			int ii = i - (r - in[k]->rank);

			if (ii >= 0 && in[k]->dims[ii] != 1) {
				st[k][i] = s;
				s *= in[k]->dims[ii];
			} else {
				st[k][i] = 0;
			}
		}
	}
	/* Merge from the innermost dimension outwards (rdims is reversed). */
	for (i = r - 1; i >= 0; i--) {
		bool merge = m > 0;

		if (out->dims[i] == 1)
			continue;
		for (k = 0; k < n && merge; k++)
			merge = st[k][i] == rst[k][m - 1] * rdims[m - 1];
		if (merge) {
			rdims[m - 1] *= out->dims[i];
			continue;
		}
		rdims[m] = out->dims[i];
		for (k = 0; k < n; k++)
			rst[k][m] = st[k][i];
		m++;
	}
	bc->rank = m;
	for (i = 0; i < m; i++) {
		bc->dims[i] = rdims[m - 1 - i];
		for (k = 0; k < n; k++)
			bc->strides[k][i] = rst[k][m - 1 - i];
	}
	bc->inner = m > 0 ? bc->dims[m - 1] : 1;
	bc->rows = 1;
	for (i = 0; i + 1 < m; i++)
		bc->rows *= bc->dims[i];
	for (k = 0; k < n; k++)
		bc->step[k] = m > 0 ? bc->strides[k][m - 1] : 0;
}

void cpu_bcast_next(struct cpu_bcast *bc)
{
	int d, k;

	for (d = bc->rank - 2; d >= 0; d--) {
		bc->idx[d]++;
		for (k = 0; k < bc->n; k++)
			bc->off[k] += bc->strides[k][d];
		if (bc->idx[d] < bc->dims[d])
			return;
		for (k = 0; k < bc->n; k++)
			bc->off[k] -= bc->strides[k][d] * bc->dims[d];
		bc->idx[d] = 0;
	}
}

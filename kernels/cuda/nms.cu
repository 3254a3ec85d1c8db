/*
 * nms.cu — NonMaxSuppression on the device, with the reference kernel's
 * selection and arithmetic (kernels/cpu/nms.c): the same total order of
 * scores (falling, ties to the lower box, NaN last), the same float32
 * steps of the intersection over union, each rounded on its own
 * (__fsub_rn and friends, never fused), so a box on the threshold goes
 * the same way on both backends.
 *
 * nms_select gives a block to each (batch, class) pair: every candidate
 * (a box above score_threshold, when there is one) finds its place in the
 * sorted order by counting the candidates that go before it, then the
 * block walks that order once, all threads testing the next box against
 * the boxes kept so far and one appending it when none suppresses it,
 * until max_output_boxes_per_class are kept. nms_write then gives each
 * pair its offset (the counts of the pairs before it), checks the total
 * against the plan's (a mismatch is latched as CEP_FAULT_SHAPE and
 * nothing is written) and writes the (batch, class, box) triples. The
 * optional scalars are read here from device memory. Launcher:
 * kernels/cuda/nms.c.
 */
#include "blockred.cuh"

/* Twin: struct cuda_nms. */
struct cep_nms {
	i64 batches, classes, boxes;
	i64 count;              /* selected, as the plan has it */
	i32 center;             /* center_point_box */
	i32 pad;
};

__device__ __forceinline__ float nms_max(float a, float b) { return b > a ? b : a; }
__device__ __forceinline__ float nms_min(float a, float b) { return b < a ? b : a; }

/* The extent of box b along x (axis 1) or y (axis 0), as the host's
 * nms_extent(). */
__device__ __forceinline__ void nms_extent(const float *b, bool center, int axis, float *lo,
					   float *hi)
{
	if (center) {
		float half = __fdiv_rn(b[axis == 1 ? 2 : 3], 2.0f);
		float mid = b[axis == 1 ? 0 : 1];

		*lo = __fsub_rn(mid, half);
		*hi = __fadd_rn(mid, half);
		return;
	}
	float l = b[axis], r = b[axis + 2];

	if (l >= r) {
		*lo = r;
		*hi = l;
	} else {
		*lo = l;
		*hi = r;
	}
}

/* Whether box a is suppressed by box b, already kept. */
__device__ __forceinline__ bool nms_suppresses(const float *a, const float *b, bool center,
					       float iou_threshold)
{
	float ax0, ax1, bx0, bx1, ay0, ay1, by0, by1;

	nms_extent(a, center, 1, &ax0, &ax1);
	nms_extent(b, center, 1, &bx0, &bx1);
	float ix0 = nms_max(ax0, bx0), ix1 = nms_min(ax1, bx1);

	if (ix1 <= ix0)
		return false;
	nms_extent(a, center, 0, &ay0, &ay1);
	nms_extent(b, center, 0, &by0, &by1);
	float iy0 = nms_max(ay0, by0), iy1 = nms_min(ay1, by1);

	if (iy1 <= iy0)
		return false;
	float inter = __fmul_rn(__fsub_rn(ix1, ix0), __fsub_rn(iy1, iy0));

	if (inter <= 0.0f)
		return false;
	float area_a = __fmul_rn(__fsub_rn(ax1, ax0), __fsub_rn(ay1, ay0));
	float area_b = __fmul_rn(__fsub_rn(bx1, bx0), __fsub_rn(by1, by0));
	float uni = __fsub_rn(__fadd_rn(area_a, area_b), inter);

	if (area_a <= 0.0f || area_b <= 0.0f || uni <= 0.0f)
		return false;
	return __fdiv_rn(inter, uni) > iou_threshold;
}

/* Whether score a (box ia) is taken before score b (box ib). */
__device__ __forceinline__ bool nms_before(float a, i64 ia, float b, i64 ib)
{
	bool na = a != a, nb = b != b;

	if (na || nb)
		return na && nb ? ia < ib : nb;
	if (a != b)
		return a > b;
	return ia < ib;
}

/*
 * order and sel hold p.boxes entries per pair, counts one. The limits
 * come from the optional inputs (NULL: absent or empty).
 */
extern "C" __global__ void nms_select(const float *boxes, const float *scores,
				      const i64 *max_out, const float *iou, const float *score_thr,
				      i32 *order, i32 *sel, i64 *counts, cep_nms p)
{
	__shared__ i32 kept;
	i64 n = p.boxes, limit = max_out != 0 ? max_out[0] : 0;
	float iou_thr = iou != 0 ? iou[0] : 0.0f;
	bool filter = score_thr != 0;
	float st = filter ? score_thr[0] : 0.0f;

	if (limit < 0)
		limit = 0;
	for (i64 pair = blockIdx.x; pair < p.batches * p.classes; pair += gridDim.x) {
		const float *sc = scores + pair * n;
		const float *bx = boxes + (pair / p.classes) * n * 4;
		i32 *ord = order + pair * n, *sl = sel + pair * n;
		i64 m = 0;

		for (i64 i = threadIdx.x; i < n; i += blockDim.x) {
			float v = sc[i];
			i64 r = 0;

			if (filter && !(v > st))
				continue;
			m++;
			for (i64 j = 0; j < n; j++) {
				float w = sc[j];

				if ((!filter || w > st) && nms_before(w, j, v, i))
					r++;
			}
			ord[r] = (i32)i;
		}
		m = cep_block_reduce<cep_add>(m, (i64)0);
		if (threadIdx.x == 0)
			kept = 0;
		__syncthreads();
		/* kept is read by all after each step's barrier, so the loop's
		 * bounds are the block's. */
		for (i64 k = 0; k < m && kept < limit; k++) {
			const float *cand = bx + (i64)ord[k] * 4;
			int s0 = kept;
			bool hit = false;

			for (int s = threadIdx.x; s < s0 && !hit; s += blockDim.x)
				hit = nms_suppresses(cand, bx + (i64)sl[s] * 4, p.center != 0, iou_thr);
			hit = __syncthreads_or(hit);
			if (!hit && threadIdx.x == 0) {
				sl[s0] = ord[k];
				kept = s0 + 1;
			}
			__syncthreads();
		}
		if (threadIdx.x == 0)
			counts[pair] = kept;
		__syncthreads();
	}
}

extern "C" __global__ void nms_write(const i32 *sel, const i64 *counts, i64 *out, cep_nms p,
				     cep_fault *fault, u64 site)
{
	i64 pairs = p.batches * p.classes;

	for (i64 pair = blockIdx.x; pair < pairs; pair += gridDim.x) {
		i64 before = 0, total = 0;

		for (i64 q = threadIdx.x; q < pairs; q += blockDim.x) {
			total += counts[q];
			if (q < pair)
				before += counts[q];
		}
		total = cep_block_reduce<cep_add>(total, (i64)0);
		before = cep_block_reduce<cep_add>(before, (i64)0);
		if (total != p.count) {
			if (pair == 0 && threadIdx.x == 0)
				cep_fault_latch_kind(fault, CEP_FAULT_SHAPE, site, 0, total, p.count);
			return;
		}
		for (i64 s = threadIdx.x; s < counts[pair]; s += blockDim.x) {
			i64 *o = out + (before + s) * 3;

			o[0] = pair / p.classes;
			o[1] = pair - (pair / p.classes) * p.classes;
			o[2] = sel[pair * p.boxes + s];
		}
	}
}

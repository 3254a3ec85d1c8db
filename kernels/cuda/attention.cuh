/*
 * attention.cuh — what the two sources of the Attention operator share
 * (kernels/cuda/attention.cu, the SIMT kernels; attention_tc.cu, the
 * tensor-core one): the geometry the launcher (kernels/cuda/attention.c)
 * passes, as struct cuda_attn there, laid out with the same members.
 */
#ifndef CEP_CUDA_ATTENTION_CUH
#define CEP_CUDA_ATTENTION_CUH

#include "blockred.cuh"

/* Twin: struct cuda_attn (kernels/cuda/attention.c). */
struct cep_attn {
	i64 B, H, Sq, Sk, Dk, Dv;
	i64 q[4], k[4], v[4];           /* element strides of (b, h, s, d) */
	i64 m[4];                       /* the mask's, of (b, h, i, j) */
	i64 o[4];                       /* the output's, of (b, h, i, d) */
	float scale;
	i32 has_mask;
	i32 vec;                        /* Q, K and V rows are Dk = Dv = the
	                                 * kernel's depth contiguous elements,
	                                 * each 16-byte aligned: staged with
	                                 * 16-byte loads */
	i64 q_tiles;                    /* blocks of query rows per (b, h) */
};

#endif

/*
 * convt_win.h — the host twin of convt.cuh's window (struct cep_convt_win),
 * filled from the geometry both backends share (kernels/convt_geom.h), for
 * the launchers of ConvTranspose (kernels/cuda/conv_transpose.c) and
 * Col2Im (kernels/cuda/col2im.c). Internal to kernels/cuda.
 */
#ifndef CEP_KERNELS_CUDA_CONVT_WIN_H
#define CEP_KERNELS_CUDA_CONVT_WIN_H

#include <inttypes.h>
#include <string.h>

#include "kernels/convt_geom.h"

/* Twin of struct cep_convt_win (convt.cuh). */
struct cuda_convt_win {
	int32_t n;
	int32_t pad;
	int32_t image[CONVT_MAX_DIMS];
	int32_t block[CONVT_MAX_DIMS];
	int32_t blocks[CONVT_MAX_DIMS];
	int32_t stride[CONVT_MAX_DIMS];
	int32_t dilation[CONVT_MAX_DIMS];
	int32_t pad_begin[CONVT_MAX_DIMS];
};

/* Whether v fits the device window's int32 fields. */
static inline bool cuda_convt_fits(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/*
 * Fills w from g (every size fixed). Returns 0, or CEP_EUNSUPPORTED with
 * a message naming op when a size or pad does not fit an int32 (the
 * attributes are bounded to that already; only an image or tensor
 * dimension past 2^31 - 1 along one axis gets here).
 */
static inline int cuda_convt_win_init(const char *op, const struct convt_col2im *g,
				      struct cuda_convt_win *w)
{
	int i;

	memset(w, 0, sizeof(*w));
	w->n = g->n;
	for (i = 0; i < g->n; i++) {
		if (!cuda_convt_fits(g->image[i]) || !cuda_convt_fits(g->block[i]) ||
		    !cuda_convt_fits(g->blocks[i]) || !cuda_convt_fits(g->pad_begin[i]))
			return cep__set_error(CEP_EUNSUPPORTED, "%s: spatial dimension %d is too "
					      "large for the cuda kernel (image %" PRId64 ", block %"
					      PRId64 ", %" PRId64 " blocks, pad %" PRId64 ")", op, i,
					      g->image[i], g->block[i], g->blocks[i],
					      g->pad_begin[i]);
		w->image[i] = (int32_t)g->image[i];
		w->block[i] = (int32_t)g->block[i];
		w->blocks[i] = (int32_t)g->blocks[i];
		w->stride[i] = (int32_t)g->stride[i];
		w->dilation[i] = (int32_t)g->dilation[i];
		w->pad_begin[i] = (int32_t)g->pad_begin[i];
	}
	return 0;
}

#endif

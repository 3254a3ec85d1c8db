/*
 * col2im.h — adding columns into an image (kernels/convt_geom.h says where
 * each column entry lands), the core of Col2Im (kernels/cpu/col2im.c)
 * and of ConvTranspose (kernels/cpu/conv_transpose.c, which first
 * multiplies the weights into columns). Internal to kernels/cpu.
 *
 * Every image element receives its entries in the order of their kernel
 * position (at most one per position), the order in which the device
 * kernels gather them, so float sums agree bit for bit.
 */
#ifndef CEP_KERNELS_CPU_COL2IM_H
#define CEP_KERNELS_CPU_COL2IM_H

#include "kernels/convt_geom.h"
#include "kernels/cpu/cpu.h"

/* Adds the columns of one channel, cols (g->ks rows of g->l entries),
 * into img (g->p elements, added to, not cleared). */
void cpu_col2im_add_f(const struct convt_col2im *g, const float *cols, float *img);

/* The same in double, for float64. */
void cpu_col2im_add_d(const struct convt_col2im *g, const double *cols, double *img);

/* The same for integers: sums wrap modulo 2^64, which the final store
 * narrows to the type's width as a sum in that type would wrap. */
void cpu_col2im_add_u(const struct convt_col2im *g, const uint64_t *cols, uint64_t *img);

#endif

/*
 * rnn.h — what the reference kernels of the recurrent layers
 * (kernels/cpu/rnn.c: RNN, GRU and LSTM) share with their device kernels
 * (kernels/cuda/rnn.c): the parameters of a node read once from its
 * attributes and fixed shapes, and where each row of X, Y, Y_h, Y_c and
 * of the initial states lies for either layout, so that both backends
 * walk the same elements with the same activations.
 *
 * Inputs, by position: X, W, R, B, sequence_lens, initial_h, and for
 * LSTM initial_c and P. Outputs: Y, Y_h, and for LSTM Y_c. Gates, in W's
 * and R's rows: RNN one (i), GRU three (z, r, h), LSTM four (i, o, f, c).
 */
#ifndef CEP_KERNELS_CPU_RNN_H
#define CEP_KERNELS_CPU_RNN_H

#include "kernels/cpu/cpu.h"

/* The inputs and outputs by position. */
enum cpu_rnn_slot {
	CPU_RNN_X, CPU_RNN_W, CPU_RNN_R, CPU_RNN_B, CPU_RNN_LENS, CPU_RNN_H0, CPU_RNN_C0,
	CPU_RNN_P,
};
enum cpu_rnn_out { CPU_RNN_Y, CPU_RNN_YH, CPU_RNN_YC };

enum cpu_rnn_op {
	CPU_RNN_SIMPLE,  /* RNN */
	CPU_RNN_GRU,
	CPU_RNN_LSTM,
};

/* The activation functions the specification lists. */
enum cpu_rnn_fn {
	CPU_RNN_RELU,
	CPU_RNN_TANH,
	CPU_RNN_SIGMOID,
	CPU_RNN_AFFINE,           /* alpha * x + beta */
	CPU_RNN_LEAKY_RELU,       /* x < 0: alpha * x */
	CPU_RNN_THRESHOLDED_RELU, /* x > alpha: x, else 0 */
	CPU_RNN_SCALED_TANH,      /* alpha * tanh(beta * x) */
	CPU_RNN_HARD_SIGMOID,     /* clamp(alpha * x + beta, 0, 1) */
	CPU_RNN_ELU,              /* x < 0: alpha * (e^x - 1) */
	CPU_RNN_SOFTSIGN,
	CPU_RNN_SOFTPLUS,
};

/* One activation with its constants (the defaults where it takes none). */
struct cpu_rnn_act {
	int32_t fn;               /* enum cpu_rnn_fn */
	float alpha, beta;
};

/* Activations per direction: RNN f; GRU f (z, r), g (h); LSTM f (i, o,
 * f), g (c), h (of the cell). */
#define CPU_RNN_MAX_ACT 3

/* A node's parameters, laid out with explicit padding (the device kernels
 * take a twin of it). */
struct cpu_rnn {
	int32_t op;               /* enum cpu_rnn_op */
	int32_t gates;            /* rows of W and R per hidden unit: 1, 3, 4 */
	int32_t dirs;             /* num_directions: 1 or 2 */
	int32_t reverse;          /* 1: the one direction runs backwards */
	int32_t layout;           /* 0: X [seq, batch, input]; 1: [batch, seq, input] */
	int32_t linear_before_reset; /* GRU: r multiplies (H R_h + Rb_h) */
	int32_t input_forget;     /* LSTM: f = 1 - i */
	int32_t has_clip;         /* clip the inputs of the activations */
	float clip;               /* > 0 */
	int32_t n_act;            /* activations per direction: 1, 2 or 3 */
	int64_t seq, batch, input;
	int64_t hidden;           /* hidden_size; -1 until known (inference) */
	struct cpu_rnn_act act[2][CPU_RNN_MAX_ACT]; /* (dirs, n_act) */
};

/*
 * Fills p from node's attributes (op_type, direction, layout, clip, the
 * activations and their alpha and beta, linear_before_reset,
 * input_forget, hidden_size; -1 for hidden when absent), checking each.
 * Returns 0, or CEP_EMODEL with a message naming the attribute and what
 * was wrong.
 */
int cpu_rnn_attrs(const struct op_node *node, struct cpu_rnn *p);

/*
 * Fills p for node over its inputs in (X and R at least; shapes fixed
 * and checked by inference): the attributes, then seq, batch, input and
 * hidden from X and R. Returns 0 or cpu_rnn_attrs()'s error.
 */
int cpu_rnn_read(const struct op_node *node, const struct op_tensor *in, struct cpu_rnn *p);

/* Whether direction d runs from the end of each sequence. */
static inline bool cpu_rnn_backwards(const struct cpu_rnn *p, int64_t d)
{
	return p->reverse || d == 1;
}

/* The first element of X's row of time t and batch entry b. */
static inline int64_t cpu_rnn_x_at(const struct cpu_rnn *p, int64_t t, int64_t b)
{
	return (p->layout ? b * p->seq + t : t * p->batch + b) * p->input;
}

/* The first element of Y's row of time t, direction d, batch entry b. */
static inline int64_t cpu_rnn_y_at(const struct cpu_rnn *p, int64_t t, int64_t d, int64_t b)
{
	return (p->layout ? (b * p->seq + t) * p->dirs + d : (t * p->dirs + d) * p->batch + b) *
	       p->hidden;
}

/* The first element of the row of direction d and batch entry b of
 * initial_h, initial_c, Y_h and Y_c. */
static inline int64_t cpu_rnn_h_at(const struct cpu_rnn *p, int64_t d, int64_t b)
{
	return (p->layout ? b * p->dirs + d : d * p->batch + b) * p->hidden;
}

#endif

/*
 * rnn.cu — RNN, GRU and LSTM, one time step per launch, with the
 * arithmetic of the reference kernels (kernels/cpu/rnn.c): every type
 * computed in float32, the states H and C kept in float32 in the
 * workspace between steps, only Y, Y_h and Y_c rounded to the tensors'
 * type.
 *
 * rnn_init_<type>: a thread per (direction, batch entry, hidden unit)
 * loads the initial states (or zeros) into the first H buffer and C,
 * copies sequence_lens into the workspace, each checked against [0,
 * seq_length] (a bad one latches a fault and is clamped), and writes the
 * zeros of Y_h and Y_c for the entries of length 0.
 *
 * rnn_step_<type>, lstm_step_<type>; gru_gates_<type> then
 * gru_hidden_<type>: a warp per (direction, batch entry, hidden unit) of
 * step s. Its lanes stride along the rows of W and R of the unit's gates
 * (neighbouring lanes read neighbouring weights) against X's row and the
 * previous H, the warp sums them through shuffles, and lane 0 applies the
 * gates and writes the unit's new state, its element of Y and, at the
 * entry's last step, of Y_h and Y_c. H is double-buffered (step s reads
 * one buffer and writes the other); C is the unit's own. GRU takes two
 * launches because h~ of one unit needs r of every unit (r (.) H is
 * multiplied by R_h): gru_gates writes z and r (or r (.) H) of every
 * unit, gru_hidden the rest. A unit whose entry is shorter than s + 1
 * writes the zero of Y at time s and nothing else.
 *
 * Launcher: kernels/cuda/rnn.c.
 */
#include "blockred.cuh"

enum { RNN_SIMPLE, RNN_GRU, RNN_LSTM }; /* enum cpu_rnn_op */

enum { /* enum cpu_rnn_fn */
	FN_RELU, FN_TANH, FN_SIGMOID, FN_AFFINE, FN_LEAKY_RELU, FN_THRESHOLDED_RELU,
	FN_SCALED_TANH, FN_HARD_SIGMOID, FN_ELU, FN_SOFTSIGN, FN_SOFTPLUS,
};

struct cep_rnn_act {
	i32 fn;
	float alpha, beta;
};

/* Twin: struct cpu_rnn (kernels/cpu/rnn.h), passed as it is. */
struct cep_rnn {
	i32 op, gates, dirs, reverse, layout, linear_before_reset, input_forget, has_clip;
	float clip;
	i32 n_act;
	i64 seq, batch, input, hidden;
	cep_rnn_act act[2][3];
};

static_assert(sizeof(cep_rnn) == 144, "cep_rnn must match struct cpu_rnn");

/* ------------------------------------------------------------- helpers */

__device__ __forceinline__ i64 rnn_x_at(const cep_rnn &p, i64 t, i64 b)
{
	return (p.layout ? b * p.seq + t : t * p.batch + b) * p.input;
}

__device__ __forceinline__ i64 rnn_y_at(const cep_rnn &p, i64 t, i64 d, i64 b)
{
	return (p.layout ? (b * p.seq + t) * p.dirs + d : (t * p.dirs + d) * p.batch + b) * p.hidden;
}

__device__ __forceinline__ i64 rnn_h_at(const cep_rnn &p, i64 d, i64 b)
{
	return (p.layout ? b * p.dirs + d : d * p.batch + b) * p.hidden;
}

__device__ __forceinline__ float rnn_act(const cep_rnn_act &a, float v)
{
	float h;

	switch (a.fn) {
	case FN_RELU:
		return v < 0.0f ? 0.0f : v;
	case FN_TANH:
		return tanhf(v);
	case FN_SIGMOID:
		return 1.0f / (1.0f + expf(-v));
	case FN_AFFINE:
		return a.alpha * v + a.beta;
	case FN_LEAKY_RELU:
		return v < 0.0f ? a.alpha * v : v;
	case FN_THRESHOLDED_RELU:
		return v > a.alpha ? v : 0.0f;
	case FN_SCALED_TANH:
		return a.alpha * tanhf(a.beta * v);
	case FN_HARD_SIGMOID:
		h = a.alpha * v + a.beta;
		return h < 0.0f ? 0.0f : h > 1.0f ? 1.0f : h;
	case FN_ELU:
		return v < 0.0f ? a.alpha * expm1f(v) : v;
	case FN_SOFTSIGN:
		return v / (1.0f + fabsf(v));
	case FN_SOFTPLUS:
		return v > 0.0f ? v + log1pf(expf(-v)) : log1pf(expf(v));
	}
	return v;
}

/* Activation k of direction d over the gate input v, clipped first. */
__device__ __forceinline__ float rnn_gate(const cep_rnn &p, i64 d, int k, float v)
{
	if (p.has_clip)
		v = v < -p.clip ? -p.clip : v > p.clip ? p.clip : v;
	return rnn_act(p.act[d][k], v);
}

/* Element i of an optional tensor, 0 when absent. */
template <typename T> __device__ __forceinline__ float rnn_opt(const T *t, i64 i)
{
	return t != nullptr ? ld_f(t, i) : 0.0f;
}

/* ---------------------------------------------------------------- init */

template <typename T>
__device__ __forceinline__ void rnn_init(const T *h0, const T *c0, const i32 *lens_in, float *h,
					 float *c, i32 *lens, T *yh, T *yc, const cep_rnn &p,
					 cep_fault *fault, u64 site)
{
	CEP_FOR(u, p.dirs * p.batch * p.hidden) {
		i64 j = u % p.hidden, db = u / p.hidden, b = db % p.batch, d = db / p.batch;
		i64 at = rnn_h_at(p, d, b) + j, len = p.seq;

		if (lens_in != nullptr) {
			len = lens_in[b];
			if (len < 0 || len > p.seq) {
				if (d == 0 && j == 0)
					cep_fault_latch_kind(fault, CEP_FAULT_VALUE, site, 0, len,
							     len < 0 ? 0 : p.seq);
				len = len < 0 ? 0 : p.seq;
			}
		}
		if (d == 0 && j == 0)
			lens[b] = (i32)len;
		h[u] = rnn_opt(h0, at);
		if (c != nullptr)
			c[u] = rnn_opt(c0, at);
		if (len == 0 && yh != nullptr)
			st_f(yh, at, 0.0f);
		if (len == 0 && yc != nullptr)
			st_f(yc, at, 0.0f);
	}
}

/* ---------------------------------------------------------------- steps */

/* What a step kernel computes: RNN's or LSTM's step, GRU's z and r, or
 * GRU's h~ and H. */
enum { STEP_RNN, STEP_LSTM, STEP_GRU_GATES, STEP_GRU_HIDDEN };

/* Lane 0's part of unit u (direction d, batch entry b, hidden unit j) at
 * step s, time t: aw and ar are the sums of its gates' rows of W and R,
 * the biases still to add; applies the gates and writes the results. */
template <typename T, int KIND>
__device__ __forceinline__ void rnn_finish(const T *bias, const T *peep, const float *hin,
					   float *hout, float *cz, float *rg, T *y, T *yh, T *yc,
					   const cep_rnn &p, i64 s, i64 t, i64 len, i64 u, i64 d,
					   i64 b, i64 j, float *aw, float *ar)
{
	const int g0 = KIND == STEP_GRU_HIDDEN ? 2 : 0;
	const int ng = KIND == STEP_LSTM ? 4 : KIND == STEP_GRU_GATES ? 2 : 1;
	const i64 H = p.hidden, G = p.gates;
	const T *bw = bias != nullptr ? bias + d * 2 * G * H : nullptr;
	const T *br = bias != nullptr ? bias + d * 2 * G * H + G * H : nullptr;
	float hn;

	for (int g = 0; g < ng; g++) {
		aw[g] += rnn_opt(bw, (g0 + g) * H + j);
		ar[g] += rnn_opt(br, (g0 + g) * H + j);
	}
	if (KIND == STEP_GRU_GATES) {
		float z = rnn_gate(p, d, 0, aw[0] + ar[0]);
		float r = rnn_gate(p, d, 0, aw[1] + ar[1]);

		cz[u] = z;
		rg[u] = p.linear_before_reset ? r : r * hin[u];
		return;
	}
	if (KIND == STEP_RNN) {
		hn = rnn_gate(p, d, 0, aw[0] + ar[0]);
	} else if (KIND == STEP_GRU_HIDDEN) {
		float z = cz[u];
		float v = p.linear_before_reset ? aw[0] + rg[u] * ar[0] : aw[0] + ar[0];

		hn = (1.0f - z) * rnn_gate(p, d, 1, v) + z * hin[u];
	} else {
		const T *pp = peep != nullptr ? peep + d * 3 * H : nullptr;
		float c = cz[u], i, f, g, o;

		/* Gates i, o, f, c; peepholes i, o, f. */
		i = rnn_gate(p, d, 0, aw[0] + ar[0] + rnn_opt(pp, j) * c);
		f = p.input_forget ? 1.0f - i :
		    rnn_gate(p, d, 0, aw[2] + ar[2] + rnn_opt(pp, 2 * H + j) * c);
		g = rnn_gate(p, d, 1, aw[3] + ar[3]);
		c = f * c + i * g;
		o = rnn_gate(p, d, 0, aw[1] + ar[1] + rnn_opt(pp, H + j) * c);
		cz[u] = c;
		hn = o * rnn_act(p.act[d][2], c);
		if (s == len - 1 && yc != nullptr)
			st_f(yc, rnn_h_at(p, d, b) + j, c);
	}
	hout[u] = hn;
	if (y != nullptr)
		st_f(y, rnn_y_at(p, t, d, b) + j, hn);
	if (s == len - 1 && yh != nullptr)
		st_f(yh, rnn_h_at(p, d, b) + j, hn);
}

/* Step s of every unit, a warp each. cz: LSTM's C, GRU's z; rg: GRU's r
 * (linear_before_reset) or r (.) H. */
template <typename T, int KIND>
__device__ __forceinline__ void rnn_step(const T *x, const T *w, const T *r, const T *bias,
					 const T *peep, const i32 *lens, const float *hin,
					 float *hout, float *cz, float *rg, T *y, T *yh, T *yc,
					 const cep_rnn &p, i64 s)
{
	const int g0 = KIND == STEP_GRU_HIDDEN ? 2 : 0;
	const int ng = KIND == STEP_LSTM ? 4 : KIND == STEP_GRU_GATES ? 2 : 1;
	const int lane = threadIdx.x & 31;
	const i64 H = p.hidden, G = p.gates, I = p.input;
	const i64 warps = (i64)gridDim.x * (blockDim.x >> 5);

	for (i64 u = (i64)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
	     u < p.dirs * p.batch * H; u += warps) {
		i64 j = u % H, db = u / H, b = db % p.batch, d = db / p.batch, len = lens[b];
		float aw[4], ar[4];

		/* Past the entry's end (the same for the whole warp). */
		if (s >= len) {
			if (KIND != STEP_GRU_GATES && y != nullptr && lane == 0)
				st_f(y, rnn_y_at(p, s, d, b) + j, 0.0f);
			continue;
		}
		i64 t = p.reverse || d == 1 ? len - 1 - s : s;
		i64 xo = rnn_x_at(p, t, b), wb = d * G * H * I, rb = d * G * H * H;
		/* GRU's h~ of linear_before_reset 0 multiplies r (.) H by R_h. */
		const float *hv = KIND == STEP_GRU_HIDDEN && !p.linear_before_reset ? rg + db * H :
										   hin + db * H;

		for (int g = 0; g < ng; g++)
			aw[g] = ar[g] = 0.0f;
		for (i64 k = lane; k < I; k += 32) {
			float xv = ld_f(x, xo + k);

			for (int g = 0; g < ng; g++)
				aw[g] += ld_f(w, wb + ((g0 + g) * H + j) * I + k) * xv;
		}
		for (i64 k = lane; k < H; k += 32) {
			float h = hv[k];

			for (int g = 0; g < ng; g++)
				ar[g] += ld_f(r, rb + ((g0 + g) * H + j) * H + k) * h;
		}
		for (int g = 0; g < ng; g++) {
			aw[g] = cep_warp_reduce<cep_add>(aw[g]);
			ar[g] = cep_warp_reduce<cep_add>(ar[g]);
		}
		if (lane == 0)
			rnn_finish<T, KIND>(bias, peep, hin, hout, cz, rg, y, yh, yc, p, s, t, len, u,
					    d, b, j, aw, ar);
	}
}

/* ------------------------------------------------------------- kernels */

#define RNN_STEP_KERNEL(name, KIND, T, sfx)                                                  \
	extern "C" __global__ void name##_##sfx(const T *x, const T *w, const T *r,           \
						const T *bias, const T *peep, const i32 *lens, \
						const float *hin, float *hout, float *cz,      \
						float *rg, T *y, T *yh, T *yc, cep_rnn p, i64 s) \
	{                                                                                     \
		rnn_step<T, KIND>(x, w, r, bias, peep, lens, hin, hout, cz, rg, y, yh, yc, p, s); \
	}

#define RNN_KERNELS(T, sfx)                                                                   \
	extern "C" __global__ void rnn_init_##sfx(const T *h0, const T *c0, const i32 *lens_in, \
						  float *h, float *c, i32 *lens, T *yh, T *yc,  \
						  cep_rnn p, cep_fault *fault, u64 site)        \
	{                                                                                      \
		rnn_init<T>(h0, c0, lens_in, h, c, lens, yh, yc, p, fault, site);              \
	}                                                                                      \
	RNN_STEP_KERNEL(rnn_step, STEP_RNN, T, sfx)                                            \
	RNN_STEP_KERNEL(lstm_step, STEP_LSTM, T, sfx)                                          \
	RNN_STEP_KERNEL(gru_gates, STEP_GRU_GATES, T, sfx)                                     \
	RNN_STEP_KERNEL(gru_hidden, STEP_GRU_HIDDEN, T, sfx)

RNN_KERNELS(float, f32)
RNN_KERNELS(f16, f16)
RNN_KERNELS(bf16, bf16)
